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
	set := secret.NewSet(s.net.secrets, req.Secrets)
	out, err := set.Redact(ctx, *a.Text)
	if err != nil {
		// An answer, not a failure of the function: the caller says that
		// the text cannot be screened (and does not keep or post it). The
		// message names the secret, never a value.
		return tool.Errorf("scrub for fleet %s: %v", req.Fleet, err), nil
	}
	return tool.Text(out), nil
}
