package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"log/slog"
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
	"github.com/agentsfleet/agentsfleet/shared/web/search"
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
}

// DefaultTimeout is a web tool call's time limit.
const DefaultTimeout = 30 * time.Second

// Tool is one web tool. Run validates args (the model's JSON object) and
// returns what the model sees; it returns a Go error only when the
// environment is broken. Run must not put secret values in its output or
// errors on purpose; Service.Call screens both anyway.
type Tool interface {
	Name() string
	// Description is the model-facing description, embedded from the
	// tool's .txt file.
	Description() string
	// Schema is the JSON Schema of the arguments object.
	Schema() json.RawMessage
	Run(ctx context.Context, inv *Invocation, args json.RawMessage) (Result, error)
}

// Invocation is what one call knows about its fleet.
type Invocation struct {
	// Hosts is the fleet's network host list.
	Hosts HostAllower
	// Secrets is the fleet's secrets, each read at most once per call.
	Secrets *secret.Set
	// RunID and Fleet are for logs.
	RunID, Fleet string
}

// Service runs web tool calls. It is safe for concurrent use; one Service
// serves every invocation of a Lambda instance, reusing connections.
type Service struct {
	net   *network
	tools map[string]Tool
	names []string
}

// NewService builds the tools over cfg. It returns an error for a search
// setting it cannot use.
func NewService(cfg Config) (*Service, error) {
	n := newNetwork(cfg)
	backend, err := search.New(cfg.Search, &http.Client{
		Transport:     n.public,
		CheckRedirect: route{tool: ToolWebSearch, maxRedirects: maxRedirects}.checkRedirect(nil),
	})
	if err != nil {
		return nil, fmt.Errorf("web tools: %w", err)
	}
	pushover := cfg.PushoverURL
	if pushover == "" {
		pushover = DefaultPushoverURL
	}
	s := &Service{net: n, tools: map[string]Tool{}}
	for _, t := range []Tool{
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

// Tools returns the tools in a fixed order.
func (s *Service) Tools() []Tool {
	out := make([]Tool, len(s.names))
	for i, n := range s.names {
		out[i] = s.tools[n]
	}
	return out
}

// Call runs req. If the call sent anything to the network, the Result's
// output is screened for every secret the fleet declares (all are read, once)
// before it is returned; if those secrets cannot be read the output is
// withheld and the Result says so. A call refused before sending is
// screened for the secrets it read, and reads no other. A Go error (broken
// environment, or a host list the Definition should never have held) has
// its message screened too.
func (s *Service) Call(ctx context.Context, req Request) (Result, error) {
	t, ok := s.tools[req.Tool]
	if !ok {
		return errorResult("unknown web tool %q: the web tools are %s", req.Tool, strings.Join(s.names, ", ")), nil
	}
	hosts, err := fleet.ParseHostList(req.Hosts)
	if err != nil {
		return Result{}, fmt.Errorf("web tool %s: %w", req.Tool, err)
	}
	inv := &Invocation{Hosts: hosts, Secrets: secret.NewSet(s.net.secrets, req.Secrets), RunID: req.RunID, Fleet: req.Fleet}
	args := req.Arguments
	if len(args) == 0 {
		args = json.RawMessage("{}")
	}
	sent := new(atomic.Bool)
	res, err := t.Run(context.WithValue(ctx, sentKey{}, sent), inv, args)
	if err != nil {
		// Not %w: the wrapped chain would still carry the unscreened text.
		return Result{}, errors.New(inv.Secrets.RedactLoaded(fmt.Sprintf("web tool %s: %v", req.Tool, err)))
	}
	if !sent.Load() {
		// Nothing came from outside: the output is our text and the
		// model's arguments, and the only values it could hold are those
		// this call read. Screening for those reads no further secret.
		return Result{Output: inv.Secrets.RedactLoaded(res.Output), IsError: res.IsError}, nil
	}
	out, err := inv.Secrets.Redact(ctx, res.Output)
	if err != nil {
		s.net.log.Error("web tool output withheld", "tool", req.Tool, "run_id", req.RunID, "error", err)
		return errorResult("%s: the result was withheld because agentsfleet could not read the fleet's secrets to screen it for secret values (%v). This is a deployment problem, not a problem with the request.", req.Tool, err), nil
	}
	return Result{Output: out, IsError: res.IsError}, nil
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

// decodeArgs decodes the model's arguments object into v, refusing
// unknown fields, and returns an error whose text tells the model what to
// fix.
func decodeArgs(raw json.RawMessage, v any) error {
	dec := json.NewDecoder(strings.NewReader(string(raw)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		var te *json.UnmarshalTypeError
		var se *json.SyntaxError
		switch {
		case errors.As(err, &te) && te.Field == "":
			return errors.New("arguments must be a JSON object")
		case errors.As(err, &te):
			return fmt.Errorf("argument %q: expected %s, got %s", te.Field, jsonKind(te.Type.Kind().String()), te.Value)
		case errors.As(err, &se):
			return fmt.Errorf("arguments are not valid JSON: %v", se)
		case strings.HasPrefix(err.Error(), "json: unknown field "):
			return fmt.Errorf("unknown argument %s", strings.TrimPrefix(err.Error(), "json: unknown field "))
		default:
			return fmt.Errorf("arguments: %v", strings.TrimPrefix(err.Error(), "json: "))
		}
	}
	if dec.More() {
		return errors.New("arguments must be one JSON object")
	}
	return nil
}

func jsonKind(goKind string) string {
	switch {
	case goKind == "string":
		return "a string"
	case goKind == "bool":
		return "true or false"
	case slices.Contains([]string{"int", "int64", "int32", "uint", "uint16"}, goKind):
		return "an integer"
	case goKind == "float64":
		return "a number"
	case goKind == "map" || goKind == "struct":
		return "an object"
	case goKind == "slice":
		return "an array"
	}
	return "of another type"
}
