package web

import (
	"context"
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// ToolScrub is the one Request.Tool that is not a model's tool: it sends
// nothing anywhere. Given the fleet's Secrets and {"text": "…"} as
// Arguments, it answers the text with every value of those secrets (and the
// encodings secret.Set.Redact lists) replaced by «secret:NAME». The
// schedules use it: a schedule's message is scrubbed before it is saved,
// because only this function reads secret values.
//
//	{"tool": "scrub", "arguments": {"text": "call with sk-123"},
//	 "secrets": {"API_KEY": "agentsfleet/acme/api-key"}, "fleet": "acme"}
//	→ {"output": "call with «secret:API_KEY»", "is_error": false}
//
// Arguments that are not {"text": string} get an error Result. When a
// secret cannot be read the call is a Go error and no text comes back: the
// caller must not save text that could not be screened.
const ToolScrub = "scrub"

// ScrubArgs are ToolScrub's arguments.
type ScrubArgs struct {
	Text string `json:"text"`
}

// ScrubRequest is the Request scrubbing text of a fleet whose secrets map
// names to Secrets Manager ids.
func ScrubRequest(fleet string, secrets map[string]string, text string) Request {
	args, _ := json.Marshal(ScrubArgs{Text: text}) // a string: cannot fail
	return Request{Tool: ToolScrub, Arguments: args, Secrets: secrets, Fleet: fleet}
}

// scrub runs a ToolScrub request.
func (s *Service) scrub(ctx context.Context, req Request) (tool.Result, error) {
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
