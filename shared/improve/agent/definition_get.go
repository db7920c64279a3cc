package agent

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/model"
)

// definitionGet is definition_get {}: the fleet's current Definition as
// TOML, with its revision number.
type definitionGet struct{}

func (definitionGet) spec() model.Tool {
	return model.Tool{Name: "definition_get", Schema: schema(`{"type": "object", "properties": {}, "additionalProperties": false}`),
		Description: "Read the fleet's current Definition, as TOML, and its revision number. A proposal is made against this revision."}
}

func (definitionGet) call(ctx context.Context, t *turn, args json.RawMessage) (string, bool, error) {
	var none struct{}
	if msg := decodeArgs(args, &none); msg != "" {
		return msg, true, nil
	}
	rev, err := t.st.CurrentRevision(ctx, t.imp.Fleet)
	if err != nil {
		return "", false, err
	}
	def, err := fleet.ParseJSON(rev.Definition)
	if err != nil {
		return "", false, fmt.Errorf("revision %d of %s cannot be read: %w", rev.Number, t.imp.Fleet, err)
	}
	return fmt.Sprintf("revision %d of fleet %s:\n%s", rev.Number, t.imp.Fleet, def.TOML()), false, nil
}
