package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"time"

	"golang.org/x/net/http/httpguts"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/mcp"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
	"github.com/agentsfleet/agentsfleet/shared/web/fence"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// maxMCPBody caps each response body an MCP server sends (a tool list or
// a tool's result, before its text is cut at the web tools' 1 MiB): past
// it the request fails rather than fill the function's memory.
const maxMCPBody = 8 << 20

// mcpOp returns the operation of an MCP Request.Tool (wire.ToolMCPList,
// wire.ToolMCPCall), run by Service.Call like a web tool: within the
// call's invocation, its output screened.
func (s *Service) mcpOp(name string) (func(context.Context, json.RawMessage) (tool.Result, error), bool) {
	switch name {
	case wire.ToolMCPList:
		return s.mcpList, true
	case wire.ToolMCPCall:
		return s.mcpCall, true
	}
	return nil, false
}

// mcpList answers the JSON array of the server's tools.
func (s *Service) mcpList(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a wire.MCPListArgs
	if err := json.Unmarshal(raw, &a); err != nil || a.Server == "" {
		return tool.Errorf(`%s: the arguments must be {"server": "NAME"}`, wire.ToolMCPList), nil
	}
	inv := invocationFrom(ctx)
	if inv.Checked && !fleet.AllowsMCPServer(inv.Tools, a.Server) {
		return tool.Errorf("MCP server %s: refused: the agent holds none of its tools", a.Server), nil
	}
	hc, srv, refused := s.mcpClient(ctx, inv, a.Server)
	if refused != nil {
		return *refused, nil
	}
	ctx, cancel := context.WithTimeout(ctx, inv.timeout(s.net.timeout))
	defer cancel()
	tools, err := mcp.List(ctx, hc, srv.URL)
	if err != nil {
		return tool.Errorf("MCP server %s did not list its tools: %s", a.Server, s.mcpReason(ctx, inv, err)), nil
	}
	out := make([]wire.MCPTool, len(tools))
	for i, t := range tools {
		out[i] = wire.MCPTool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	b, err := json.Marshal(out)
	if err != nil {
		return tool.Result{}, fmt.Errorf("encode the tools of MCP server %s: %w", a.Server, err)
	}
	s.net.log.Info("mcp list", "run_id", inv.RunID, "server", a.Server, "host", srv.host, "tools", len(out))
	return tool.Text(string(b)), nil
}

// mcpCall calls one tool and answers its text, fenced as untrusted.
func (s *Service) mcpCall(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	var a wire.MCPCallArgs
	if err := json.Unmarshal(raw, &a); err != nil || a.Server == "" || a.Tool == "" {
		return tool.Errorf(`%s: the arguments must be {"server": "NAME", "tool": "NAME", "arguments": {…}}`, wire.ToolMCPCall), nil
	}
	name := fleet.MCPToolName(a.Server, a.Tool)
	recorderFrom(ctx).setTool(name)
	inv := invocationFrom(ctx)
	if inv.Checked && !fleet.AllowsMCPTool(inv.Tools, a.Server, a.Tool) {
		return tool.Errorf("%s: refused: the agent does not hold this tool", name), nil
	}
	if len(a.Arguments) > 0 {
		var obj map[string]json.RawMessage
		if json.Unmarshal(a.Arguments, &obj) != nil {
			return tool.Errorf("%s: the arguments must be a JSON object", name), nil
		}
	}
	hc, srv, refused := s.mcpClient(ctx, inv, a.Server)
	if refused != nil {
		return *refused, nil
	}
	ctx, cancel := context.WithTimeout(ctx, inv.timeout(s.net.timeout))
	defer cancel()
	res, err := mcp.Call(ctx, hc, srv.URL, a.Tool, a.Arguments)
	if errors.Is(err, mcp.ErrUnknownTool) {
		return tool.Errorf("%s%s: MCP server %s has no tool %q (any more)", wire.MCPUnknownTool, name, a.Server, a.Tool), nil
	}
	if err != nil {
		return tool.Errorf("%s: %s", name, s.mcpReason(ctx, inv, err)), nil
	}
	if err := inv.Secrets.LoadAll(ctx); err != nil {
		return tool.Result{}, fmt.Errorf("the fleet's secrets, to screen the result of %s: %w", name, err)
	}
	text := res.Text
	if len(text) > maxRespBytes {
		text = text[:inv.Secrets.SafeCut([]byte(text), maxRespBytes)] + "\n[result cut at " + respCap + ": it was longer]"
	}
	if text == "" {
		text = "[the tool answered no content]"
	}
	s.net.log.Info("mcp call", "run_id", inv.RunID, "server", a.Server, "tool", a.Tool, "host", srv.host, "secrets", srv.filled, "is_error", res.IsError, "bytes", len(res.Text))
	return tool.Result{Output: fence.Wrap(srv.source(a.Tool), text), IsError: res.IsError}, nil
}

// mcpServer is a server as one call reaches it.
type mcpServer struct {
	URL    string
	u      *url.URL
	host   string
	filled []string    // the names of the secrets its headers carry
	header http.Header // with the secrets filled
}

// source names the server and tool in the fence: the URL, without user
// information, and the tool.
func (m *mcpServer) source(tool string) string { return fence.URL(m.u) + " (MCP tool " + tool + ")" }

// mcpClient checks the server named server against the invocation —
// declared, its URL's host on the network host list — before reading any
// secret, then fills its headers and returns the client to reach it. A
// refusal is the Result to answer: nothing was sent and nothing was read.
func (s *Service) mcpClient(ctx context.Context, inv *invocation, server string) (*http.Client, *mcpServer, *tool.Result) {
	refuse := func(format string, a ...any) (*http.Client, *mcpServer, *tool.Result) {
		res := tool.Errorf("MCP server %s: %s", server, fmt.Sprintf(format, a...))
		return nil, nil, &res
	}
	i := slices.IndexFunc(inv.MCP, func(m fleet.MCPServer) bool { return m.Name == server })
	if i < 0 {
		return refuse("the fleet declares no such server")
	}
	decl := inv.MCP[i]
	u, err := url.Parse(decl.URL)
	if err != nil || !u.IsAbs() {
		return refuse("its url is not an absolute URL")
	}
	r := route{tool: "MCP server " + server, listed: true, hosts: inv.Hosts, maxRedirects: maxRedirects, rec: recorderFrom(ctx)}
	if err := r.check(ctx, http.MethodPost, u); err != nil {
		s.net.log.Warn("mcp request refused", "run_id", inv.RunID, "server", server, "host", u.Hostname(), "reason", err.Error())
		return refuse("%v. Nothing was sent and no secret was read: the server's headers are filled only for a host on the fleet's network host list", err)
	}
	srv := &mcpServer{URL: decl.URL, u: u, host: u.Hostname(), header: http.Header{}}
	for _, k := range slices.Sorted(maps.Keys(decl.Headers)) {
		if !httpguts.ValidHeaderFieldName(k) {
			return refuse("%q is not a valid header name", k)
		}
		if _, err := inv.Secrets.Check(decl.Headers[k]); err != nil {
			return refuse("header %s: %v. Nothing was sent", k, err)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(decl.Headers)) {
		v, names, err := inv.Secrets.Fill(ctx, decl.Headers[k], nil)
		if err != nil {
			res := tool.Errorf("MCP server %s: header %s: %v", server, k, err)
			return nil, nil, &res
		}
		if !httpguts.ValidHeaderFieldValue(v) {
			return refuse("the value of header %s is not valid in a header (after filling secrets). Nothing was sent", k)
		}
		srv.header.Set(k, v)
		for _, n := range names {
			if !slices.Contains(srv.filled, n) {
				srv.filled = append(srv.filled, n)
			}
		}
	}
	var stopped *url.URL
	hc := &http.Client{
		Transport:     &mcpTransport{base: s.net.listed, route: r, srv: srv},
		CheckRedirect: r.checkRedirect(&stopped),
		// The SDK sends a session's requests under a context of its own,
		// which a failed connect does not always cancel: this bounds each
		// request by the call's time, so none outlives it.
		Timeout: inv.timeout(s.net.timeout),
	}
	return hc, srv, nil
}

// mcpTransport is the MCP client's way out. On every request (each POST
// and DELETE of the session, and every redirect hop, which the client
// sends through it again) it checks the URL against the fleet's host list,
// and adds the server's headers, secrets filled, only when the request goes
// to the server's own scheme, host and port: a request anywhere else never
// carries them. Below it, the egress dialer applies the address policy to
// every connection.
type mcpTransport struct {
	base  http.RoundTripper
	route route
	srv   *mcpServer
}

func (t *mcpTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if err := t.route.check(r.Context(), r.Method, r.URL); err != nil {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, err
	}
	// The SDK's context carries neither the call's recorder nor the
	// names of the secrets its headers hold: the clone does.
	ctx := r.Context()
	if t.route.rec != nil {
		ctx = withRecorder(ctx, t.route.rec)
	}
	r = r.Clone(ctx)
	if r.URL.Scheme == t.srv.u.Scheme && r.URL.Host == t.srv.u.Host {
		for k, v := range t.srv.header {
			r.Header[k] = v
		}
		r = r.WithContext(withSecretNames(r.Context(), t.srv.filled))
	}
	resp, err := t.base.RoundTrip(r)
	if err != nil {
		return nil, err
	}
	resp.Body = &cappedBody{rc: resp.Body, left: maxMCPBody}
	return resp, nil
}

// cappedBody fails a read past its cap instead of handing on a body
// without end.
type cappedBody struct {
	rc   io.ReadCloser
	left int64
}

func (c *cappedBody) Read(p []byte) (int, error) {
	if c.left <= 0 {
		return 0, fmt.Errorf("the server's response is larger than %d MiB", maxMCPBody>>20)
	}
	if int64(len(p)) > c.left {
		p = p[:c.left]
	}
	n, err := c.rc.Read(p)
	c.left -= int64(n)
	return n, err
}

func (c *cappedBody) Close() error { return c.rc.Close() }

// mcpReason says why an MCP request failed, for the model: a timeout as
// the time it waited, a refusal of the egress policy as its reason, other
// failures as the SDK reports them (screened of the values this call
// filled, since an error may quote a request).
func (s *Service) mcpReason(ctx context.Context, inv *invocation, err error) string {
	var re *egress.RefusedError
	switch {
	case errors.As(err, &re):
		return re.Error()
	case ctx.Err() != nil && errors.Is(ctx.Err(), context.DeadlineExceeded):
		d := inv.timeout(s.net.timeout)
		why := "the fleet's tool timeout"
		if d == MaxMCPTimeout {
			why = "the most one MCP request may take"
		}
		return fmt.Sprintf("the server did not answer within %s (%s)", d, why)
	}
	return inv.Secrets.RedactLoaded(err.Error())
}

// MaxMCPTimeout caps an MCP request whatever the fleet's tool timeout:
// below the webtools function's own 60 s (infra/stack), so that a server
// that hangs is answered with this package's clear error rather than the
// function being cut off.
const MaxMCPTimeout = 50 * time.Second

// timeout is what bounds one MCP request: the fleet's tool timeout when
// the invocation has one, else the Service's; at most MaxMCPTimeout.
func (inv *invocation) timeout(def time.Duration) time.Duration {
	if inv.Timeout > 0 {
		def = inv.Timeout
	}
	return min(def, MaxMCPTimeout)
}

// mcpServers turns a Request's servers (a Service without Grants) into
// the Definition's form.
func mcpServers(in []wire.MCPServer) []fleet.MCPServer {
	out := make([]fleet.MCPServer, len(in))
	for i, m := range in {
		out[i] = fleet.MCPServer{Name: m.Name, URL: m.URL, Headers: m.Headers}
	}
	return out
}
