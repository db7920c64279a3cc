package run

import "slices"

// Status is a run's place in its life (DESIGN.md §11).
//
//	queued ──► running ──► succeeded | failed | cancelled
//	  │         ▲    │
//	  │         │    ▼
//	  │        waiting ──► cancelled
//	  └──► cancelled
//
// waiting is a run parked durably (nothing billed) until a person answers,
// such as an approval. succeeded, failed and cancelled are final.
type Status string

// The run statuses.
const (
	StatusQueued    Status = "queued"
	StatusRunning   Status = "running"
	StatusWaiting   Status = "waiting"   // an approval is pending
	StatusSucceeded Status = "succeeded" // ended with an answer
	StatusFailed    Status = "failed"    // ended with an Error
	StatusCancelled Status = "cancelled"
)

// transitions lists, for each status, the statuses a run may move to.
var transitions = map[Status][]Status{
	StatusQueued:  {StatusRunning, StatusCancelled},
	StatusRunning: {StatusSucceeded, StatusFailed, StatusCancelled, StatusWaiting},
	StatusWaiting: {StatusRunning, StatusCancelled},
}

// Terminal reports whether s is final.
func (s Status) Terminal() bool {
	return s == StatusSucceeded || s == StatusFailed || s == StatusCancelled
}

// CanMove reports whether a run may move from status from to status to.
func CanMove(from, to Status) bool { return slices.Contains(transitions[from], to) }

// MovesTo returns the statuses a run may move to status to from, sorted.
func MovesTo(to Status) []Status {
	var from []Status
	for f, tos := range transitions {
		if slices.Contains(tos, to) {
			from = append(from, f)
		}
	}
	slices.Sort(from)
	return from
}

// ChildStatus is a child agent's status.
type ChildStatus string

// The child statuses. running is the only one that is not final.
const (
	ChildRunning     ChildStatus = "running"
	ChildDone        ChildStatus = "done"
	ChildFailed      ChildStatus = "failed"
	ChildInterrupted ChildStatus = "interrupted"
)

// Final reports whether s is a child's last status.
func (s ChildStatus) Final() bool {
	return s == ChildDone || s == ChildFailed || s == ChildInterrupted
}

// Source is where a run came from.
type Source string

// The trigger sources.
const (
	SourceAPI      Source = "api"
	SourceWebhook  Source = "webhook"
	SourceSlack    Source = "slack"
	SourceSchedule Source = "schedule"
)

// Valid reports whether s is one of the sources.
func (s Source) Valid() bool {
	return s == SourceAPI || s == SourceWebhook || s == SourceSlack || s == SourceSchedule
}

// Payload is what the runner function is invoked with: the run to work on
// and, for a child agent's invocation, the child.
type Payload struct {
	RunID   string `json:"run_id"`
	ChildID string `json:"child_id,omitempty"`
}
