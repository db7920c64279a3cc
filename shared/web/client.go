package web

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
	"github.com/agentsfleet/agentsfleet/shared/web/fence"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
)

// Limits from the spec, as package spec states them to the model.
const (
	maxRedirects = spec.MaxRedirects // every web tool
	maxPageBytes = spec.MaxPageBytes // webfetch and websearch: 4 MB
	maxRespBytes = spec.MaxRespBytes // web_fetch, http_request, pushover: 1 MiB
)

// pageCap and respCap say maxPageBytes and maxRespBytes as the descriptions
// and the results do.
var (
	pageCap = spec.PageCap
	respCap = spec.RespCap
)

// route is where one request may go. checkURL applies it to the first URL
// and checkRedirect to every redirect hop; the egress dialer under the
// transport applies the address and port policy to every connection.
type route struct {
	tool      string
	httpsOnly bool
	listed    bool        // the host must be on hosts
	hosts     HostAllower // the fleet's list; nil allows nothing

	maxRedirects int
	rec          *recorder // nil: the recorder in the request's context
}

// checkURL returns a *egress.RefusedError if u is not a destination this
// route allows by scheme, host syntax or host list. It sends nothing.
func (r route) checkURL(u *url.URL) error {
	switch u.Scheme {
	case "https":
	case "http":
		if r.httpsOnly {
			return &egress.RefusedError{Rule: run.RuleScheme, Reason: fmt.Sprintf("%s requires https, and %s is http", r.tool, fence.URL(u))}
		}
	default:
		return &egress.RefusedError{Rule: run.RuleScheme, Reason: fmt.Sprintf("scheme %q is not allowed: only http and https", u.Scheme)}
	}
	if u.Host == "" {
		return &egress.RefusedError{Rule: run.RuleHost, Reason: "the URL has no host"}
	}
	if secret.HasRef(u.Host) {
		return &egress.RefusedError{Rule: run.RuleSecretInHost, Reason: "a secret reference cannot be part of the host"}
	}
	host, err := egress.CanonicalHost(u.Hostname())
	if err != nil {
		return &egress.RefusedError{Rule: run.RuleHost, Reason: err.Error()}
	}
	if r.listed && (r.hosts == nil || !r.hosts.Allows(host)) {
		return &egress.RefusedError{Rule: run.RuleHostList, Reason: fmt.Sprintf("host %s is not in the fleet's network host list", host)}
	}
	return nil
}

// check is checkURL, recording a refusal of a request by method to u in
// the run's egress log.
func (r route) check(ctx context.Context, method string, u *url.URL) error {
	err := r.checkURL(u)
	if err != nil {
		r.recorder(ctx).refuse(ctx, method, u, run.RuleHost, err)
	}
	return err
}

// recorder is where the route's requests are recorded: its own (an MCP
// client, whose SDK sends requests under contexts of its own), else the
// one in ctx; nil records nothing.
func (r route) recorder(ctx context.Context) *recorder {
	if r.rec != nil {
		return r.rec
	}
	return recorderFrom(ctx)
}

// redirectLimitError is the 6th redirect.
type redirectLimitError struct{ max int }

func (e *redirectLimitError) Error() string {
	return fmt.Sprintf("stopped after %d redirects", e.max)
}

// checkRedirect is an http.Client CheckRedirect that counts hops and
// applies checkURL to each. When pin is not nil the request carries filled
// secrets: a hop to any other scheme, host or port is not followed (the
// client returns the redirect response itself) and *pin is set to where it
// pointed, so secrets go only where they were approved.
func (r route) checkRedirect(pin **url.URL) func(*http.Request, []*http.Request) error {
	return func(req *http.Request, via []*http.Request) error {
		rec := r.recorder(req.Context())
		if len(via) > r.maxRedirects {
			rec.refuse(req.Context(), req.Method, req.URL, run.RuleRedirects, nil)
			return &redirectLimitError{r.maxRedirects}
		}
		if err := r.check(req.Context(), req.Method, req.URL); err != nil {
			return err
		}
		if pin != nil {
			first := via[0].URL
			if req.URL.Scheme != first.Scheme || req.URL.Host != first.Host {
				rec.refuse(req.Context(), req.Method, req.URL, run.RuleSecretRedirect, nil)
				*pin = req.URL
				return http.ErrUseLastResponse
			}
		}
		return nil
	}
}

