//go:build linux

package client_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
)

// TestToolTimeoutIsSent: WithToolTimeout's tool timeout goes in
// wire.ToolTimeoutHeader, whole seconds rounded up, on every call made
// with it, and on no other.
func TestToolTimeoutIsSent(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var got [][]string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		got = append(got, r.Header.Values(wire.ToolTimeoutHeader))
		mu.Unlock()
		w.Header().Set("Content-Type", wire.ContentType)
		io.WriteString(w, `{"output":"ok","is_error":false}`)
	}))
	defer ts.Close()
	c := newClient(t, client.Config{URL: ts.URL})
	bg := context.Background()
	for _, tt := range []struct {
		ctx  context.Context
		want []string
	}{
		{bg, nil},
		{client.WithToolTimeout(bg, time.Second), []string{"1"}},
		{client.WithToolTimeout(client.WithAgent(bg, "child_1"), 1500*time.Millisecond), []string{"2"}},
		{client.WithAgent(client.WithToolTimeout(bg, 10*time.Minute), "child_1"), []string{"600"}},
		{client.WithToolTimeout(bg, 0), nil},
	} {
		mu.Lock()
		got = nil
		mu.Unlock()
		if _, err := c.Call(tt.ctx, "bash", json.RawMessage(`{"command":"true"}`), "k"); err != nil {
			t.Fatal(err)
		}
		mu.Lock()
		if len(got) != 1 || len(got[0]) != len(tt.want) || len(tt.want) == 1 && got[0][0] != tt.want[0] {
			t.Errorf("%s sent %q, want %q", wire.ToolTimeoutHeader, got, tt.want)
		}
		mu.Unlock()
	}

	// A tool timeout sandboxd would refuse is refused here, unsent.
	mu.Lock()
	got = nil
	mu.Unlock()
	_, err := c.Call(client.WithToolTimeout(bg, 2*time.Hour), "bash", json.RawMessage(`{"command":"true"}`), "")
	wantError(t, err, client.ErrBadRequest, 0, "was not called: call bash: WithToolTimeout: the tool timeout 2h0m0s is longer than 1h0m0s")
	mu.Lock()
	if len(got) != 0 {
		t.Errorf("a refused tool timeout reached the server: %q", got)
	}
	mu.Unlock()
}

// A pooled sandbox's client is made before the fleet is known, with the
// default call timeout; a call's tool timeout bounds the call instead,
// so a fleet's longer timeout is not cut short by the client.
func TestToolTimeoutBoundsTheCall(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case <-time.After(time.Second):
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", wire.ContentType)
		io.WriteString(w, `{"output":"slow","is_error":false}`)
	}))
	defer ts.Close()
	c := newClient(t, client.Config{URL: ts.URL, CallTimeout: 200 * time.Millisecond})
	_, err := c.Call(context.Background(), "bash", json.RawMessage(`{}`), "")
	wantError(t, err, client.ErrUnavailable, 0, "did not answer within 200ms")
	res, err := c.Call(client.WithToolTimeout(context.Background(), 5*time.Second), "bash", json.RawMessage(`{}`), "")
	if err != nil || res.Output != "slow" {
		t.Fatalf("a 1 s answer with a 5 s tool timeout = %q, %v; want it", res.Output, err)
	}
}

// Through a real sandboxd built with a longer timeout (a minute): the
// call's tool timeout of 1 s stops bash.
func TestToolTimeoutReachesSandboxd(t *testing.T) {
	t.Parallel()
	sd := newSandboxd(t)
	c := newClient(t, client.Config{URL: sd.url})
	start := time.Now()
	res, err := c.Call(client.WithToolTimeout(context.Background(), time.Second), "bash", json.RawMessage(`{"command":"sleep 30"}`), "")
	if want := "[timed out after 1 second: the command and every process it started were killed]"; err != nil || res.Output != want || !res.IsError {
		t.Fatalf("bash sleep 30 with a 1 s tool timeout = %q (is_error=%v), %v; want %q", res.Output, res.IsError, err, want)
	}
	if took := time.Since(start); took > 15*time.Second {
		t.Fatalf("bash sleep 30 with a 1 s tool timeout took %v", took)
	}
}
