package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/diff"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/improve"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// proposeDefinition is propose_definition {definition, summary}: a new
// Definition, validated as PUT validates one, becomes the chat's proposal
// against the current revision. An invalid one is an error result naming
// each problem; nothing is applied.
type proposeDefinition struct{}

// maxSummary bounds a proposal's summary.
const maxSummary = 2000

func (proposeDefinition) spec() model.Tool {
	return model.Tool{Name: "propose_definition", Schema: schema(`{"type": "object", "properties": {
  "definition": {"type": "string", "description": "the whole new Definition, as TOML"},
  "summary": {"type": "string", "description": "what changes and why, in a sentence or two"}},
 "required": ["definition", "summary"], "additionalProperties": false}`),
		Description: "Propose a new revision of the fleet: the whole Definition as TOML and a summary. It is checked as an applied Definition is; a person reviews the diff against the current revision and applies it or not. Proposing again replaces the proposal."}
}

func (proposeDefinition) call(ctx context.Context, t *turn, args json.RawMessage) (string, bool, error) {
	var a struct {
		Definition string `json:"definition"`
		Summary    string `json:"summary"`
	}
	if msg := decodeArgs(args, &a); msg != "" {
		return msg, true, nil
	}
	switch {
	case strings.TrimSpace(a.Summary) == "":
		return "summary is required: say what changes and why", true, nil
	case len(a.Summary) > maxSummary:
		return fmt.Sprintf("the summary is %d bytes; keep it under %d", len(a.Summary), maxSummary), true, nil
	}
	def, err := fleet.Parse([]byte(a.Definition), fleet.TOML)
	if err != nil {
		return "the Definition is not valid, nothing was proposed: " + err.Error(), true, nil
	}
	if def.Name != t.imp.Fleet {
		return fmt.Sprintf("the Definition is named %q; it must keep the fleet's name %q", def.Name, t.imp.Fleet), true, nil
	}
	cur, err := t.st.CurrentRevision(ctx, t.imp.Fleet)
	if err != nil {
		return "", false, err
	}
	if cur.Hash == def.Hash() {
		return fmt.Sprintf("the Definition is the one revision %d already has: it changes nothing", cur.Number), true, nil
	}
	curDef, err := fleet.ParseJSON(cur.Definition)
	if err != nil {
		return "", false, fmt.Errorf("revision %d of %s cannot be read: %w", cur.Number, t.imp.Fleet, err)
	}
	proposed := string(def.TOML())
	t.proposal = &store.Proposal{From: cur.Number, Definition: proposed, Hash: def.Hash(), Canonical: def.Canonical(),
		Summary: a.Summary, Diff: diff.Unified(fmt.Sprintf("revision %d", cur.Number), "proposal", string(curDef.TOML()), proposed)}
	return fmt.Sprintf("proposed against revision %d; applying it needs the scopes %s. The person sees this diff:\n%s",
		cur.Number, strings.Join(improve.NeededScopes(t.proposal.Canonical), ", "), t.proposal.Diff), false, nil
}
