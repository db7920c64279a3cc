package run

import "encoding/json"

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
	Fleet    string `json:"fleet"`
	Revision int64  `json:"revision"`
	Source   Source `json:"source"`
}

// ToolCall is tool.call's data.
type ToolCall struct {
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments"`
}

// ToolResult is tool.result's data. Output is cut at MaxEventOutput bytes
// (the model got it whole); Truncated says so. Image is the picture the
// call made (a screenshot), by reference: an event is a DynamoDB item and
// API output, and never holds the image's data.
type ToolResult struct {
	CallID    string    `json:"call_id"`
	Name      string    `json:"name"`
	Output    string    `json:"output"`
	IsError   bool      `json:"is_error"`
	Truncated bool      `json:"truncated,omitempty"`
	Image     *ImageRef `json:"image,omitempty"`
}

// ImageRef is an image a tool made, as events name it: where it is kept
// and what it is.
type ImageRef struct {
	// Ref is the image's object key in the stack's checkpoint bucket,
	// which expires it with the run's checkpoints.
	Ref       string `json:"ref"`
	MediaType string `json:"media_type"`
	Width     int    `json:"width"`
	Height    int    `json:"height"`
	// Bytes is the size of the encoded image.
	Bytes int `json:"bytes"`
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

// ChildStarted is child.started's data, the first event of a child agent:
// who started whom (ParentID: the child that started it; empty for the
// run's own agent), on which task, with which tools.
type ChildStarted struct {
	ChildID  string      `json:"child_id"`
	Status   ChildStatus `json:"status"`
	ParentID string      `json:"parent_id,omitempty"`
	Depth    int         `json:"depth"`
	Task     string      `json:"task"`
	Tools    []string    `json:"tools"`
}

// ChildEnded is child.ended's data. A child that ends by itself writes it
// with its last step; one interrupted writes it through whoever
// interrupted it (the event's agent), InterruptedBy saying who:
// InterruptedByRunEnd when the run ended, the child that called
// interrupt_agent or that itself ended, or InterruptedByAgent for the
// run's own agent.
type ChildEnded struct {
	ChildID         string      `json:"child_id"`
	Status          ChildStatus `json:"status"`
	ParentID        string      `json:"parent_id,omitempty"`
	Answer          string      `json:"answer,omitempty"`
	AnswerTruncated bool        `json:"answer_truncated,omitempty"`
	Error           *Error      `json:"error,omitempty"`
	Usage           *Usage      `json:"usage,omitempty"`
	InterruptedBy   string      `json:"interrupted_by,omitempty"`
}

// The values of ChildEnded.InterruptedBy beside a child id.
const (
	InterruptedByRunEnd = "run_end"
	InterruptedByAgent  = "agent"
)

// RunEnded is run.ended's data: the run's Result and, for an answer longer
// than MaxEventAnswer, which is cut there, AnswerTruncated.
type RunEnded struct {
	Result
	AnswerTruncated bool `json:"answer_truncated,omitempty"`
}

// MaxEventAnswer is how much of the answer run.ended keeps: an event is
// one DynamoDB item.
const MaxEventAnswer = 256 << 10

// Event is a committed event, as the Observer and the CLI see it.
type Event struct {
	Seq  int64  `json:"seq"`
	Type string `json:"type"`
	Time string `json:"time"`
	// Agent is the child agent whose step wrote the event; absent for the
	// run's own agent.
	Agent string          `json:"agent,omitempty"`
	Data  json.RawMessage `json:"data"`
}

// The events of the fleet's folder, committed with run.ended.
const (
	EventFolderSaved    = "folder.saved"
	EventFolderNotSaved = "folder.not_saved"
)

// FolderSaved is folder.saved's data.
type FolderSaved struct {
	Key     string   `json:"key"`
	Files   int      `json:"files"`
	Bytes   int64    `json:"bytes"`
	Archive int64    `json:"archive"`
	Skipped []string `json:"skipped,omitempty"`
}

// FolderNotSaved is folder.not_saved's data: why the run's changes to the
// fleet's folder were not kept.
type FolderNotSaved struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// EventRunInput is run.input: a message that reached the run while it
// worked (a reply in its thread), taken into its next turn.
const EventRunInput = "run.input"

// RunInput is run.input's data.
type RunInput struct {
	Seq  int64  `json:"seq"`
	Text string `json:"text"`
}
