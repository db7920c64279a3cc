package run

// Result is how a run ended: run.ended's data (which adds
// answer_truncated), the answer part of GET /v1/runs/{id}, and a
// completion callback's body (which adds the run's id, fleet and source).
type Result struct {
	Status Status `json:"status"`
	// Answer is the final answer of a run that succeeded; "" otherwise.
	Answer string `json:"answer"`
	// Error says why the run failed; nil (null) unless it did.
	Error *Error `json:"error"`
	Usage Usage  `json:"usage"`
	// Cost is what the run cost, estimated as it ended; nil when the
	// runner reckons no cost (no prices), or when something other than
	// the runner ended the run.
	Cost *Cost `json:"cost,omitempty"`
}

// Cost is what a run cost, in US dollars, estimated (package cost): its
// model tokens, every agent's, at the deployment's prices for its model,
// and its compute, the runner function's time and its sandbox's, at AWS's
// prices. USD is the sum of the two.
type Cost struct {
	USD        float64 `json:"usd"`
	ModelUSD   float64 `json:"model_usd"`
	ComputeUSD float64 `json:"compute_usd"`
	// UnpricedModel names the run's model when the deployment sets no
	// price for it (AGENTSFLEET_MODEL_PRICES): its tokens are not in
	// ModelUSD.
	UnpricedModel string `json:"unpriced_model,omitempty"`
}

// Error is why a run failed: a product code (package shared/fault, such as
// UZ-RUN-402 for a spent budget) or one of the codes below, and a message
// for people.
type Error struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// The codes of a run.ended error that carries no product code. README.md's
// "Limits and error codes" lists each of them (a test checks both ways).
const (
	CodeModel      = "model_error"        // the model failed and retries within the run's deadline did not help
	CodeNoAnswer   = "model_gave_nothing" // the model stopped without text or tool calls
	CodeDefinition = "definition_error"   // the Definition cannot run in this deployment
	CodeStopped    = "runner_stopped"     // the runner was killed (memory, time) twice without handing the run over
	CodeInternal   = "internal_error"     // anything else: the runner's logs say more
)

// Usage is what a run spent: tokens over every model call, and tool calls.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	ToolCalls    int64 `json:"tool_calls"`
}
