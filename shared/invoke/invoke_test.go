package invoke_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/lambda"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
)

func TestLocal(t *testing.T) {
	t.Parallel()
	l := invoke.NewLocal(nil)
	defer l.Close()
	var started atomic.Int32
	done := make(chan []byte, 1)
	l.Register("echo", func(_ context.Context, p []byte) ([]byte, error) { return append([]byte("echo "), p...), nil })
	l.Register("fail", func(context.Context, []byte) ([]byte, error) { return nil, errors.New("boom") })
	l.Register("bg", func(ctx context.Context, p []byte) ([]byte, error) {
		started.Add(1)
		done <- p
		return nil, nil
	})
	out, err := l.Call(context.Background(), "echo", []byte("hi"))
	if err != nil || string(out) != "echo hi" {
		t.Errorf("Call(echo) = %q, %v", out, err)
	}
	var fe *invoke.FunctionError
	if _, err := l.Call(context.Background(), "fail", nil); !errors.As(err, &fe) || fe.Message != "boom" {
		t.Errorf("Call(fail) = %v, want a FunctionError boom", err)
	}
	if _, err := l.Call(context.Background(), "nope", nil); !errors.Is(err, invoke.ErrUnknownFunction) || !strings.Contains(err.Error(), "bg, echo, fail") {
		t.Errorf("Call(nope) = %v, want ErrUnknownFunction listing the names", err)
	}
	// Start returns before the call runs, and the call outlives the
	// caller's context.
	ctx, cancel := context.WithCancel(context.Background())
	payload := []byte("later")
	if err := l.Start(ctx, "bg", payload); err != nil {
		t.Fatal(err)
	}
	cancel()
	payload[0] = 'X' // the call got a copy
	if got := <-done; string(got) != "later" {
		t.Errorf("started call got %q", got)
	}
	l.Wait()
	if started.Load() != 1 {
		t.Errorf("started %d calls", started.Load())
	}
}

// fakeLambda is the Lambda Invoke API: POST /2015-03-31/functions/{name}/invocations.
func fakeLambda(t *testing.T) (*lambda.Client, *[]string) {
	var seen []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		seen = append(seen, r.Method+" "+r.URL.EscapedPath()+" "+r.Header.Get("X-Amz-Invocation-Type")+" "+string(body))
		switch {
		case strings.Contains(r.URL.Path, "/functions/broken/"):
			w.Header().Set("X-Amz-Function-Error", "Unhandled")
			w.Write([]byte(`{"errorMessage":"lease lost","errorType":"errorString"}`))
		case r.Header.Get("X-Amz-Invocation-Type") == "Event":
			w.WriteHeader(http.StatusAccepted)
		default:
			w.Write([]byte(`{"output":"ok","is_error":false}`))
		}
	}))
	t.Cleanup(srv.Close)
	client := lambda.New(lambda.Options{Region: "us-east-1", BaseEndpoint: aws.String(srv.URL),
		Credentials: credentials.NewStaticCredentialsProvider("a", "b", "")})
	return client, &seen
}

func TestLambda(t *testing.T) {
	t.Parallel()
	client, seen := fakeLambda(t)
	l := invoke.NewLambda(client, map[string]string{invoke.Webtools: "af-webtools", invoke.Runner: "af-runner", "x": "broken"})
	out, err := l.Call(context.Background(), invoke.Webtools, []byte(`{"tool":"webfetch"}`))
	if err != nil || string(out) != `{"output":"ok","is_error":false}` {
		t.Errorf("Call = %q, %v", out, err)
	}
	if err := l.Start(context.Background(), invoke.Runner, []byte(`{"run_id":"r1"}`)); err != nil {
		t.Errorf("Start = %v", err)
	}
	var fe *invoke.FunctionError
	if _, err := l.Call(context.Background(), "x", nil); !errors.As(err, &fe) || fe.Message != "lease lost" {
		t.Errorf("Call(broken) = %v, want a FunctionError with the function's message", err)
	}
	if _, err := l.Call(context.Background(), invoke.Slack, nil); !errors.Is(err, invoke.ErrUnknownFunction) {
		t.Errorf("Call(slack) = %v, want ErrUnknownFunction", err)
	}
	want := []string{
		`POST /2015-03-31/functions/af-webtools/invocations RequestResponse {"tool":"webfetch"}`,
		`POST /2015-03-31/functions/af-runner/invocations Event {"run_id":"r1"}`,
	}
	for i, w := range want {
		if i >= len(*seen) || (*seen)[i] != w {
			t.Errorf("request %d = %q, want %q", i, (*seen)[i:], w)
		}
	}
}
