package mcp

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Tool is one tool a server lists: its name on the server (not the model's
// mcp__<server>__<tool>), description and input schema as the server gave
// them.
type Tool struct {
	Name        string          `json:"name"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"input_schema"`
}

// Result is what a tool call answered: its content as text, and whether
// the server flagged it as a tool error (isError).
type Result struct {
	Text    string
	IsError bool
}

// MaxTools is the most tools List reads from one server; a server listing
// more is refused rather than cut, so that no tool is silently missing.
const MaxTools = 256

// ErrUnknownTool is what Call returns when the server does not have the
// tool (it answered JSON-RPC invalid params naming it): its list changed.
var ErrUnknownTool = errors.New("the server has no such tool")

// clientInfo is how agentsfleet introduces itself in initialize.
var clientInfo = &sdk.Implementation{Name: "agentsfleet", Version: "1"}

// NewClient is the SDK client agentsfleet connects with, over any
// transport.
func NewClient() *sdk.Client { return sdk.NewClient(clientInfo, nil) }

// connect opens a session to endpoint through hc. The standalone SSE
// stream (server-initiated messages) is not opened: a session lasts one
// request, and a changed tool list is noticed by the caller on its next
// List or on a call to a tool that is gone. Retries are off so that a
// server that does not answer fails once, within ctx.
func connect(ctx context.Context, hc *http.Client, endpoint string) (*sdk.ClientSession, error) {
	t := &sdk.StreamableClientTransport{Endpoint: endpoint, HTTPClient: hc, MaxRetries: -1, DisableStandaloneSSE: true}
	cs, err := NewClient().Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	return cs, nil
}

// List returns every tool the server at endpoint lists, following its
// pages, within ctx. A server listing more than MaxTools is an error.
func List(ctx context.Context, hc *http.Client, endpoint string) ([]Tool, error) {
	cs, err := connect(ctx, hc, endpoint)
	if err != nil {
		return nil, err
	}
	defer cs.Close()
	return ListSession(ctx, cs)
}

// ListSession returns every tool the server of the open session cs lists,
// following its pages, within ctx: List over any transport (sandboxd's
// stdio servers use it).
func ListSession(ctx context.Context, cs *sdk.ClientSession) ([]Tool, error) {
	var out []Tool
	for t, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list tools: %w", err)
		}
		if len(out) == MaxTools {
			return nil, fmt.Errorf("list tools: the server lists more than %d tools", MaxTools)
		}
		schema, err := json.Marshal(t.InputSchema)
		if err != nil {
			return nil, fmt.Errorf("list tools: tool %q: input schema: %w", t.Name, err)
		}
		out = append(out, Tool{Name: t.Name, Description: t.Description, InputSchema: schema})
	}
	return out, nil
}

// Call calls tool on the server at endpoint with args (a JSON object, or
// empty for none), within ctx. A tool the server does not have is
// ErrUnknownTool; a tool that failed is a Result with IsError set.
func Call(ctx context.Context, hc *http.Client, endpoint, tool string, args json.RawMessage) (Result, error) {
	cs, err := connect(ctx, hc, endpoint)
	if err != nil {
		return Result{}, err
	}
	defer cs.Close()
	return CallSession(ctx, cs, tool, args)
}

// CallSession calls tool on the server of the open session cs: Call over
// any transport.
func CallSession(ctx context.Context, cs *sdk.ClientSession, tool string, args json.RawMessage) (Result, error) {
	var arguments any = map[string]any{}
	if len(args) > 0 {
		arguments = args
	}
	res, err := cs.CallTool(ctx, &sdk.CallToolParams{Name: tool, Arguments: arguments})
	if err != nil {
		var we *jsonrpc.Error
		if errors.As(err, &we) && we.Code == jsonrpc.CodeInvalidParams && strings.Contains(we.Message, "unknown tool") {
			return Result{}, fmt.Errorf("call %s: %w", tool, ErrUnknownTool)
		}
		return Result{}, fmt.Errorf("call %s: %w", tool, err)
	}
	return Result{Text: Text(res), IsError: res.IsError}, nil
}

// Text is a tool result's content as text for the model: text parts as
// they are, joined by blank lines; every other kind said in a line of its
// own (an image, audio, a resource), never dropped silently. A result with
// no content but structured content gives that content's JSON.
func Text(res *sdk.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		switch c := c.(type) {
		case *sdk.TextContent:
			parts = append(parts, c.Text)
		case *sdk.ImageContent:
			parts = append(parts, fmt.Sprintf("[image content: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.AudioContent:
			parts = append(parts, fmt.Sprintf("[audio content: %s, %d bytes, not shown]", orUnknown(c.MIMEType), len(c.Data)))
		case *sdk.ResourceLink:
			parts = append(parts, fmt.Sprintf("[resource link: %s %s]", c.URI, c.Name))
		case *sdk.EmbeddedResource:
			parts = append(parts, embedded(c.Resource))
		default:
			parts = append(parts, fmt.Sprintf("[content of kind %T, not shown]", c))
		}
	}
	if len(parts) == 0 && res.StructuredContent != nil {
		if b, err := json.Marshal(res.StructuredContent); err == nil {
			return string(b)
		}
	}
	return strings.Join(parts, "\n\n")
}

func embedded(r *sdk.ResourceContents) string {
	switch {
	case r == nil:
		return "[embedded resource: empty]"
	case r.Text != "":
		return fmt.Sprintf("[embedded resource %s]\n%s", r.URI, r.Text)
	case len(r.Blob) > 0:
		return fmt.Sprintf("[embedded resource %s: %s, %d bytes of binary data, not shown]", r.URI, orUnknown(r.MIMEType), len(r.Blob))
	}
	return fmt.Sprintf("[embedded resource %s: empty]", r.URI)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
