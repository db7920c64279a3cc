package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// revisionsList is revisions_list {}: the fleet's latest revisions, newest
// first, with who made each, from where, when, and the chat it came from.
type revisionsList struct{}

func (revisionsList) spec() model.Tool {
	return model.Tool{Name: "revisions_list", Schema: schema(`{"type": "object", "properties": {}, "additionalProperties": false}`),
		Description: "List the fleet's latest 20 revisions, newest first: number, when, who made it and from where, and the improvement chat or revision it came from."}
}

func (revisionsList) call(ctx context.Context, t *turn, args json.RawMessage) (string, bool, error) {
	var none struct{}
	if msg := decodeArgs(args, &none); msg != "" {
		return msg, true, nil
	}
	page, err := t.st.ListRevisions(ctx, t.imp.Fleet, "", 20)
	if err != nil {
		return "", false, err
	}
	var b strings.Builder
	for _, r := range page.Revisions {
		fmt.Fprintf(&b, "revision %d  %s  by %s via %s", r.Number, r.CreatedAt.UTC().Format(time.RFC3339), orDash(r.Origin.By), orDash(r.Origin.Via))
		if r.Origin.Improvement != "" {
			fmt.Fprintf(&b, "  from chat %s", r.Origin.Improvement)
		}
		if r.Origin.Restored != 0 {
			fmt.Fprintf(&b, "  restoring revision %d", r.Origin.Restored)
		}
		b.WriteByte('\n')
	}
	return b.String(), false, nil
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
