// Package wire holds the HTTP API's shapes (DESIGN.md §11): what the
// handlers of package api answer with and what shared/api/client decodes.
// Run events are run.Event; errors are {"error": {"code", "message"}}.
//
// It imports nothing but the standard library and the run vocabulary
// (shared/run), so that the Go client links neither the server, the store,
// the agent loop nor the AWS SDK.
package wire

import (
	"encoding/json"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/run"
)

// CLIUserAgent is the User-Agent of agentsfleet's Go client (the CLI):
// the revision history says "cli" for the revisions it makes.
const CLIUserAgent = "agentsfleet-cli"

// Fleet is a fleet as the API shows it.
type Fleet struct {
	Name      string    `json:"name"`
	Revision  int64     `json:"revision"`
	Paused    bool      `json:"paused"`
	Hash      string    `json:"hash"`
	Schedules int       `json:"schedules"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Definition is the current revision's, as canonical JSON; only Fleet
	// (one fleet) fills it.
	Definition json.RawMessage `json:"definition,omitempty"`
}

// FleetPage is a page of fleets; Next is the cursor of the next page, ""
// after the last.
type FleetPage struct {
	Fleets []Fleet `json:"fleets"`
	Next   string  `json:"next"`
}

// Applied is the answer to ApplyFleet: the fleet's revision now, and
// whether the Definition was the one it already ran (no new revision).
type Applied struct {
	Name      string `json:"name"`
	Revision  int64  `json:"revision"`
	Unchanged bool   `json:"unchanged,omitempty"`
}

// RunStarted is the answer to a run start, a schedule's run or a cancel.
type RunStarted struct {
	RunID  string     `json:"run_id"`
	Status run.Status `json:"status"`
}

// RunSummary is a run in a list.
type RunSummary struct {
	RunID      string     `json:"run_id"`
	Fleet      string     `json:"fleet"`
	Status     run.Status `json:"status"`
	Source     run.Source `json:"source"`
	Revision   int64      `json:"revision"`
	ScheduleID string     `json:"schedule_id,omitempty"`
	CreatedAt  time.Time  `json:"created_at"`
	StatusAt   time.Time  `json:"status_at"`
}

// Run is one run: its summary, and once it has ended its answer, error and
// usage (package run's Result, whose status is the summary's).
type Run struct {
	RunSummary
	Answer string     `json:"answer"`
	Error  *run.Error `json:"error"`
	Usage  run.Usage  `json:"usage"`
	// Cost is the run's estimated cost, from its run.ended: absent until
	// it ended, and when nothing reckoned it.
	Cost   *run.Cost `json:"cost,omitempty"`
	Reason string    `json:"reason,omitempty"`
	// Egress counts the run's egress log (GET /v1/runs/{id}/egress).
	Egress run.EgressSummary `json:"egress"`
	// PendingApprovals are the calls a waiting run waits on; empty
	// otherwise.
	PendingApprovals []run.PendingApproval `json:"pending_approvals"`
}

// Decision is the body of POST /v1/runs/{id}/approvals/{approval_id}.
type Decision struct {
	Decision run.Decision `json:"decision"`
	Note     string       `json:"note,omitempty"`
}

// Decided is its answer: the approval as decided, and the run's status
// after it (running when it was the last one pending).
type Decided struct {
	ApprovalID string       `json:"approval_id"`
	Decision   run.Decision `json:"decision"`
	By         string       `json:"by"`
	Note       string       `json:"note,omitempty"`
	RunStatus  run.Status   `json:"run_status"`
}

// SetResult sets r's status, answer, error, usage and cost to res, a
// run.ended's.
func (r *Run) SetResult(res run.Result) {
	r.Status, r.Answer, r.Error, r.Usage, r.Cost = res.Status, res.Answer, res.Error, res.Usage, res.Cost
}

// RunPage is a page of a fleet's runs, newest first.
type RunPage struct {
	Runs []RunSummary `json:"runs"`
	Next string       `json:"next"`
}

// Schedule is a schedule as the API shows it.
type Schedule struct {
	ScheduleID string `json:"schedule_id"`
	Fleet      string `json:"fleet"`
	// Source is who created it: person or fleet (system for agentsfleet's
	// own).
	Source    string `json:"source"`
	CreatedBy string `json:"created_by,omitempty"`
	// State is active, paused or removing.
	State      string `json:"state"`
	Expression string `json:"expression"`
	Timezone   string `json:"timezone"`
	Message    string `json:"message"`
	OneShot    bool   `json:"one_shot"`
	// SpendCap is the tokens a day its runs may spend (0: no cap);
	// SpentTokens are what they spent on SpentDay (yyyy-mm-dd in its time
	// zone). PausedReason says why agentsfleet paused it (the cap), until
	// a person resumes it.
	SpendCap     int64     `json:"spend_cap_tokens,omitempty"`
	SpentDay     string    `json:"spent_day,omitempty"`
	SpentTokens  int64     `json:"spent_tokens,omitempty"`
	PausedReason string    `json:"paused_reason,omitempty"`
	CreatedAt    time.Time `json:"created_at"`
	UpdatedAt    time.Time `json:"updated_at"`
}

// NewSchedule is a schedule to create. Expression is EventBridge
// Scheduler's: cron(…), rate(…) or at(yyyy-mm-ddThh:mm:ss); Timezone an
// IANA name ("": UTC); SpendCap the tokens a day its runs may spend (0:
// none).
type NewSchedule struct {
	Expression string `json:"expression"`
	Message    string `json:"message"`
	Timezone   string `json:"timezone,omitempty"`
	SpendCap   int64  `json:"spend_cap_tokens,omitempty"`
}

// SchedulePatch is a change to a schedule: the fields that are not nil.
type SchedulePatch struct {
	Expression *string `json:"expression,omitempty"`
	Message    *string `json:"message,omitempty"`
	Timezone   *string `json:"timezone,omitempty"`
	Paused     *bool   `json:"paused,omitempty"`
	SpendCap   *int64  `json:"spend_cap_tokens,omitempty"`
}

// Key is an API key as the API lists it; never its secret.
type Key struct {
	KeyID      string     `json:"key_id"`
	Name       string     `json:"name"`
	Scopes     []string   `json:"scopes"`
	CreatedAt  time.Time  `json:"created_at"`
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
	Revoked    bool       `json:"revoked"`
	// Fleets are the fleets the key serves; absent, every fleet.
	Fleets []string `json:"fleets,omitempty"`
}

// NewKey is a key just created; Key, its secret, is shown this once.
// Fleets are the fleets it serves; absent, every fleet.
type NewKey struct {
	KeyID  string   `json:"key_id"`
	Key    string   `json:"key"`
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	Fleets []string `json:"fleets,omitempty"`
}

// KeyRequest is POST /v1/keys's body. Fleets, when present, are the fleets
// the key may serve (at least one: an empty list is refused, never read as
// every fleet); absent, those of the key that creates it (every fleet for a
// deployment-wide key).
type KeyRequest struct {
	Name   string   `json:"name"`
	Scopes []string `json:"scopes"`
	Fleets []string `json:"fleets,omitempty"`
}

// Ended reports whether the run has ended: succeeded, failed or cancelled.
func (r RunSummary) Ended() bool {
	return r.Status.Terminal()
}

// StartRequest is POST /v1/fleets/{name}/runs's body.
type StartRequest struct {
	Input          *string `json:"input"`
	ConversationID string  `json:"conversation_id,omitempty"`
	CallbackURL    string  `json:"callback_url,omitempty"`
}

// EventPage is GET /v1/runs/{id}/events: events after the asked seq, and
// next, the after of the following page.
type EventPage struct {
	Events []run.Event `json:"events"`
	Next   int64       `json:"next"`
}

// EgressPage is GET /v1/runs/{id}/egress: a page of the run's outbound
// requests, oldest first, and next, the cursor of the following page (""
// at the end).
type EgressPage struct {
	Egress []run.Egress `json:"egress"`
	Next   string       `json:"next"`
}

// KeyPage is GET /v1/keys.
type KeyPage struct {
	Keys []Key `json:"keys"`
}

// SchedulePage is GET /v1/fleets/{name}/schedules.
type SchedulePage struct {
	Schedules []Schedule `json:"schedules"`
}

// SlackRouteRequest is PUT /v1/slack/routes/{channel}'s body.
type SlackRouteRequest struct {
	Fleet string `json:"fleet"`
}

// SlackRoute is a Slack channel's route: the fleet its mentions reach.
type SlackRoute struct {
	Channel   string    `json:"channel"`
	Fleet     string    `json:"fleet"`
	UpdatedAt time.Time `json:"updated_at"`
}

// ImprovementRequest is the body of POST /v1/fleets/{name}/improvements
// and POST /v1/improvements/{id}/messages.
type ImprovementRequest struct {
	Message string `json:"message"`
}

// ImprovementStarted is the answer to a chat's start or a message: the
// chat, thinking about the message.
type ImprovementStarted struct {
	ImprovementID string `json:"improvement_id"`
	Status        string `json:"status"`
}

// ImprovementMessage is one message of an improvement chat: a person's
// (role "person", By the key id or Slack user) or its agent's ("agent").
type ImprovementMessage struct {
	Role string    `json:"role"`
	Text string    `json:"text"`
	By   string    `json:"by,omitempty"`
	Time time.Time `json:"time"`
}

// Proposal is a chat's proposed revision: the Definition (TOML), the
// unified diff from revision FromRevision, the agent's summary, and the
// scopes a key needs to apply it (fleets:write and its tools' scopes).
type Proposal struct {
	FromRevision int64    `json:"from_revision"`
	Definition   string   `json:"definition"`
	Diff         string   `json:"diff"`
	Summary      string   `json:"summary"`
	Scopes       []string `json:"scopes"`
}

// Improvement is GET /v1/improvements/{id}. Status is open, thinking,
// proposed, applied, discarded, stale or failed; Proposal is null until
// the agent proposes; Error says why the last turn failed.
type Improvement struct {
	ImprovementID   string               `json:"improvement_id"`
	Fleet           string               `json:"fleet"`
	Status          string               `json:"status"`
	Messages        []ImprovementMessage `json:"messages"`
	Proposal        *Proposal            `json:"proposal"`
	Error           string               `json:"error,omitempty"`
	AppliedRevision int64                `json:"applied_revision,omitempty"`
	CreatedAt       time.Time            `json:"created_at"`
	UpdatedAt       time.Time            `json:"updated_at"`
}

// ImprovementApplied is the answer to POST /v1/improvements/{id}/apply.
type ImprovementApplied struct {
	Revision int64 `json:"revision"`
}

// Revision is one revision of a fleet in its history: who made it (By: an
// API key id or a Slack user id), from where (Via: api, cli, slack or
// local), when, and the chat it was applied from or the revision it
// restored.
type Revision struct {
	Revision    int64     `json:"revision"`
	Hash        string    `json:"hash"`
	By          string    `json:"by,omitempty"`
	Via         string    `json:"via,omitempty"`
	Improvement string    `json:"improvement_id,omitempty"`
	Restored    int64     `json:"restored_from,omitempty"`
	CreatedAt   time.Time `json:"created_at"`
}

// RevisionPage is GET /v1/fleets/{name}/revisions, newest first; with
// ?from=A&to=B it also holds Diff, the unified diff from A to B.
type RevisionPage struct {
	Revisions []Revision    `json:"revisions"`
	Next      string        `json:"next"`
	Diff      *RevisionDiff `json:"diff,omitempty"`
}

// RevisionDiff is the difference between two revisions' Definitions (as
// TOML); "" when they are the same.
type RevisionDiff struct {
	From int64  `json:"from"`
	To   int64  `json:"to"`
	Diff string `json:"diff"`
}
