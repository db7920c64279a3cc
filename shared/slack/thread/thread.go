// Package thread is the contract between the runner and the slack λ for
// what a run shows in the Slack thread that started it: the runner never
// holds the Slack token, so it asks the slack λ (invoke.Slack) to post,
// with a Request as the payload and a Response as the answer. The package
// holds only the shapes; shared/slack/post serves them with slack-go.
//
// What a thread shows of a run, in order: a working status with a Stop
// button as the run starts (OpWorking), the plan as one message edited in
// place as update_plan changes it (OpPlan), the message tool's lines
// (OpLine), and the answer (OpAnswer) or why the run did not succeed
// (OpEnded).
package thread

import "strings"

// Op is what a Request asks.
type Op string

// The ops.
const (
	// OpWorking shows that the run is working: a status message with a Stop
	// button (action StopAction, value the run id), and the assistant
	// thread status where Slack offers it.
	OpWorking Op = "working"
	// OpPlan posts the plan, or edits the run's plan message in place.
	OpPlan Op = "plan"
	// OpLine posts one message line, Text, already made safe by the
	// runner: the fleet's secrets replaced, mentions inert.
	OpLine Op = "line"
	// OpAnswer posts the run's answer, Text: streamed into the thread, or
	// uploaded as a file when it is long.
	OpAnswer Op = "answer"
	// OpEnded says the run did not succeed: Status and Text (why).
	OpEnded Op = "ended"
	// OpProposal posts an improvement chat's proposal (Improvement): the
	// agent's answer (Text), its Summary and Diff, with Apply and Discard
	// buttons (ApplyAction, DiscardAction; value the chat's id).
	OpProposal Op = "proposal"
	// OpApproval asks for a person's decision on calls the run waits on
	// ([x-agentsfleet.approval]): Text says what each call would do
	// (screened, made inert by the runner), with Approve and Deny buttons
	// for each of Approvals (ApproveAction, DenyAction; value
	// ApprovalValue's).
	OpApproval Op = "approval"
)

// ApproveAction and DenyAction are the action_ids of an approval's
// buttons; their value is ApprovalValue(run, approval).
const (
	ApproveAction = "agentsfleet_approve"
	DenyAction    = "agentsfleet_deny"
)

// ApprovalValue is the value of an approval's buttons: the run id and the
// approval id, a space between.
func ApprovalValue(runID, approvalID string) string { return runID + " " + approvalID }

// ParseApprovalValue splits ApprovalValue's value.
func ParseApprovalValue(v string) (runID, approvalID string, ok bool) {
	runID, approvalID, ok = strings.Cut(v, " ")
	return runID, approvalID, ok && runID != "" && approvalID != ""
}

// Approval is one call a run waits on, as OpApproval shows it.
type Approval struct {
	ID   string `json:"approval_id"`
	Tool string `json:"tool"`
	// Arguments are the call's, screened and made inert by the runner.
	Arguments string `json:"arguments"`
	// Secret, Host and Method, for the use of a secret that says approve
	// = true (Host made inert by the runner): what the person approves.
	Secret string `json:"secret,omitempty"`
	Host   string `json:"host,omitempty"`
	Method string `json:"method,omitempty"`
}

// ApplyAction and DiscardAction are the action_ids of a proposal's
// buttons; their value is the improvement chat's id.
const (
	ApplyAction   = "agentsfleet_improve_apply"
	DiscardAction = "agentsfleet_improve_discard"
)

// StopAction is the action_id of the Stop button; its value is the run id.
const StopAction = "agentsfleet_stop"

// Request is the slack λ's payload from the runner.
type Request struct {
	Op       Op     `json:"op"`
	RunID    string `json:"run_id"`
	Fleet    string `json:"fleet"`
	Channel  string `json:"channel"`
	ThreadTS string `json:"thread_ts"`
	// User and Team are whom the run answers: the person whose message
	// started it and their team. The answer's stream goes to them, as
	// chat.startStream wants outside a direct message (recipient_user_id,
	// recipient_team_id). Empty for a run recorded without them.
	User string `json:"user,omitempty"`
	Team string `json:"team,omitempty"`
	// Text is the line, the answer, or why the run ended as it did.
	Text string `json:"text,omitempty"`
	// Status is the run's final status (OpAnswer, OpEnded).
	Status string `json:"status,omitempty"`
	// Explanation and Plan are update_plan's (OpPlan).
	Explanation string `json:"explanation,omitempty"`
	Plan        []Step `json:"plan,omitempty"`
	// Improvement, Summary and Diff are a chat's proposal (OpProposal).
	Improvement string `json:"improvement_id,omitempty"`
	Summary     string `json:"summary,omitempty"`
	Diff        string `json:"diff,omitempty"`
	// Approvals are the calls the run waits on (OpApproval), and
	// Expires when they expire (RFC 3339).
	Approvals []Approval `json:"approvals,omitempty"`
	Expires   string     `json:"expires,omitempty"`
}

// Step is one step of a plan: pending, in_progress or completed.
type Step struct {
	Step   string `json:"step"`
	Status string `json:"status"`
}

// Response is the slack λ's answer: whether Slack took the post, and why
// not when it did not.
type Response struct {
	Delivered bool   `json:"delivered"`
	Error     string `json:"error,omitempty"`
}

// Inert makes text from the model notify nobody and show as written: Slack
// reads <…> as mentions (<!channel>, <!here>, <!everyone>, <@U…>,
// <!subteam^…>) and links, so & < > are escaped as Slack's formatting asks
// and each shows as the text it is. A plain @here notifies nobody in a post
// without link_names, which the slack λ never sets. Lines come inert from
// the runner; the slack λ makes plans and answers inert itself.
func Inert(text string) string { return inertReplacer.Replace(text) }

var inertReplacer = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
