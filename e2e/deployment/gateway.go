package deployment

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"
)

// route is one of the HTTP API's routes (AWS::ApiGatewayV2::Route) and
// the function its Lambda proxy integration invokes.
type route struct {
	key, method string
	segments    []string // the path template's, such as v1 and {proxy+}
	fn          *function
}

// match reports whether the route takes method and path, and its path
// parameters.
func (rt route) match(method, p string) (map[string]string, bool) {
	if rt.method != "ANY" && rt.method != method {
		return nil, false
	}
	if rt.key == "$default" {
		return nil, true
	}
	got := strings.Split(strings.Trim(p, "/"), "/")
	params := map[string]string{}
	for i, seg := range rt.segments {
		if strings.HasSuffix(seg, "+}") {
			if i >= len(got) {
				return nil, false
			}
			params[strings.Trim(seg, "{}+")] = strings.Join(got[i:], "/")
			return params, true
		}
		if i >= len(got) {
			return nil, false
		}
		if strings.HasPrefix(seg, "{") {
			params[strings.Trim(seg, "{}")] = got[i]
		} else if seg != got[i] {
			return nil, false
		}
	}
	return params, len(got) == len(rt.segments)
}

// specificity orders routes as API Gateway chooses among them: the most
// specific first (more literal segments, no greedy variable, a method
// before ANY), $default last.
func (rt route) specificity() int {
	if rt.key == "$default" {
		return -1
	}
	n := 0
	for _, seg := range rt.segments {
		switch {
		case strings.HasSuffix(seg, "+}"):
		case strings.HasPrefix(seg, "{"):
			n += 10
		default:
			n += 100
		}
	}
	if rt.method != "ANY" {
		n++
	}
	return n
}

// gateway is the HTTP API: each request becomes a payload format 2.0
// event for the function its route integrates, invoked RequestResponse,
// and the function's answer the response, within API Gateway's 30 s.
type gateway struct {
	d      *Deployment
	apiID  string
	routes []route
	srv    *http.Server
	url    string
}

func (g *gateway) start() error {
	sort.SliceStable(g.routes, func(i, j int) bool { return g.routes[i].specificity() > g.routes[j].specificity() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	g.url = "http://" + ln.Addr().String()
	g.srv = &http.Server{Handler: g, ReadHeaderTimeout: 10 * time.Second}
	go g.srv.Serve(ln)
	return nil
}

// textual is what API Gateway passes as text; any other body reaches the
// function base64-encoded.
func textual(contentType string) bool {
	mt, _, _ := mime.ParseMediaType(contentType)
	return mt == "" || strings.HasPrefix(mt, "text/") || mt == "application/json" || strings.HasSuffix(mt, "+json") ||
		mt == "application/xml" || mt == "application/javascript"
}

func (g *gateway) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var rt *route
	var params map[string]string
	for i := range g.routes {
		if p, ok := g.routes[i].match(r.Method, r.URL.Path); ok {
			rt, params = &g.routes[i], p
			break
		}
	}
	if rt == nil {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusNotFound)
		io.WriteString(w, `{"message":"Not Found"}`)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 10<<20+1))
	if err != nil || len(body) > 10<<20 {
		w.WriteHeader(http.StatusRequestEntityTooLarge)
		io.WriteString(w, `{"message":"Request Entity Too Large"}`)
		return
	}
	now := time.Now()
	ev := events.APIGatewayV2HTTPRequest{
		Version: "2.0", RouteKey: rt.key, RawPath: r.URL.EscapedPath(), RawQueryString: r.URL.RawQuery,
		Headers: map[string]string{}, PathParameters: params,
		RequestContext: events.APIGatewayV2HTTPRequestContext{
			AccountID: g.d.account, APIID: g.apiID, DomainName: r.Host, DomainPrefix: strings.Split(r.Host, ".")[0],
			RequestID: newRequestID(), RouteKey: rt.key, Stage: "$default",
			Time: now.UTC().Format("02/Jan/2006:15:04:05 -0700"), TimeEpoch: now.UnixMilli(),
			HTTP: events.APIGatewayV2HTTPRequestContextHTTPDescription{Method: r.Method, Path: r.URL.Path,
				Protocol: r.Proto, SourceIP: "127.0.0.1", UserAgent: r.UserAgent()},
		},
	}
	for k, vs := range r.Header {
		if strings.EqualFold(k, "Cookie") {
			for _, v := range vs {
				for _, c := range strings.Split(v, ";") {
					ev.Cookies = append(ev.Cookies, strings.TrimSpace(c))
				}
			}
			continue
		}
		ev.Headers[strings.ToLower(k)] = strings.Join(vs, ",")
	}
	ev.Headers["host"] = r.Host
	ev.Headers["content-length"] = strconv.Itoa(len(body))
	if q, err := url.ParseQuery(r.URL.RawQuery); err == nil && len(q) > 0 {
		ev.QueryStringParameters = map[string]string{}
		for k, vs := range q {
			ev.QueryStringParameters[k] = strings.Join(vs, ",")
		}
	}
	if len(body) > 0 {
		if textual(r.Header.Get("Content-Type")) {
			ev.Body = string(body)
		} else {
			ev.Body, ev.IsBase64Encoded = base64.StdEncoding.EncodeToString(body), true
		}
	}
	payload, _ := json.Marshal(ev)
	ctx, cancel := context.WithTimeout(r.Context(), 30*time.Second)
	defer cancel()
	out, err := rt.fn.Invoke(ctx, payload)
	w.Header().Set("Apigw-Requestid", ev.RequestContext.RequestID)
	switch {
	case ctx.Err() != nil:
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, `{"message":"Service Unavailable"}`)
		return
	case err != nil:
		rt.fn.logf("%s %s: the function failed: %v", r.Method, r.URL.Path, err)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusInternalServerError)
		io.WriteString(w, `{"message":"Internal Server Error"}`)
		return
	}
	g.respond(w, out)
}

// respond writes a function's answer as API Gateway does with payload
// format 2.0: an object with a statusCode is the response; anything else
// is a 200 JSON body.
func (g *gateway) respond(w http.ResponseWriter, out []byte) {
	var resp events.APIGatewayV2HTTPResponse
	var probe map[string]json.RawMessage
	if json.Unmarshal(out, &probe) != nil || probe["statusCode"] == nil {
		w.Header().Set("Content-Type", "application/json")
		w.Write(out)
		return
	}
	if err := json.Unmarshal(out, &resp); err != nil {
		w.WriteHeader(http.StatusBadGateway)
		fmt.Fprintf(w, `{"message":"Internal Server Error"}`)
		return
	}
	for k, v := range resp.Headers {
		w.Header().Set(k, v)
	}
	for k, vs := range resp.MultiValueHeaders {
		for _, v := range vs {
			w.Header().Add(k, v)
		}
	}
	for _, c := range resp.Cookies {
		w.Header().Add("Set-Cookie", c)
	}
	body := []byte(resp.Body)
	if resp.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(resp.Body)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		body = b
	}
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(resp.StatusCode)
	w.Write(body)
}
