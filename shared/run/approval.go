package run

import (
	"encoding/json"
	"time"
)

// The approval events (DESIGN §11): a call that waits for a person, and
// the person's decision.
const (
	EventApprovalRequested = "approval.requested"
	EventApprovalDecided   = "approval.decided"
)

// ApprovalRequested is approval.requested's data: the call that waits,
// its arguments screened for the fleet's secret values.
type ApprovalRequested struct {
	ApprovalID string          `json:"approval_id"`
	CallID     string          `json:"call_id"`
	Tool       string          `json:"tool"`
	Arguments  json.RawMessage `json:"arguments"`
	ExpiresAt  time.Time       `json:"expires_at"`
	// Secret, Host and Method, for the use of a secret that says approve
	// = true: approving lets the run fill it for Host from then on.
	Secret string `json:"secret,omitempty"`
	Host   string `json:"host,omitempty"`
	Method string `json:"method,omitempty"`
}

// ApprovalDecided is approval.decided's data. By is who decided: an API
// key's id ("key:<id>"), a Slack user ("slack:<team>/<user>"), or
// DecidedByExpiry.
type ApprovalDecided struct {
	ApprovalID string   `json:"approval_id"`
	Decision   Decision `json:"decision"`
	By         string   `json:"by"`
	Note       string   `json:"note,omitempty"`
}

// Decision is what became of an approval.
type Decision string

// The decisions. A person approves or denies; nobody answering by its
// expiry expires it, which the call takes as a denial.
const (
	DecisionPending Decision = "pending"
	DecisionApprove Decision = "approve"
	DecisionDeny    Decision = "deny"
	DecisionExpired Decision = "expired"
)

// DecidedByExpiry is the By of an approval that expired.
const DecidedByExpiry = "agentsfleet (expired)"

// SecretGrant is how a run's grants name the approved use of secret for
// host (store.Run.SecretGrants, which the webtools function checks).
func SecretGrant(secret, host string) string { return secret + " " + host }

// MaxApprovalNote bounds a decision's note, in bytes.
const MaxApprovalNote = 2000

// PendingApproval is one entry of GET /v1/runs/{id}'s pending_approvals.
type PendingApproval struct {
	ApprovalID  string          `json:"approval_id"`
	CallID      string          `json:"call_id"`
	Tool        string          `json:"tool"`
	Arguments   json.RawMessage `json:"arguments"`
	RequestedAt time.Time       `json:"requested_at"`
	ExpiresAt   time.Time       `json:"expires_at"`
	Secret      string          `json:"secret,omitempty"`
	Host        string          `json:"host,omitempty"`
	Method      string          `json:"method,omitempty"`
}