// sentKey marks, in a call's context, that a request left for the network.
type sentKey struct{}

// marking wraps the egress transports: every request whose context carries
// a sentKey flag sets it, and every request whose context carries a
// recorder is recorded in it (egresslog.go). Service.Call uses the flag to
// decide whether the output can hold data from outside, which must be
// screened against every fleet secret. Because both transports are
// wrapped, no tool can forget either.
type marking struct{ rt http.RoundTripper }

func (m marking) RoundTrip(r *http.Request) (*http.Response, error) {
	if sent, ok := r.Context().Value(sentKey{}).(*atomic.Bool); ok {
		sent.Store(true)
	}
	return roundTrip(m.rt, r) // and every request goes in the run's egress log
}

// readScreened reads at most max bytes of a response body and reports
// whether there was more, for a call whose output the screen will see
// (Service.Call replaces whole values of the fleet's secrets). A cut could
// split a value and hand its first bytes past the screen, so when there is
// more it reads on as far as the longest spelling of a fleet secret, and
// cuts where no spelling straddles (secret.Set.SafeCut): a value at the cut
// is left out whole. It reads every secret of the fleet first (which the
// screen does anyway for any call that sent something).
func readScreened(ctx context.Context, r io.Reader, max int64, set *secret.Set) ([]byte, bool, error) {
	if err := set.LoadAll(ctx); err != nil {
		return nil, false, fmt.Errorf("the fleet's secrets, to screen the response: %w", err)
	}
	b, err := io.ReadAll(io.LimitReader(r, max+int64(set.Margin())+1))
	if int64(len(b)) <= max {
		return b, false, err
	}
	return b[:set.SafeCut(b, int(max))], true, err
}

// describe turns a request error into text for the model: the reason,
// without the Go error's "Get \"URL\":" prefix (the URL may hold filled
// secrets; the caller names the URL as the model wrote it).
func (n *network) describe(ctx context.Context, err error) string {
	var re *egress.RefusedError
	var rl *redirectLimitError
	var dnsErr *net.DNSError
	var certErr *tls.CertificateVerificationError
	var unknownAuth x509.UnknownAuthorityError
	var hostErr x509.HostnameError
	var opErr *net.OpError
	switch {
	case errors.As(err, &re):
		return re.Error()
	case errors.As(err, &rl):
		return rl.Error()
	case errors.Is(err, context.DeadlineExceeded) || errors.Is(ctx.Err(), context.DeadlineExceeded):
		return fmt.Sprintf("timed out after %s", n.timeout)
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.As(err, &dnsErr):
		if dnsErr.IsNotFound {
			return fmt.Sprintf("host %s not found (DNS)", dnsErr.Name)
		}
		return fmt.Sprintf("could not resolve host %s: %s", dnsErr.Name, dnsErr.Err)
	case errors.As(err, &hostErr), errors.As(err, &unknownAuth), errors.As(err, &certErr):
		return "TLS certificate not valid for this host: " + tlsReason(err)
	case errors.As(err, &opErr) && opErr.Op == "dial":
		return fmt.Sprintf("could not connect to %s: %v", opErr.Addr, opErr.Err)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

func tlsReason(err error) string {
	var certErr *tls.CertificateVerificationError
	if errors.As(err, &certErr) && certErr.Err != nil {
		return certErr.Err.Error()
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err.Error()
	}
	return err.Error()
}

// userAgent is what web tools send unless http_request's caller sets one.
const userAgent = "Mozilla/5.0 (compatible; agentsfleet-webtools/1.0)"

// textual reports whether a media type is text the model can read.
func textual(mediaType string) bool {
	mt := strings.ToLower(mediaType)
	switch {
	case strings.HasPrefix(mt, "text/"),
		strings.HasSuffix(mt, "+json"), strings.HasSuffix(mt, "+xml"),
		mt == "application/json", mt == "application/xml", mt == "application/javascript",
		mt == "application/x-javascript", mt == "application/ecmascript", mt == "application/yaml",
		mt == "application/x-yaml", mt == "application/toml", mt == "application/x-ndjson",
		mt == "application/graphql", mt == "application/x-www-form-urlencoded", mt == "application/sql":
		return true
	}
	return false
}
