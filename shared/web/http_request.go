package web

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"unicode/utf8"

	"golang.org/x/net/http/httpguts"

	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/secret"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/fence"
	"github.com/agentsfleet/agentsfleet/shared/web/spec"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// httpRequest is the fleet tool http_request and the credential firewall's
// main door. Order of business, so that nothing is read or sent before the
// destination is approved:
//
//  1. validate the arguments;
//  2. check the URL as written (scheme, host syntax, host on the fleet's
//     list; no reference in the host) — a refusal here reads no secret
//     and sends nothing;
//  3. check every reference is well-formed and names a fleet secret;
//  4. fill the references, re-parse the URL and refuse if filling changed
//     its scheme or host;
//  5. send through the listed transport (public addresses, any port),
//     following at most 5 redirects, each re-checked; with secrets filled,
//     a redirect to another scheme, host or port is not followed.
type httpRequest struct {
	*tool.Def[spec.HTTPRequestArgs]
	net *network
}

var _ tool.Tool = (*httpRequest)(nil)

// forbiddenHeaders are set by the transport; Host would also let a request
// reach a virtual host other than the listed one.
var forbiddenHeaders = []string{"Host", "Content-Length", "Connection", "Transfer-Encoding", "Upgrade", "Te", "Trailer", "Proxy-Connection", "Keep-Alive"}

const maxRequestBody = 1 << 20

func newHTTPRequest(n *network) *httpRequest { return &httpRequest{Def: spec.HTTPRequest, net: n} }

