package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
	"github.com/agentsfleet/agentsfleet/shared/web/search"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// Config is what a Service needs. Every zero field has the production
// default, so a test sets only what it changes.
type Config struct {
	// Secrets is where fleet secrets are read (AWS Secrets Manager in
	// production). Nil: a call whose fleet declares secrets fails.
	Secrets secret.Source
	// Search is the deployment's search backend setting. Zero: websearch
	// answers that no backend is configured.
	Search search.Config
	// Resolver looks names up for the egress dialer; nil means the
	// system resolver. Tests map names to addresses with egress.Hosts.
	Resolver egress.Resolver
	// AllowAddr is the test-only egress escape hatch (egress.Policy.Allow).
	// Set it only from egress.AllowFromEnv (ConfigFromEnv does) or in Go
	// tests; nothing in a Request can set it.
	AllowAddr netip.AddrPort
	// RootCAs verifies servers' TLS certificates; nil means the system
	// roots. Tests pass their httptest server's CA.
	RootCAs *x509.CertPool
	// Timeout bounds one tool call, redirects and body included; 0 means
	// 30 seconds (the spec's webfetch limit, used for every web tool).
	Timeout time.Duration
	// PushoverURL is the Pushover messages endpoint; "" means
	// DefaultPushoverURL. Its host must be on the fleet's host list.
	PushoverURL string
	// Logger receives one line per outbound request and per refusal,
	// never a secret value; nil means slog.Default().
	Logger *slog.Logger
	// Grants says what each call may use, read from the store by its run
	// (and child) id: the webtools function decides by itself and takes no
	// host list or secret id from its caller. Every deployment and
	// `agentsfleet dev` set it; nil (tests, `webtools call`) trusts the
	// Request's Hosts and Secrets.
	Grants Grants
	// Egress keeps each run's egress log: every request a call sends or
	// is refused, recorded under the call's run id (verified by Grants
	// when the Service has them). Nil records nothing.
	Egress EgressLog
}

// Grants tells the web tools what an agent holds, from the run's pinned
// Definition. Implementations are safe for concurrent use.
type Grants interface {
	// Grant returns what the agent childID ("" for the run's own) of run
	// runID holds. A run or child that does not exist, or has ended, is an
	// error.
	Grant(ctx context.Context, runID, childID string) (Grant, error)
	// FleetSecrets returns the secret ids of fleet's current Definition:
	// what a scrub request of no run screens for.
	FleetSecrets(ctx context.Context, fleet string) (map[string]string, error)
}

// Grant is what one agent may use of the web tools.
type Grant struct {
	Fleet   string
	Tools   []string          // the tools it holds
	Hosts   []string          // its network host list
	Secrets map[string]string // the secrets it may fill: name → Secrets Manager id
	// MCP is the fleet's MCP servers; which of their tools the agent may
	// call is in Tools (mcp__<server>__<tool>, mcp__<server>__*).
	MCP []fleet.MCPServer
	// ToolTimeout is the fleet's tool timeout, which bounds an MCP
	// request; 0 means the Service's Timeout.
	ToolTimeout time.Duration
	// Approve are the secrets that say approve = true: each is filled only
	// for a host Granted holds it for (run.SecretGrant's "NAME host"),
	// which a person approved in the run.
	Approve, Granted []string
}

// DefaultTimeout is a web tool call's time limit.
const DefaultTimeout = spec.Timeout

// invocation is what one call knows about its fleet. Service.Call puts it
// in the context of the tool's Run; a tool reads it with invocationFrom.
type invocation struct {
	// Hosts is the fleet's network host list; nil allows no host.
	Hosts HostAllower
	// Secrets is the fleet's secrets, each read at most once per call.
	Secrets *secret.Set
	// RunID and Fleet are for logs.
	RunID, Fleet string
	// MCP and Timeout are the Grant's, for the MCP operations; Tools is
	// the agent's allowlist, which they check when Checked (a Service with
	// Grants) to admit a server's tool.
	MCP     []fleet.MCPServer
	Timeout time.Duration
	Tools   []string
	Checked bool
	// Approve and Granted are the Grant's.
	Approve, Granted []string
}

// unapproved returns the first of names, secrets the call would fill for
// host, that says approve = true and that no person approved for host in
// the run; "" when there is none. host is compared as the host list
// reads it.
func (inv *invocation) unapproved(names []string, host string) string {
	if len(inv.Approve) == 0 {
		return ""
	}
	if h, err := fleet.NormalizeHost(host); err == nil {
		host = h
	}
	for _, n := range names {
		if slices.Contains(inv.Approve, n) && !slices.Contains(inv.Granted, run.SecretGrant(n, host)) {
			return n
		}
	}
	return ""
}

