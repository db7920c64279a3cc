package server

// The wire contract of sandboxd's HTTP API, in one place. The success body
// is tool.Result: {"output": "…", "is_error": false}.
const (
	// HealthPath answers 200 without a token, for health checks.
	HealthPath = "/healthz"
	// ToolsPath is the prefix of POST /v1/tools/{name}.
	ToolsPath = "/v1/tools/"
	// IdempotencyHeader names a call: a retried request with the same key
	// gets the first call's result and never runs the tool twice.
	IdempotencyHeader = "Idempotency-Key"
	// TokenEnv is the environment variable sandboxd serve reads its bearer
	// token from (and then removes).
	TokenEnv = "SANDBOXD_TOKEN"
	// MaxBodyBytes is the largest request body accepted (413 beyond).
	MaxBodyBytes = 16 << 20
	// MaxIdempotencyKey is the longest Idempotency-Key accepted.
	MaxIdempotencyKey = 255
	// MinTokenLength is the shortest token serve accepts.
	MinTokenLength = 16
)

// ErrorBody is the body of every answer that is not 200.
type ErrorBody struct {
	Error string `json:"error"`
}
