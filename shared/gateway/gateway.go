// Package gateway serves API Gateway HTTP API requests (payload format 2.0)
// with an http.Handler: the Lambda handlers of the api and slack functions
// are their net/http handlers, as `agentsfleet dev` serves them.
package gateway

import (
	"bytes"
	"context"
	"encoding/base64"
	"net/http"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// Serve serves req with h: a body API Gateway sent base64-encoded is
// decoded; an answer that is not UTF-8 goes back base64-encoded. Repeated
// headers reach h as API Gateway joined them, with commas, so a signature
// header sent twice is one value that does not verify.
func Serve(ctx context.Context, h http.Handler, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	body := []byte(req.Body)
	if req.IsBase64Encoded {
		b, err := base64.StdEncoding.DecodeString(req.Body)
		if err != nil {
			return failed(http.StatusBadRequest, "the request body is not valid base64")
		}
		body = b
	}
	target := req.RawPath
	if target == "" {
		target = "/"
	}
	if req.RawQueryString != "" {
		target += "?" + req.RawQueryString
	}
	method := req.RequestContext.HTTP.Method
	if method == "" {
		method = http.MethodGet
	}
	r, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return failed(http.StatusBadRequest, "the request line cannot be read")
	}
	for k, v := range req.Headers {
		// API Gateway joins repeated headers with commas; a signature
		// header repeated stays one value that does not verify.
		r.Header.Set(k, v)
	}
	if len(req.Cookies) > 0 {
		r.Header.Set("Cookie", strings.Join(req.Cookies, "; "))
	}
	r.RemoteAddr = req.RequestContext.HTTP.SourceIP
	r.Host = req.RequestContext.DomainName
	w := &writer{header: http.Header{}}
	h.ServeHTTP(w, r)
	resp := events.APIGatewayV2HTTPResponse{StatusCode: w.status, Headers: map[string]string{}}
	if resp.StatusCode == 0 {
		resp.StatusCode = http.StatusOK
	}
	for k, v := range w.header {
		resp.Headers[k] = strings.Join(v, ", ")
	}
	if utf8.Valid(w.body.Bytes()) {
		resp.Body = w.body.String()
	} else {
		resp.Body, resp.IsBase64Encoded = base64.StdEncoding.EncodeToString(w.body.Bytes()), true
	}
	return resp
}

func failed(status int, msg string) events.APIGatewayV2HTTPResponse {
	return events.APIGatewayV2HTTPResponse{StatusCode: status, Headers: map[string]string{"Content-Type": "application/json"},
		Body: `{"error":{"code":"` + fault.RequestInvalid.ID() + `","message":"` + msg + `"}}`}
}

// writer collects an answer for API Gateway.
type writer struct {
	header http.Header
	status int
	body   bytes.Buffer
}

func (w *writer) Header() http.Header { return w.header }

func (w *writer) WriteHeader(status int) {
	if w.status == 0 {
		w.status = status
	}
}

func (w *writer) Write(b []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.body.Write(b)
}
