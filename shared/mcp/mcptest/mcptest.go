// Package mcptest is a real MCP server for tests, built with the same SDK
// as the client (github.com/modelcontextprotocol/go-sdk) and served over
// streamable HTTP: tools that echo, fail, hand back the credentials they
// were sent (to test the screen), and a handler that never answers.
package mcptest

import (
	"context"
	"io"
	"net/http"
	"slices"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is an MCP server with the tools below. It records the headers of
// every HTTP request it receives. It is safe for concurrent use.
//
//   - echo {text}: answers the text.
//   - fail {}: answers a tool error (isError) "the tool failed on purpose".
//   - whoami {}: answers the Authorization header it was sent, so a test
//     can show that the value never reaches the model.
//   - mixed {}: answers a text part, an image and a resource link.
type Server struct {
	*sdk.Server
	mu      sync.Mutex
	headers []http.Header
}

// EchoArgs are echo's arguments.
type EchoArgs struct {
	Text string `json:"text" jsonschema:"the text to echo"`
}

// New returns a Server with its tools.
func New() *Server {
	s := &Server{Server: sdk.NewServer(&sdk.Implementation{Name: "mcptest", Version: "1"}, nil)}
	s.AddEcho()
	sdk.AddTool(s.Server, &sdk.Tool{Name: "fail", Description: "Always fails."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{IsError: true, Content: []sdk.Content{&sdk.TextContent{Text: "the tool failed on purpose"}}}, nil, nil
		})
	sdk.AddTool(s.Server, &sdk.Tool{Name: "whoami", Description: "Tells the credentials it was sent."},
		func(_ context.Context, req *sdk.CallToolRequest, _ struct{}) (*sdk.CallToolResult, any, error) {
			auth := ""
			if req.Extra != nil && req.Extra.Header != nil {
				auth = req.Extra.Header.Get("Authorization")
			}
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: "you sent: " + auth}}}, nil, nil
		})
	sdk.AddTool(s.Server, &sdk.Tool{Name: "mixed", Description: "Answers several kinds of content."},
		func(context.Context, *sdk.CallToolRequest, struct{}) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{
				&sdk.TextContent{Text: "a chart follows"},
				&sdk.ImageContent{Data: []byte("\x89PNG fake"), MIMEType: "image/png"},
				&sdk.ResourceLink{URI: "https://example.com/report", Name: "report"},
			}}, nil, nil
		})
	return s
}

// AddEcho adds (or adds back) the echo tool.
func (s *Server) AddEcho() {
	sdk.AddTool(s.Server, &sdk.Tool{Name: "echo", Description: "Echoes the text."},
		func(_ context.Context, _ *sdk.CallToolRequest, in EchoArgs) (*sdk.CallToolResult, any, error) {
			return &sdk.CallToolResult{Content: []sdk.Content{&sdk.TextContent{Text: in.Text}}}, nil, nil
		})
}

// Handler serves the server over streamable HTTP, recording each request's
// headers.
func (s *Server) Handler() http.Handler {
	// Tests reach the server under names (api.example.com) that resolve to
	// loopback, which the SDK's DNS-rebinding guard would refuse.
	h := sdk.NewStreamableHTTPHandler(func(*http.Request) *sdk.Server { return s.Server },
		&sdk.StreamableHTTPOptions{DisableLocalhostProtection: true})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.headers = append(s.headers, r.Header.Clone())
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

// Authorizations returns the Authorization header of every request
// received, in order ("" for a request without one).
func (s *Server) Authorizations() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]string, len(s.headers))
	for i, h := range s.headers {
		out[i] = h.Get("Authorization")
	}
	return out
}

// Requests is how many requests the server received.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.headers)
}

// Received reports whether any request carried the Authorization value v.
func (s *Server) Received(v string) bool { return slices.Contains(s.Authorizations(), v) }

// Hanging is a handler that never answers: it holds every request until
// its client goes away.
func Hanging() http.Handler {
	return http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		// Read the body first: only then does the server watch the
		// connection and cancel the request when the client goes.
		_, _ = io.Copy(io.Discard, r.Body)
		<-r.Context().Done()
	})
}