func (t *httpRequest) Run(ctx context.Context, raw json.RawMessage) (tool.Result, error) {
	args, res, ok := t.Decode(raw)
	if !ok {
		return res, nil
	}
	body, isJSON, err := requestBody(args.Body)
	if err != nil {
		return t.Refuse("body", "%v", err), nil
	}
	inv := invocationFrom(ctx)
	method := args.Method
	fail := func(format string, a ...any) (tool.Result, error) {
		return tool.Errorf("http_request %s %s: %s", method, args.URL, fmt.Sprintf(format, a...)), nil
	}
	carriesRefs := secret.HasRef(args.URL) || secret.HasRef(body)
	for name, v := range args.Headers {
		carriesRefs = carriesRefs || secret.HasRef(name) || secret.HasRef(v)
	}

	// 2. The destination, as written.
	if refInHost(args.URL) {
		recorderFrom(ctx).refuse(ctx, method, roughURL(args.URL), run.RuleSecretInHost, nil)
		return fail("refused: a secret reference cannot be part of the host. Nothing was sent")
	}
	u, err := url.Parse(args.URL)
	if err != nil || !u.IsAbs() {
		if carriesRefs {
			return fail("not a valid absolute URL; a secret reference can go in the URL's path or query, not in its host or user information. Nothing was sent")
		}
		return fail("not an absolute http or https URL")
	}
	r := route{tool: wire.ToolHTTPRequest, listed: true, hosts: inv.Hosts, maxRedirects: maxRedirects}
	if err := r.check(ctx, method, u); err != nil {
		t.net.log.Warn("web request refused", "tool", wire.ToolHTTPRequest, "run_id", inv.RunID, "host", u.Hostname(), "secret_refs", carriesRefs, "reason", err.Error())
		if carriesRefs {
			return fail("%v. Nothing was sent and no secret was read: secret references are filled only for hosts on the fleet's network host list", err)
		}
		return fail("%v", err)
	}
	for name := range args.Headers {
		if !httpguts.ValidHeaderFieldName(name) {
			return fail("%q is not a valid header name", name)
		}
		if slices.Contains(forbiddenHeaders, http.CanonicalHeaderKey(name)) {
			return fail("header %s cannot be set", http.CanonicalHeaderKey(name))
		}
	}

	// 3. References: well-formed and known, and approved for this host
	// where the secret asks a person, before any value is read.
	var named []string
	for _, text := range append(headerValues(args.Headers), args.URL, body) {
		names, err := inv.Secrets.Check(text)
		if err != nil {
			return fail("%v. Nothing was sent", err)
		}
		named = append(named, names...)
	}
	if name := inv.unapproved(named, u.Hostname()); name != "" {
		recorderFrom(ctx).refuse(ctx, method, u, run.RuleSecretApproval, nil)
		return fail("refused: the secret %s says approve = true, and no person approved its use for %s in this run. Nothing was sent and no secret was read", name, u.Hostname())
	}

	// 4. Fill.
	var filled []string
	fill := func(text string, enc func(string) string) (string, error) {
		out, names, err := inv.Secrets.Fill(ctx, text, enc)
		for _, n := range names {
			if !slices.Contains(filled, n) {
				filled = append(filled, n)
			}
		}
		return out, err
	}
	target, err := fill(args.URL, nil)
	if err != nil {
		return tool.Result{}, fmt.Errorf("fill secrets in the URL: %w", err)
	}
	fu, err := url.Parse(target)
	if err != nil {
		return fail("with the secrets filled in, the URL is not valid: a secret value in a URL must be URL-safe. Nothing was sent")
	}
	if fu.Scheme != u.Scheme || fu.Host != u.Host {
		recorderFrom(ctx).refuse(ctx, method, u, run.RuleSecretInHost, nil)
		return fail("refused: filling the secret references would change where the request goes; put references only in the URL's path or query. Nothing was sent")
	}
	headers := http.Header{}
	for name, v := range args.Headers {
		fv, err := fill(v, nil)
		if err != nil {
			return tool.Result{}, fmt.Errorf("fill secrets in header %s: %w", name, err)
		}
		if !httpguts.ValidHeaderFieldValue(fv) {
			return fail("the value of header %s is not valid in a header (after filling secrets, if any). Nothing was sent", name)
		}
		headers.Set(name, fv)
	}
	enc := (func(string) string)(nil)
	if isJSON {
		enc = secret.JSONString
	}
	filledBody, err := fill(body, enc)
	if err != nil {
		return tool.Result{}, fmt.Errorf("fill secrets in the body: %w", err)
	}

	// 5. Send.
	ctx, cancel := context.WithTimeout(withSecretNames(ctx, filled), t.net.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, fu.String(), bytes.NewReader([]byte(filledBody)))
	if err != nil {
		return fail("not a valid request")
	}
	if body == "" {
		req.Body, req.GetBody, req.ContentLength = http.NoBody, nil, 0
	}
	req.Header = headers
	if req.Header.Get("User-Agent") == "" {
		req.Header.Set("User-Agent", "agentsfleet-http_request/1.0")
	}
	if isJSON && req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	var stopped *url.URL
	var pin **url.URL
	if len(filled) > 0 {
		pin = &stopped
	}
	client := &http.Client{Transport: t.net.listed, CheckRedirect: r.checkRedirect(pin)}
	resp, err := client.Do(req)
	if err != nil {
		t.net.log.Warn("web request failed", "tool", wire.ToolHTTPRequest, "run_id", inv.RunID, "host", u.Hostname(), "secrets", filled, "error", inv.Secrets.RedactLoaded(err.Error()))
		return fail("%s", t.net.describe(ctx, err))
	}
	defer resp.Body.Close()
	data, cut, err := readScreened(ctx, resp.Body, maxRespBytes, inv.Secrets)
	if err != nil {
		return fail("reading the response: %s", t.net.describe(ctx, err))
	}
	t.net.log.Info("web request", "tool", wire.ToolHTTPRequest, "run_id", inv.RunID, "method", method,
		"host", resp.Request.URL.Hostname(), "status", resp.StatusCode, "secrets", filled, "bytes", len(data))
	return tool.Result{Output: formatResponse(resp, fu, stopped, method, data, cut), IsError: resp.StatusCode >= 400}, nil
}

// refInHost reports whether a secret reference sits in the authority of
// rawURL outside the user information: there its value would choose the
// destination (or leak through DNS).
func refInHost(rawURL string) bool {
	_, rest, ok := strings.Cut(rawURL, "//")
	if !ok {
		return false
	}
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	return secret.HasRef(rest)
}

