package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/model"
)

// runsList is runs_list {limit?}: the fleet's latest runs, newest first.
type runsList struct{}

func (runsList) spec() model.Tool {
	return model.Tool{Name: "runs_list", Schema: schema(`{"type": "object", "properties": {"limit": {"type": "integer", "minimum": 1, "maximum": 50, "description": "how many runs, 10 by default"}}, "additionalProperties": false}`),
		Description: "List the fleet's latest runs, newest first: run id, status, source, the revision it ran, when it started. Read one with run_get."}
}

func (runsList) call(ctx context.Context, t *turn, args json.RawMessage) (string, bool, error) {
	var a struct {
		Limit *int `json:"limit"`
	}
	if msg := decodeArgs(args, &a); msg != "" {
		return msg, true, nil
	}
	limit := 10
	if a.Limit != nil {
		if *a.Limit < 1 || *a.Limit > 50 {
			return fmt.Sprintf("limit must be from 1 to 50, not %d", *a.Limit), true, nil
		}
		limit = *a.Limit
	}
	page, err := t.st.ListRuns(ctx, t.imp.Fleet, "", limit)
	if err != nil {
		return "", false, err
	}
	if len(page.Runs) == 0 {
		return "the fleet has no runs yet", false, nil
	}
	var b strings.Builder
	for _, r := range page.Runs {
		fmt.Fprintf(&b, "%s  %s  from %s  revision %d  %s\n", r.ID, r.Status, r.Source, r.Revision, r.CreatedAt.UTC().Format(time.RFC3339))
	}
	return b.String(), false, nil
}
