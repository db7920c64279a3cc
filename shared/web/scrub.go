package web

import (
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// scrub runs a ToolScrub request: one text, or a batch of them.
func (s *Service) scrub(ctx context.Context, req wire.Request) (tool.Result, error) {
	var a struct {
		Text  *string   `json:"text"`
		Texts *[]string `json:"texts"`
	}
	if err := json.Unmarshal(req.Arguments, &a); err != nil || (a.Text == nil) == (a.Texts == nil) {
		return tool.Errorf(`scrub: the arguments must be {"text": "…"} or {"texts": ["…", …]}`), nil
	}
	ids, err := s.scrubSecrets(ctx, req)
	if err != nil {
		return tool.Errorf("scrub for fleet %s: %v", req.Fleet, err), nil
	}
	set := secret.NewSet(s.net.secrets, ids)
	if a.Text != nil {
		out, err := set.Redact(ctx, *a.Text)
		if err != nil {
			// An answer, not a failure of the function: the caller says
			// that the text cannot be screened (and does not keep or post
			// it). The message names the secret, never a value.
			return tool.Errorf("scrub for fleet %s: %v", req.Fleet, err), nil
		}
		return tool.Text(out), nil
	}
	// A batch: the secrets are read once (the Set keeps them), each text
	// screened on its own, so that no value is matched across two texts.
	outs := make([]string, len(*a.Texts))
	for i, text := range *a.Texts {
		if outs[i], err = set.Redact(ctx, text); err != nil {
			return tool.Errorf("scrub for fleet %s: %v", req.Fleet, err), nil
		}
	}
	b, err := json.Marshal(outs)
	if err != nil {
		return tool.Result{}, err
	}
	return tool.Text(string(b)), nil
}

// scrubSecrets is what a scrub request screens for: with Grants, the
// secrets of its run's pinned Definition, or of its fleet's current one for
// a request of no run (a schedule's message), never ids the caller names.
// A scrub only ever replaces values, so a forged request learns no value;
// taking the ids from the store keeps it from testing guesses against
// secrets the fleet does not declare.
func (s *Service) scrubSecrets(ctx context.Context, req wire.Request) (map[string]string, error) {
	switch {
	case s.grants == nil:
		return req.Secrets, nil
	case req.RunID != "":
		g, err := s.grants.Grant(ctx, req.RunID, "")
		return g.Secrets, err
	default:
		return s.grants.FleetSecrets(ctx, req.Fleet)
	}
}
