package wire_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/wire"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

func TestCheckToken(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		token string
		want  string // "" for a good token
	}{
		{"0123456789abcdef", ""},
		{strings.Repeat("Z", 64) + "-._~+/=", ""},
		{"", "at least 16 bytes"},
		{"0123456789abcde", "at least 16 bytes"},
		{"0123456789 abcdef", "visible ASCII"},
		{"0123456789abcdef\n", "visible ASCII"},
		{"0123456789abcdéf", "visible ASCII"},
	} {
		err := wire.CheckToken(tt.token)
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("CheckToken(%q) = %v, want nil", tt.token, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("CheckToken(%q) = %v, want an error containing %q", tt.token, err, tt.want)
		case err != nil && tt.token != "" && strings.Contains(err.Error(), tt.token):
			t.Errorf("CheckToken's error shows the token: %v", err)
		}
	}
}

func TestValidIdempotencyKey(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		key  string
		want bool
	}{
		{"k", true},
		{"run-1/step-2:call_abc", true},
		{strings.Repeat("k", wire.MaxIdempotencyKey), true},
		{"", false},
		{strings.Repeat("k", wire.MaxIdempotencyKey+1), false},
		{"a b", false},
		{"a\tb", false},
		{"ключ", false},
	} {
		if got := wire.ValidIdempotencyKey(tt.key); got != tt.want {
			t.Errorf("ValidIdempotencyKey(%q) = %v, want %v", tt.key, got, tt.want)
		}
	}
}

func TestIsObject(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		body string
		want bool
	}{
		{`{}`, true},
		{" \n{\"path\":\"a\"}\t", true},
		{``, false},
		{`  `, false},
		{`[]`, false},
		{`"x"`, false},
		{`null`, false},
		{`{"a":`, false},
		{`{} {}`, false},
	} {
		if got := wire.IsObject([]byte(tt.body)); got != tt.want {
			t.Errorf("IsObject(%q) = %v, want %v", tt.body, got, tt.want)
		}
	}
}

func TestBearer(t *testing.T) {
	t.Parallel()
	const tok = "0123456789abcdef"
	if got, ok := wire.BearerToken(wire.Bearer(tok)); !ok || got != tok {
		t.Errorf("BearerToken(Bearer(%q)) = %q, %v", tok, got, ok)
	}
	for _, h := range []string{"bearer " + tok, "BEARER  " + tok + " "} {
		if got, ok := wire.BearerToken(h); !ok || got != tok {
			t.Errorf("BearerToken(%q) = %q, %v; want %q", h, got, ok, tok)
		}
	}
	for _, h := range []string{"", tok, "Basic " + tok, "Bearer"} {
		if got, ok := wire.BearerToken(h); ok {
			t.Errorf("BearerToken(%q) = %q, true; want false", h, got)
		}
	}
}

func TestShapes(t *testing.T) {
	t.Parallel()
	if got, want := wire.ToolPath("bash"), "/v1/tools/bash"; got != want {
		t.Errorf("ToolPath(bash) = %q, want %q", got, want)
	}
	for _, tt := range []struct {
		v    any
		want string
	}{
		{wire.Result(tool.Result{Output: "hi", IsError: true}), `{"output":"hi","is_error":true}`},
		{wire.ErrorBody{Error: "unknown tool"}, `{"error":"unknown tool"}`},
		{wire.HealthBody{Status: wire.HealthOK}, `{"status":"ok"}`},
	} {
		b, err := json.Marshal(tt.v)
		if err != nil || string(b) != tt.want {
			t.Errorf("json of %#v = %s, %v; want %s", tt.v, b, err, tt.want)
		}
	}
}
