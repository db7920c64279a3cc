package client

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

const (
	// CallMargin is what a call may take beyond the tool timeout: sandboxd
	// stops the tool at the tool timeout, then kills its processes, writes
	// the answer and sends it, perhaps over a new TLS connection.
	CallMargin = 10 * time.Second
	// DefaultCallTimeout is Config.CallTimeout when zero: the default tool
	// timeout plus CallMargin (2m10s). A call that takes longer means that
	// the sandbox is gone or stuck, not that the tool is slow.
	DefaultCallTimeout = wire.DefaultToolTimeout + CallMargin
	// DefaultHealthTimeout is Config.HealthTimeout when zero.
	DefaultHealthTimeout = 5 * time.Second
)

// CallTimeoutFor is the call timeout for a fleet whose tool timeout
// (tool_timeout_seconds, sandboxd --timeout) is toolTimeout: toolTimeout
// plus CallMargin, or DefaultCallTimeout when toolTimeout is zero.
func CallTimeoutFor(toolTimeout time.Duration) time.Duration {
	if toolTimeout <= 0 {
		return DefaultCallTimeout
	}
	return toolTimeout + CallMargin
}

// toolTimeoutKey is the context key of WithToolTimeout.
type toolTimeoutKey struct{}

// WithToolTimeout returns ctx saying that the calls made with it have the
// fleet's tool timeout d (the Definition's tool_timeout_seconds): Call
// sends it in wire.ToolTimeoutHeader, in whole seconds rounded up, and
// sandboxd applies it to that call over its own (sandboxd --timeout),
// which a pooled sandbox started before it knew the fleet cannot have.
// Call is then bounded by CallTimeoutFor(d) rather than
// Config.CallTimeout. d of zero or less sends none: the call has
// sandboxd's own timeout. A d above wire.MaxToolTimeout is refused by
// Call with ErrBadRequest before anything is sent.
func WithToolTimeout(ctx context.Context, d time.Duration) context.Context {
	return context.WithValue(ctx, toolTimeoutKey{}, d)
}

// toolTimeoutFrom is the tool timeout WithToolTimeout put in ctx, or 0.
func toolTimeoutFrom(ctx context.Context) time.Duration {
	d, _ := ctx.Value(toolTimeoutKey{}).(time.Duration)
	return d
}

// Config configures a Client.
type Config struct {
	// URL is sandboxd's address, scheme://host:port with no path: https in
	// AWS, http on loopback (see PlainHTTP).
	URL string
	// Token is the sandbox's bearer token (wire.CheckToken: at least
	// wire.MinTokenLength visible ASCII characters).
	Token string
	// Transport sends the requests. It is where TLS with a pinned key
	// goes: pin.Transport(Token) accepts only a sandboxd serving with the
	// key derived from Token (sandboxd serve --tls-from-token) rather than
	// what the system roots vouch for; Pinned sets it. Nil means a
	// transport that uses no proxy (a proxy would see the token) and
	// verifies https against the system roots.
	Transport http.RoundTripper
	// CallTimeout bounds one Call, from sending the request to the last
	// byte of the answer, when the call carries no tool timeout of its own
	// (WithToolTimeout; one that does is bounded by CallTimeoutFor it).
	// Zero means DefaultCallTimeout; a fleet with its own tool timeout
	// wants CallTimeoutFor(that timeout). sandboxd stops the tool at the
	// tool timeout itself, so the margin only has to cover the answer's
	// way back.
	CallTimeout time.Duration
	// HealthTimeout bounds one Health. Zero means DefaultHealthTimeout.
	HealthTimeout time.Duration
	// PlainHTTP allows an http URL whose host is not a loopback address.
	// The token then crosses that network in clear text: for a network
	// the caller trusts, never the internet.
	PlainHTTP bool
}

// Client calls one sandboxd. It is safe for concurrent use.
type Client struct {
	base          string // scheme://host[:port]
	auth          string // the Authorization header value
	token         string // only to scrub it from texts that echo it
	http          *http.Client
	callTimeout   time.Duration
	healthTimeout time.Duration
}

