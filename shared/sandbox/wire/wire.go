package wire

import (
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/tool"
)

const (
	// HealthPath answers 200 without a token, for health checks.
	HealthPath = "/healthz"
	// ToolsPath is the prefix of POST /v1/tools/{name}.
	ToolsPath = "/v1/tools/"

	// AuthorizationHeader carries the bearer token: "Bearer TOKEN".
	AuthorizationHeader = "Authorization"
	// BearerScheme is the only authorization scheme sandboxd accepts
	// (matched without regard to case).
	BearerScheme = "Bearer"
	// IdempotencyHeader names a call: a retried request with the same key
	// gets the first call's result and never runs the tool twice. Its value
	// is 1 to MaxIdempotencyKey visible ASCII characters (ValidIdempotencyKey).
	IdempotencyHeader = "Idempotency-Key"
	// ContentType is the media type of every request body and answer.
	ContentType = "application/json"

	// TokenEnv is the environment variable sandboxd serve reads its bearer
	// token from (and then removes).
	TokenEnv = "SANDBOXD_TOKEN"
	// MinTokenLength is the shortest token sandboxd accepts (CheckToken).
	MinTokenLength = 16

	// MaxBodyBytes is the largest request body accepted (413 beyond).
	MaxBodyBytes = 16 << 20
	// MaxAnswerBytes bounds the body of an answer a caller reads. It is
	// above the largest answer any sandbox tool gives (read's 2000 lines
	// of 4000 characters, JSON-escaped), so a longer body is not sandboxd's.
	MaxAnswerBytes = 64 << 20
	// MaxIdempotencyKey is the longest Idempotency-Key accepted.
	MaxIdempotencyKey = 255

	// DefaultToolTimeout is sandboxd's tool timeout when the fleet sets no
	// tool_timeout_seconds: sandboxd stops a tool after it.
	DefaultToolTimeout = 120 * time.Second
)

// Result is the body of a 200 answer: the tool's result,
// {"output": "…", "is_error": false}.
type Result = tool.Result

// ErrorBody is the body of every answer that is not 200.
type ErrorBody struct {
	Error string `json:"error"`
}

// HealthBody is the body of GET /healthz; Status is HealthOK.
type HealthBody struct {
	Status string `json:"status"`
}

// HealthOK is HealthBody.Status of a healthy sandboxd.
const HealthOK = "ok"

// ToolPath is the path of POST /v1/tools/{name}.
func ToolPath(name string) string { return ToolsPath + name }

// Bearer is the Authorization header value for token.
func Bearer(token string) string { return BearerScheme + " " + token }

// BearerToken returns the token of an Authorization header value
// "Bearer TOKEN", and false for any other scheme or none.
func BearerToken(header string) (string, bool) {
	scheme, tok, ok := strings.Cut(header, " ")
	if !ok || !strings.EqualFold(scheme, BearerScheme) {
		return "", false
	}
	return strings.TrimSpace(tok), true
}

// CheckToken says what is wrong with token as sandboxd's bearer token, or
// returns nil: it must be at least MinTokenLength bytes of visible ASCII
// (no spaces or control characters, so that it reaches sandboxd unchanged
// in a header). The error never contains the token.
func CheckToken(token string) error {
	if len(token) < MinTokenLength {
		return fmt.Errorf("the token must be at least %d bytes", MinTokenLength)
	}
	if !visibleASCII(token) {
		return fmt.Errorf("the token must be visible ASCII characters, without spaces")
	}
	return nil
}

// ValidIdempotencyKey reports whether k can be an Idempotency-Key: 1 to
// MaxIdempotencyKey visible ASCII characters.
func ValidIdempotencyKey(k string) bool {
	return len(k) > 0 && len(k) <= MaxIdempotencyKey && visibleASCII(k)
}

// IsObject reports whether b is one JSON object (with optional white space
// around it): what a tools call's body must be.
func IsObject(b []byte) bool {
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i < len(b) && b[i] == '{' && json.Valid(b)
}

func visibleASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// ForbiddenEnv says why sandboxd --env refuses name (and a launcher with
// it), or "" when the variable may reach commands, or "" when it may pass. Names
// are compared without case.
func ForbiddenEnv(name string) string {
	if !isEnvName(name) {
		return "not a variable name (letters, digits and _, not starting with a digit); name one variable a flag"
	}
	if why := forbiddenPrefix(name); why != "" {
		return why
	}
	up := strings.ToUpper(name)
	for _, word := range []string{"TOKEN", "SECRET", "KEY", "PASSWORD", "PASSWD", "CREDENTIAL"} {
		if strings.Contains(up, word) {
			return "the name says it holds a secret (it contains " + word + "): secrets reach a fleet only as «secret:NAME» references, filled outside the sandbox"
		}
	}
	return ""
}

// forbiddenPrefix says why a variable named name (of any case) never
// reaches a command, by its prefix, or "".
func forbiddenPrefix(name string) string {
	up := strings.ToUpper(name)
	for _, p := range []struct{ prefix, why string }{
		{"AWS_", "AWS variables hold credentials and configuration of the account: commands never see them"},
		{"ECS_", "ECS variables lead to the task's metadata and credentials: commands never see them"},
		{"SANDBOXD_", "sandboxd's own variables (its token) are never passed on"},
		{"AGENTSFLEET_", "agentsfleet's own variables (the confinement policy among them) are never passed on"},
		{"LD_", "the dynamic loader's variables would reach the trampoline, which starts as root"},
	} {
		if strings.HasPrefix(up, p.prefix) {
			return p.why
		}
	}
	return ""
}

func isEnvName(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c == '_' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || i > 0 && '0' <= c && c <= '9') {
			return false
		}
	}
	return true
}
