package web

import (
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// scrub runs a ToolScrub request.
func (s *Service) scrub(ctx context.Context, req wire.Request) (tool.Result, error) {
	var a struct {
		Text *string `json:"text"`
	}
	if err := json.Unmarshal(req.Arguments, &a); err != nil || a.Text == nil {
		return tool.Errorf(`scrub: the arguments must be {"text": "…"}`), nil
	}
	ids, err := s.scrubSecrets(ctx, req)
	if err != nil {
		return tool.Errorf("scrub for fleet %s: %v", req.Fleet, err), nil
	}
	set := secret.NewSet(s.net.secrets, ids)
	out, err := set.Redact(ctx, *a.Text)
	if err != nil {
		// An answer, not a failure of the function: the caller says that
		// the text cannot be screened (and does not keep or post it). The
		// message names the secret, never a value.
		return tool.Errorf("scrub for fleet %s: %v", req.Fleet, err), nil
	}
	return tool.Text(out), nil
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
