package gateway_test

import (
	"context"
	"encoding/base64"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentsfleet/agentsfleet/shared/gateway"
)

func TestServe(t *testing.T) {
	t.Parallel()
	echo := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Add("X-Seen", r.Method+" "+r.URL.RequestURI()+" "+r.Header.Get("X-Sig")+" "+r.Host)
		w.Header().Add("X-Multi", "a")
		w.Header().Add("X-Multi", "b")
		if string(b) == "binary" {
			w.Write([]byte{0xff, 0xfe})
			return
		}
		w.WriteHeader(http.StatusTeapot)
		w.Write(b)
	})
	req := events.APIGatewayV2HTTPRequest{RawPath: "/v1/x", RawQueryString: "after=3", Headers: map[string]string{"x-sig": "v1=a,v1=b"},
		Body: base64.StdEncoding.EncodeToString([]byte("hello")), IsBase64Encoded: true}
	req.RequestContext.HTTP.Method = "POST"
	req.RequestContext.DomainName = "api.example.com"
	resp := gateway.Serve(context.Background(), echo, req)
	if resp.StatusCode != http.StatusTeapot || resp.Body != "hello" || resp.IsBase64Encoded ||
		resp.Headers["X-Seen"] != "POST /v1/x?after=3 v1=a,v1=b api.example.com" || resp.Headers["X-Multi"] != "a, b" {
		t.Fatalf("Serve = %+v", resp)
	}
	req.Body = base64.StdEncoding.EncodeToString([]byte("binary"))
	if resp := gateway.Serve(context.Background(), echo, req); resp.StatusCode != 200 || !resp.IsBase64Encoded || resp.Body != "//4=" {
		t.Fatalf("a binary answer = %+v, want it base64-encoded", resp)
	}
	req.Body = "not base64!"
	if resp := gateway.Serve(context.Background(), echo, req); resp.StatusCode != http.StatusBadRequest {
		t.Fatalf("a body that is not base64 = %+v, want 400", resp)
	}
}
