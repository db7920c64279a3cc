package runner

import (
	"encoding/json"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

// The run event types of DESIGN §11, and the data each carries. These are
// the shapes the API, `agentsfleet run --output json` and tests read: every
// event is {seq, type, time, data}.
const (
	EventRunStarted    = "run.started"
	EventToolCall      = "tool.call"
	EventToolResult    = "tool.result"
	EventPlanUpdated   = "plan.updated"
	EventMessagePosted = "message.posted"
	EventChildStarted  = "child.started"
	EventChildEnded    = "child.ended"
	EventRunEnded      = "run.ended"
)

// RunStarted is run.started's data.
type RunStarted struct {
	Fleet    string       `json:"fleet"`
	Revision int64        `json:"revision"`
	Source   store.Source `json:"source"`
}

// ToolCall is tool.call's data.
type ToolCall struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult is tool.result's data. Output is cut at MaxEventOutput bytes
// (the model got it whole); Truncated says so.
type ToolResult struct {
	CallID    string `json:"call_id"`
	Name      string `json:"name"`
	Output    string `json:"output"`
	IsError   bool   `json:"is_error"`
	Truncated bool   `json:"truncated,omitempty"`
}

// MaxEventOutput is how much of a tool's output an event keeps.
const MaxEventOutput = 16 << 10

// PlanUpdated is plan.updated's data.
type PlanUpdated struct {
	Explanation string     `json:"explanation"`
	Plan        []PlanStep `json:"plan"`
}

// PlanStep is one step of a plan.
type PlanStep struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

// RunEnded is run.ended's data. An answer longer than MaxEventAnswer is
// cut there, and AnswerTruncated says so.
type RunEnded struct {
	Status          store.Status `json:"status"`
	Answer          string       `json:"answer"`
	AnswerTruncated bool         `json:"answer_truncated,omitempty"`
	Error           *RunError    `json:"error"`
	Usage           Usage        `json:"usage"`
}

// MaxEventAnswer is how much of the answer run.ended keeps: an event is
// one DynamoDB item.
const MaxEventAnswer = 256 << 10

// RunError is why a run failed: a product code (fault) or one of the
// runner's own codes below, and a message for people.
type RunError struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// The runner's own error codes, for failures that carry no product code.
const (
	CodeModel      = "model_error"        // the model failed and retries did not help
	CodeDefinition = "definition_error"   // the Definition cannot run here
	CodeSandbox    = "sandbox_error"      // no sandbox could be had
	CodeInternal   = "internal_error"     // anything else: the logs say more
	CodeMaxTokens  = "answer_cut"         // the model's answer hit its token cap with no tool call
	CodeNoAnswer   = "model_gave_nothing" // the model stopped without text or tool calls
)

// Usage is what a run spent: tokens over every model call and tool calls.
type Usage struct {
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	ToolCalls    int64 `json:"tool_calls"`
}

// Event is a committed event, as the Observer and the CLI see it.
type Event struct {
	Seq  int64           `json:"seq"`
	Type string          `json:"type"`
	Time string          `json:"time"`
	Data json.RawMessage `json:"data"`
}

func newEvent(typ string, data any) store.NewEvent {
	b, err := json.Marshal(data)
	if err != nil {
		panic(err) // the data types above always marshal
	}
	return store.NewEvent{Type: typ, Data: b}
}