// invocationKey holds a call's *invocation in its context.
type invocationKey struct{}

// invocationFrom returns the invocation Service.Call put in ctx. A tool run
// any other way (a test, or a caller holding Service.Tools()) gets an empty
// one: no hosts and no secrets, so every request to a listed host is
// refused and no reference is filled. There is deliberately no exported way
// to put an invocation in a context: the hosts and secrets come only through
// Call, which screens what the tool returns.
func invocationFrom(ctx context.Context) *invocation {
	if inv, ok := ctx.Value(invocationKey{}).(*invocation); ok && inv != nil {
		return inv
	}
	return &invocation{Secrets: secret.NewSet(nil, nil)}
}

// Service runs web tool calls. It is safe for concurrent use; one Service
// serves every invocation of a Lambda instance, reusing connections.
type Service struct {
	net    *network
	tools  map[string]tool.Tool
	names  []string
	grants Grants
	egress EgressLog
}

// NewService builds the tools over cfg. It returns an error for a search
// setting it cannot use.
func NewService(cfg Config) (*Service, error) {
	n := newNetwork(cfg)
	backend, err := search.New(cfg.Search, &http.Client{
		Transport:     n.public,
		CheckRedirect: route{tool: wire.ToolWebSearch, maxRedirects: maxRedirects}.checkRedirect(nil),
	})
	if err != nil {
		return nil, fmt.Errorf("web tools: %w", err)
	}
	pushover := cfg.PushoverURL
	if pushover == "" {
		pushover = DefaultPushoverURL
	}
	s := &Service{net: n, tools: map[string]tool.Tool{}, grants: cfg.Grants, egress: cfg.Egress}
	for _, t := range []tool.Tool{
		newWebFetch(n),
		newWebSearch(n, backend),
		newWebFetchTLS(n),
		newHTTPRequest(n),
		newPushover(n, pushover),
	} {
		s.tools[t.Name()] = t
		s.names = append(s.names, t.Name())
	}
	return s, nil
}

// Tools returns the tools in the order of Specs. A tool's Run called
// directly rather than through Call has no host list and no secrets: it
// reaches public pages only, fills no reference, and its output is not
// screened (there is nothing to screen it for).
func (s *Service) Tools() []tool.Tool {
	out := make([]tool.Tool, len(s.names))
	for i, n := range s.names {
		out[i] = s.tools[n]
	}
	return out
}

// Specs returns the specs of the five web tools (name, description, schema
// and argument check) in a fixed order — webfetch, websearch, web_fetch,
// http_request, pushover — without building a Service, for callers that
// describe the tools to a model or check arguments without a network.
// They are the specs Service.Tools() carry.
func Specs() []tool.Spec { return spec.Specs() }