// roughURL is rawURL's scheme and host, for the egress log, when
// url.Parse refuses it (a reference in the host is not a valid host).
func roughURL(rawURL string) *url.URL {
	scheme, rest, _ := strings.Cut(rawURL, "://")
	if i := strings.IndexAny(rest, "/?#"); i >= 0 {
		rest = rest[:i]
	}
	if i := strings.LastIndex(rest, "@"); i >= 0 {
		rest = rest[i+1:]
	}
	return &url.URL{Scheme: scheme, Host: rest}
}

func headerValues(h map[string]string) []string {
	var out []string
	for k, v := range h {
		out = append(out, k, v)
	}
	return out
}

// requestBody reads the body argument: absent or null is no body, a JSON
// string is sent as is, any other JSON value is sent compacted as JSON. Its
// error completes `argument "body" …`.
func requestBody(raw json.RawMessage) (body string, isJSON bool, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return "", false, nil
	}
	if raw[0] == '"' {
		if err := json.Unmarshal(raw, &body); err != nil {
			return "", false, errors.New("must be a valid JSON string")
		}
	} else {
		var b bytes.Buffer
		if err := json.Compact(&b, raw); err != nil {
			return "", false, errors.New("must be valid JSON")
		}
		body, isJSON = b.String(), true
	}
	if len(body) > maxRequestBody {
		return "", false, fmt.Errorf("must be at most %d bytes, not %d", maxRequestBody, len(body))
	}
	return body, isJSON, nil
}

// usefulHeaders are the response headers http_request shows, in this order;
// rate-limit and request-id headers are shown too.
var usefulHeaders = []string{
	"Content-Type", "Content-Length", "Content-Range", "Content-Disposition", "Location", "Retry-After",
	"WWW-Authenticate", "ETag", "Last-Modified", "Link", "X-Total-Count",
}

func showHeader(name string) bool {
	l := strings.ToLower(name)
	return strings.Contains(l, "ratelimit") || strings.Contains(l, "rate-limit") || strings.HasSuffix(l, "request-id")
}

// formatResponse is what the model sees: status, notes on redirects, the
// useful headers, a blank line and the body. sent is the URL as sent (with
// secrets; Service.Call screens the output).
func formatResponse(resp *http.Response, sent *url.URL, stopped *url.URL, method string, data []byte, cut bool) string {
	var b strings.Builder
	fmt.Fprintf(&b, "HTTP %d %s\n", resp.StatusCode, http.StatusText(resp.StatusCode))
	if final := resp.Request.URL; final.String() != sent.String() {
		fmt.Fprintf(&b, "[after redirects, from %s]\n", fence.URL(final))
	}
	if stopped != nil {
		fmt.Fprintf(&b, "[redirect to %s not followed: the request carried secrets, which are sent only to the host they were filled for]\n", fence.URL(stopped))
	}
	for _, h := range usefulHeaders {
		for _, v := range resp.Header.Values(h) {
			fmt.Fprintf(&b, "%s: %s\n", strings.ToLower(h), v)
		}
	}
	var extra []string
	for name := range resp.Header {
		if showHeader(name) && !slices.Contains(usefulHeaders, name) {
			extra = append(extra, name)
		}
	}
	slices.Sort(extra)
	for _, name := range extra {
		for _, v := range resp.Header.Values(name) {
			fmt.Fprintf(&b, "%s: %s\n", strings.ToLower(name), v)
		}
	}
	if method == http.MethodHead {
		return strings.TrimRight(b.String(), "\n")
	}
	b.WriteString("\n")
	ct := resp.Header.Get("Content-Type")
	mt, _, _ := mime.ParseMediaType(ct)
	switch {
	case len(data) == 0:
		b.WriteString("[empty body]")
	case textual(mt) || (mt == "" || mt == "application/octet-stream") && utf8.Valid(data):
		b.WriteString(decode(data, ct))
	default:
		if mt == "" {
			mt = "unknown type"
		}
		fmt.Fprintf(&b, "[binary body: %d bytes of %s, not shown]", len(data), mt)
	}
	if cut {
		b.WriteString("\n[body cut at " + respCap + ": the response was longer]")
	}
	return b.String()
}