// New returns a client for the sandboxd at cfg.URL. It refuses a URL that
// is not http(s)://host[:port], a URL with credentials, a plain-http URL to
// a host that is not loopback (unless cfg.PlainHTTP), a token that
// wire.CheckToken refuses, and negative timeouts. Its errors never contain
// the token.
func New(cfg Config) (*Client, error) {
	base, err := checkURL(cfg.URL, cfg.PlainHTTP)
	if err != nil {
		return nil, fmt.Errorf("sandbox client: %s", scrub(err.Error(), cfg.Token))
	}
	if err := wire.CheckToken(cfg.Token); err != nil {
		return nil, fmt.Errorf("sandbox client for %s: %w", base, err)
	}
	if cfg.CallTimeout < 0 || cfg.HealthTimeout < 0 {
		return nil, fmt.Errorf("sandbox client for %s: a timeout cannot be negative", base)
	}
	c := &Client{
		base:          base,
		auth:          wire.Bearer(cfg.Token),
		token:         cfg.Token,
		callTimeout:   cfg.CallTimeout,
		healthTimeout: cfg.HealthTimeout,
	}
	if c.callTimeout == 0 {
		c.callTimeout = DefaultCallTimeout
	}
	if c.healthTimeout == 0 {
		c.healthTimeout = DefaultHealthTimeout
	}
	rt := cfg.Transport
	if rt == nil {
		t := http.DefaultTransport.(*http.Transport).Clone()
		t.Proxy = nil
		t.MaxIdleConnsPerHost = 16 // a run and its children call one sandbox at once
		rt = t
	}
	c.http = &http.Client{
		Transport: rt,
		// sandboxd never redirects: a redirect is someone else's answer,
		// and following it could carry the token elsewhere.
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
	return c, nil
}

// Pinned returns a client for a sandboxd that serves TLS with the key
// derived from cfg.Token (`sandboxd serve --tls-from-token`, the image's
// CMD): New(cfg) with cfg.Transport set to pin.Shared(cfg.Token), which
// accepts that key alone and refuses every other certificate, one a
// trusted CA signed included, before the token is sent. A refused sandbox
// is ErrUnavailable, and also matches pin.ErrWrongKey. It refuses what New
// refuses, a URL that is not https, and a cfg with a Transport of its own.
// The clients of one sandbox share that transport and its kept
// connections: a client made again for the sandbox, as a later invocation
// of a warm runner makes one, calls without a new TLS handshake.
func Pinned(cfg Config) (*Client, error) {
	base, err := checkURL(cfg.URL, cfg.PlainHTTP)
	if err != nil {
		return nil, fmt.Errorf("sandbox client: %s", scrub(err.Error(), cfg.Token))
	}
	if !strings.HasPrefix(base, "https://") {
		return nil, fmt.Errorf("sandbox client for %s: a pinned key needs an https URL", base)
	}
	if cfg.Transport != nil {
		return nil, fmt.Errorf("sandbox client for %s: Pinned brings its own transport; use New for another", base)
	}
	cfg.Transport = pin.Shared(cfg.Token)
	return New(cfg)
}

func checkURL(raw string, plainHTTP bool) (string, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return "", fmt.Errorf("the sandbox URL %q must be http(s)://host:port", raw)
	}
	if u.User != nil {
		return "", fmt.Errorf("the sandbox URL must not carry credentials; the token goes in Config.Token")
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Opaque != "" {
		return "", fmt.Errorf("the sandbox URL %q must be http(s)://host:port", raw)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", fmt.Errorf("the sandbox URL %q must name sandboxd's address only, without a path or query", raw)
	}
	if u.Scheme == "http" && !plainHTTP && !loopback(u.Hostname()) {
		return "", fmt.Errorf("plain http to %s would send the token in clear text; use https (or Config.PlainHTTP on a trusted network)", u.Host)
	}
	return u.Scheme + "://" + u.Host, nil
}

func loopback(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// URL is the sandbox's address, scheme://host[:port].
func (c *Client) URL() string { return c.base }

// String names the client without its token.
func (c *Client) String() string { return "sandbox client for " + c.base }

// GoString is String, so that %#v does not print the token either.
func (c *Client) GoString() string { return c.String() }

var (
	errCallTimeout   = errors.New("the call timeout passed")
	errHealthTimeout = errors.New("the health timeout passed")
)

// Call runs the tool called name in the sandbox with args, a JSON object
// (nil or empty means {}), and returns its result: a tool.Result with
// IsError set is the tool's own error, for the model. A non-empty
// idempotencyKey is sent as the Idempotency-Key header: sandboxd then runs
// the call at most once, and calling again with the same key, tool and
// args gets the first call's result, waiting for it if it still runs.
// The key is the calling agent's: with WithAgent, ctx's agent is sent in
// wire.AgentHeader, and another agent's call with the same key runs anew.
// With WithToolTimeout, ctx's tool timeout is sent in
// wire.ToolTimeoutHeader; it is part of the call, so a retry with the same
// key must carry the same one.
//
// Call does not retry. Every error is a *Error, which matches one of the
// sentinels, or ctx's error when ctx ended first. After ErrUnavailable or
// ctx's end, a call with a key may have run and is safe to retry with that
// key; one without a key may have run or not. Arguments that are not a JSON object
// (ErrBadRequest), a key that is not 1 to wire.MaxIdempotencyKey visible
// ASCII characters (ErrBadRequest) and a name no tool can have
// (ErrUnknownTool) are refused before anything is sent, and so is a tool
// timeout above wire.MaxToolTimeout (ErrBadRequest). The call, answer
// included, is bounded by Config.CallTimeout, or by CallTimeoutFor the
// call's tool timeout when it has one; the answer by wire.MaxAnswerBytes.
func (c *Client) Call(ctx context.Context, name string, args json.RawMessage, idempotencyKey string) (tool.Result, error) {
	op := op{c: c, name: "call", tool: name}
	if !validToolName(name) {
		return tool.Result{}, op.notSent(ErrUnknownTool, fmt.Sprintf("no sandbox tool can be named %q", name))
	}
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	if !wire.IsObject(args) {
		return tool.Result{}, op.notSent(ErrBadRequest, "the arguments must be a JSON object")
	}
	if idempotencyKey != "" && !wire.ValidIdempotencyKey(idempotencyKey) {
		return tool.Result{}, op.notSent(ErrBadRequest, fmt.Sprintf("the %s must be 1 to %d visible ASCII characters",
			wire.IdempotencyHeader, wire.MaxIdempotencyKey))
	}
	agent := agentFrom(ctx)
	if agent != "" {
		if err := wire.CheckAgent(agent); err != nil {
			return tool.Result{}, op.notSent(ErrBadRequest, "WithAgent: "+err.Error())
		}
	}
	callTimeout, toolTimeout := c.callTimeout, ""
	if d := toolTimeoutFrom(ctx); d > 0 {
		v, err := wire.ToolTimeoutValue(d)
		if err != nil {
			return tool.Result{}, op.notSent(ErrBadRequest, "WithToolTimeout: "+err.Error())
		}
		// Rounding d up to whole seconds adds less than a second, which
		// CallMargin covers.
		callTimeout, toolTimeout = CallTimeoutFor(d), v
	}
	ctx, cancel := context.WithTimeoutCause(ctx, callTimeout, errCallTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.base+wire.ToolPath(name), bytes.NewReader(args))
	if err != nil {
		return tool.Result{}, op.notSent(ErrBadRequest, "the request could not be made")
	}
	req.Header.Set(wire.AuthorizationHeader, c.auth)
	req.Header.Set("Content-Type", wire.ContentType)
	req.Header.Set("Accept", wire.ContentType)
	if idempotencyKey != "" {
		req.Header.Set(wire.IdempotencyHeader, idempotencyKey)
	}
	if agent != "" {
		req.Header.Set(wire.AgentHeader, agent)
	}
	if toolTimeout != "" {
		req.Header.Set(wire.ToolTimeoutHeader, toolTimeout)
	}
	status, ctype, body, err := c.do(req)
	if err != nil {
		return tool.Result{}, op.noAnswer(ctx, status, err, callTimeout, errCallTimeout)
	}
	if status == http.StatusOK {
		var res struct {
			Output  *string      `json:"output"`
			IsError *bool        `json:"is_error"`
			Image   *tool.Image  `json:"image"`
			Egress  []run.Egress `json:"egress"`
		}
		if json.Unmarshal(body, &res) != nil || res.Output == nil || res.IsError == nil {
			return tool.Result{}, op.foreign(status, ctype, `the body is not a tool result {"output", "is_error"}`)
		}
		if why := checkImage(res.Image); why != "" {
			return tool.Result{}, op.foreign(status, ctype, why)
		}
		return tool.Result{Output: *res.Output, IsError: *res.IsError, Image: res.Image, Egress: res.Egress}, nil
	}
	kind := statusKinds[status]
	var eb struct {
		Error *string `json:"error"`
	}
	if kind == nil || json.Unmarshal(body, &eb) != nil || eb.Error == nil {
		return tool.Result{}, op.foreign(status, ctype, "")
	}
	return tool.Result{}, op.refused(kind, status, *eb.Error)
}

// checkImage says what is wrong with a tool result's image (screenshot's),
// or "" when it is absent or one sandboxd sends: a PNG with data and a
// size. The model is shown it as is, so nothing else passes.
func checkImage(img *tool.Image) string {
	switch {
	case img == nil:
		return ""
	case img.MediaType != tool.ImagePNG:
		return fmt.Sprintf("the result's image is %.40q, not %s", img.MediaType, tool.ImagePNG)
	case len(img.Data) == 0:
		return "the result's image has no data"
	case img.Width <= 0 || img.Height <= 0:
		return fmt.Sprintf("the result's image is %d×%d pixels", img.Width, img.Height)
	}
	return ""
}

// Health returns nil when the sandbox answers GET /healthz as sandboxd
// does, within Config.HealthTimeout; otherwise a *Error matching
// ErrUnavailable, or matching ctx's error when ctx ended first. It sends no
// token: the health check needs none.
func (c *Client) Health(ctx context.Context) error {
	op := op{c: c, name: "health check"}
	ctx, cancel := context.WithTimeoutCause(ctx, c.healthTimeout, errHealthTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+wire.HealthPath, nil)
	if err != nil {
		return op.notSent(ErrBadRequest, "the request could not be made")
	}
	req.Header.Set("Accept", wire.ContentType)
	status, ctype, body, err := c.do(req)
	if err != nil {
		return op.noAnswer(ctx, status, err, c.healthTimeout, errHealthTimeout)
	}
	var hb wire.HealthBody
	if status != http.StatusOK || json.Unmarshal(body, &hb) != nil || hb.Status != wire.HealthOK {
		return op.foreign(status, ctype, "")
	}
	return nil
}

// do sends req and reads the answer's body, at most wire.MaxAnswerBytes.
// A non-zero status with an error means the body broke off or was too long.
func (c *Client) do(req *http.Request) (status int, contentType string, body []byte, err error) {
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, "", nil, err
	}
	defer resp.Body.Close()
	status, contentType = resp.StatusCode, resp.Header.Get("Content-Type")
	body, err = io.ReadAll(io.LimitReader(resp.Body, wire.MaxAnswerBytes+1))
	if err != nil {
		return status, contentType, nil, err
	}
	if len(body) > wire.MaxAnswerBytes {
		return status, contentType, nil, errTooLong
	}
	return status, contentType, body, nil
}

var errTooLong = fmt.Errorf("the answer is longer than %d bytes", wire.MaxAnswerBytes)

// validToolName: the names sandboxd's tools have, and nothing that would
// change the request's path.
func validToolName(name string) bool {
	if name == "" || len(name) > 64 {
		return false
	}
	for i := 0; i < len(name); i++ {
		b := name[i]
		if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '_' || b == '-') {
			return false
		}
	}
	return true
}