// Call runs req. If the call sent anything to the network, the Result's
// output is screened for every secret the fleet declares (all are read, once)
// before it is returned; if those secrets cannot be read the output is
// withheld and the Result says so. A call refused before sending is
// screened for the secrets it read, and reads no other. A Go error (broken
// environment, or a host list the Definition should never have held) has
// its message screened too.
func (s *Service) Call(ctx context.Context, req wire.Request) (tool.Result, error) {
	if req.Tool == wire.ToolScrub {
		return s.scrub(ctx, req)
	}
	op, isMCP := s.mcpOp(req.Tool)
	if t, ok := s.tools[req.Tool]; ok {
		op = t.Run
	} else if !isMCP {
		return tool.Errorf("unknown web tool %q: the web tools are %s", req.Tool, strings.Join(s.names, ", ")), nil
	}
	g, refused := s.grant(ctx, req)
	if refused != nil {
		return *refused, nil
	}
	if !isMCP && !slices.Contains(g.Tools, req.Tool) { // an MCP operation checks its server's tool
		s.net.log.Warn("web tool refused: not held", "tool", req.Tool, "run_id", req.RunID, "child_id", req.ChildID)
		return tool.Errorf("%s: refused: the agent does not hold this tool", req.Tool), nil
	}
	hosts, err := fleet.ParseHostList(g.Hosts)
	if err != nil {
		return tool.Result{}, fmt.Errorf("web tool %s: %w", req.Tool, err)
	}
	inv := &invocation{Hosts: hosts, Secrets: secret.NewSet(s.net.secrets, g.Secrets), RunID: req.RunID, Fleet: g.Fleet,
		MCP: g.MCP, Timeout: g.ToolTimeout, Tools: g.Tools, Checked: s.grants != nil, Approve: g.Approve, Granted: g.Granted}
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	sent, rec := new(atomic.Bool), newRecorder(req.Tool)
	ctx = context.WithValue(context.WithValue(withRecorder(ctx, rec), sentKey{}, sent), invocationKey{}, inv)
	res, err := op(ctx, args)
	s.recordEgress(ctx, req.RunID, rec, inv)
	if err != nil {
		// Not %w: the wrapped chain would still carry the unscreened text.
		return tool.Result{}, errors.New(inv.Secrets.RedactLoaded(fmt.Sprintf("web tool %s: %v", req.Tool, err)))
	}
	if !sent.Load() {
		// Nothing came from outside: the output is our text and the
		// model's arguments, and the only values it could hold are those
		// this call read. Screening for those reads no further secret.
		return tool.Result{Output: inv.Secrets.RedactLoaded(res.Output), IsError: res.IsError}, nil
	}
	out, err := inv.Secrets.Redact(ctx, res.Output)
	if err != nil {
		s.net.log.Error("web tool output withheld", "tool", req.Tool, "run_id", req.RunID, "error", err)
		return tool.Errorf("%s: the result was withheld because agentsfleet could not read the fleet's secrets to screen it for secret values (%v). This is a deployment problem, not a problem with the request.", req.Tool, err), nil
	}
	return tool.Result{Output: out, IsError: res.IsError}, nil
}

// grant is what req's agent holds: read from the store by its run and
// child ids when the Service has Grants, else (tests, `webtools call`)
// taken from the request, which then holds every tool it names. A run that
// cannot be read, or has ended, refuses the call.
func (s *Service) grant(ctx context.Context, req wire.Request) (Grant, *tool.Result) {
	if s.grants == nil {
		return Grant{Fleet: req.Fleet, Tools: []string{req.Tool}, Hosts: req.Hosts, Secrets: req.Secrets,
			MCP: mcpServers(req.MCP), ToolTimeout: time.Duration(req.TimeoutSeconds) * time.Second}, nil
	}
	if req.RunID == "" {
		res := tool.Errorf("%s: refused: the call names no run", req.Tool)
		return Grant{}, &res
	}
	g, err := s.grants.Grant(ctx, req.RunID, req.ChildID)
	if err != nil {
		s.net.log.Warn("web tool refused: no grant", "tool", req.Tool, "run_id", req.RunID, "child_id", req.ChildID, "error", err)
		res := tool.Errorf("%s: refused: %v", req.Tool, err)
		return Grant{}, &res
	}
	return g, nil
}

// network is what the tools share: the two egress transports, limits and
// the logger.
type network struct {
	public  http.RoundTripper // public addresses, ports 80 and 443
	listed  http.RoundTripper // public addresses, any port (host list tools)
	timeout time.Duration
	secrets secret.Source
	log     *slog.Logger
}

func newNetwork(cfg Config) *network {
	log := cfg.Logger
	if log == nil {
		log = slog.Default()
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	public := egress.PublicWeb()
	public.Allow = cfg.AllowAddr
	return &network{
		public:  marking{newTransport(&egress.Dialer{Policy: public, Resolver: cfg.Resolver, Logger: log}, cfg.RootCAs)},
		listed:  marking{newTransport(&egress.Dialer{Policy: egress.Policy{Allow: cfg.AllowAddr}, Resolver: cfg.Resolver, Logger: log}, cfg.RootCAs)},
		timeout: timeout,
		secrets: cfg.Secrets,
		log:     log,
	}
}

// newTransport is an http.Transport that dials only through d. Proxy is
// nil on purpose: an environment proxy would dial in our place and bypass
// the policy.
func newTransport(d *egress.Dialer, roots *x509.CertPool) *http.Transport {
	return &http.Transport{
		Proxy:                  nil,
		DialContext:            d.DialContext,
		TLSClientConfig:        &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		ForceAttemptHTTP2:      true,
		TLSHandshakeTimeout:    10 * time.Second,
		MaxResponseHeaderBytes: 256 << 10,
		MaxIdleConns:           32,
		IdleConnTimeout:        30 * time.Second,
	}
}
