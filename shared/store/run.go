package store

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/run"
)

// Source is where a run came from (package run's).
type Source = run.Source

// The trigger sources.
const (
	SourceAPI      = run.SourceAPI
	SourceWebhook  = run.SourceWebhook
	SourceSlack    = run.SourceSlack
	SourceSchedule = run.SourceSchedule
)

// Status is a run's place in its life (package run's, with its diagram).
type Status = run.Status

// The run statuses.
const (
	StatusQueued    = run.StatusQueued
	StatusRunning   = run.StatusRunning
	StatusWaiting   = run.StatusWaiting
	StatusSucceeded = run.StatusSucceeded
	StatusFailed    = run.StatusFailed
	StatusCancelled = run.StatusCancelled
)

// CanMove reports whether a run may move from status from to status to.
func CanMove(from, to Status) bool { return run.CanMove(from, to) }

// Thread is the Slack thread a run answers in, and whom it answers: the
// person whose message started the run (who mentioned the app, or replied in
// the thread) and their team. Slack's chat.startStream wants both outside a
// direct message (recipient_user_id and recipient_team_id); a thread
// recorded without them gets its answer posted, not streamed. GetRun reads
// User and Team; run list pages leave them empty, as the index they are read
// from does not project them.
type Thread struct {
	Channel  string
	ThreadTS string
	User     string // Slack user id, U… or W…; may be empty
	Team     string // the user's Slack team id, T…; may be empty
}

// Budget is a run's spending: its limits, or what it has used. In limits,
// zero means no limit.
type Budget struct {
	Tokens    int64
	ToolCalls int64
}

// Tokens are model tokens by kind: what a model call's price is per.
type Tokens struct {
	Input, Output int64
}

// IdempotencyKey makes run creation safe to retry: a Slack event_id, a
// webhook delivery id or an API Idempotency-Key, within a scope (such as
// "slack", "webhook:<fleet>", "api:<key id>"). The same scope and key start at
// most one run while the key lives (TTL, default DefaultIdempotencyTTL).
type IdempotencyKey struct {
	Scope string
	Key   string
	TTL   time.Duration
}

// NewRun is what CreateRun needs.
type NewRun struct {
	// ID is the run's id; empty makes one (see Store.NewRunID).
	ID     string
	Fleet  string
	Source Source
	// Thread is the Slack thread to answer in; only SourceSlack may carry one.
	Thread *Thread
	// ScheduleID is the schedule that started the run; only with
	// SourceSchedule, which needs one.
	ScheduleID string
	// Revision pins a Definition revision; 0 pins the fleet's current one.
	Revision int64
	// Limits is the run's budget, shared by its children.
	Limits Budget
	// Input is what started the run (the message, the webhook body), kept in
	// an item of its own so that the hot run item stays small.
	Input []byte
	// Idempotency, when set, makes a retry return the first run.
	Idempotency *IdempotencyKey
	// CallbackURL receives the run's result when it ends (checked by the
	// caller against the egress policy); empty for none.
	CallbackURL string
	// Continues is the run whose conversation this one goes on with (a
	// reply in a Slack thread, an API conversation_id); it must be a run
	// of the same fleet (fault.RequestInvalid otherwise).
	Continues string
}

// RunSummary is the part of a run that list pages show.
type RunSummary struct {
	ID         string
	Fleet      string
	Revision   int64
	Source     Source
	Thread     *Thread
	ScheduleID string
	Status     Status
	CreatedAt  time.Time
	StatusAt   time.Time // when Status last changed
}

// Run is a run with its counters.
type Run struct {
	RunSummary
	StatusReason string
	StartedAt    time.Time // first move to running; zero before
	EndedAt      time.Time // move to a final status; zero before
	Limits       Budget
	Spent        Budget
	// Tokens are the model tokens the run's agents used, by kind, as their
	// committed steps say (Step.Tokens); Time is how long the runner
	// function's invocations for it ran, and had its sandbox, each added
	// as it ends (AddRunTime). Its cost is reckoned from them.
	Tokens Tokens
	Time   RunTime
	// Events is the sequence number of the last event (0: none yet).
	Events int64
	// MessageLines counts message lines posted (at most MaxMessageLines).
	MessageLines int
	// ChildrenRunning and ChildrenStarted count child agents.
	ChildrenRunning, ChildrenStarted int
	// CheckpointStep is the last committed step (0: none).
	CheckpointStep int64
	// LeaseHolder holds the run's lease until LeaseUntil; empty when free.
	LeaseHolder string
	LeaseUntil  time.Time
	// LapsedHolder is set only in what AcquireLease returns: the holder
	// whose lease had lapsed unrenewed (an invocation that died holding
	// it) and that this acquisition took over; empty when the lease was
	// free, released or the caller's own.
	LapsedHolder string
	// CallbackURL receives the run's result when it ends; empty for none.
	CallbackURL string
	// Continues is the run whose conversation this one goes on with.
	Continues string
	// Notified is true once the runner has told where the run came from
	// that it ended (its callback, its Slack thread): MarkRunNotified.
	Notified bool
	// PendingApprovals counts the approvals a waiting run waits for
	// (ListApprovals has them); it stays as it was when the run is
	// cancelled while waiting.
	PendingApprovals int
	// SecretGrants are the secrets a person approved for a host in this
	// run (a secret that says approve = true), each run.SecretGrant(name,
	// host), in the order approved.
	SecretGrants []string
}

// unlimited stands for "no limit" in the remaining-budget counters: far
// beyond anything a run spends, far below DynamoDB's number range.
const unlimited int64 = 1 << 62

type runRecord struct {
	PK         string     `dynamodbav:"pk"`
	SK         string     `dynamodbav:"sk"`
	GSI1PK     string     `dynamodbav:"gsi1pk,omitempty"`
	GSI1SK     string     `dynamodbav:"gsi1sk,omitempty"`
	Kind       string     `dynamodbav:"kind"`
	ID         string     `dynamodbav:"id"`
	Fleet      string     `dynamodbav:"fleet"`
	Rev        int64      `dynamodbav:"rev"`
	Source     Source     `dynamodbav:"source"`
	Channel    string     `dynamodbav:"channel,omitempty"`
	ThreadTS   string     `dynamodbav:"threadTs,omitempty"`
	SlackUser  string     `dynamodbav:"slackUser,omitempty"`
	SlackTeam  string     `dynamodbav:"slackTeam,omitempty"`
	ScheduleID string     `dynamodbav:"scheduleId,omitempty"`
	Status     Status     `dynamodbav:"status"`
	Reason     string     `dynamodbav:"reason,omitempty"`
	CreatedAt  time.Time  `dynamodbav:"createdAt"`
	StatusAt   time.Time  `dynamodbav:"statusAt"`
	StartedAt  *time.Time `dynamodbav:"startedAt,omitempty"`
	EndedAt    *time.Time `dynamodbav:"endedAt,omitempty"`
	TokLimit   int64      `dynamodbav:"tokLimit"`
	CallLimit  int64      `dynamodbav:"callLimit"`
	TokUsed    int64      `dynamodbav:"tokUsed"`
	CallUsed   int64      `dynamodbav:"callUsed"`
	TokLeft    int64      `dynamodbav:"tokLeft"`
	CallLeft   int64      `dynamodbav:"callLeft"`
	EvtSeq     int64      `dynamodbav:"evtSeq"`
	MsgLines   int        `dynamodbav:"msgLines"`
	KidsRun    int        `dynamodbav:"kidsRun"`
	KidsTotal  int        `dynamodbav:"kidsTotal"`
	CkptStep   int64      `dynamodbav:"ckptStep"`
	Holder     string     `dynamodbav:"leaseHolder,omitempty"`
	LeaseUntil int64      `dynamodbav:"leaseUntil,omitempty"` // Unix ms
	Callback   string     `dynamodbav:"callback,omitempty"`
	Continues  string     `dynamodbav:"continues,omitempty"`
	Notified   bool       `dynamodbav:"notified,omitempty"`
	AprPending int        `dynamodbav:"aprPending,omitempty"`
	Grants     []string   `dynamodbav:"secretGrants,omitempty"`
	InTok      int64      `dynamodbav:"inTok,omitempty"`
	OutTok     int64      `dynamodbav:"outTok,omitempty"`
	RunnerMs   int64      `dynamodbav:"runnerMs,omitempty"`
	SandboxMs  int64      `dynamodbav:"sandboxMs,omitempty"`
	// GSI2: present while the run is queued or running (see ListLapsed).
	GSI2PK string `dynamodbav:"gsi2pk,omitempty"`
	GSI2SK int64  `dynamodbav:"gsi2sk,omitempty"`
}

func (r runRecord) summary() RunSummary {
	sum := RunSummary{ID: r.ID, Fleet: r.Fleet, Revision: r.Rev, Source: r.Source, ScheduleID: r.ScheduleID,
		Status: r.Status, CreatedAt: r.CreatedAt, StatusAt: r.StatusAt}
	if r.ThreadTS != "" {
		sum.Thread = &Thread{Channel: r.Channel, ThreadTS: r.ThreadTS, User: r.SlackUser, Team: r.SlackTeam}
	}
	return sum
}

func (r runRecord) run() Run {
	run := Run{RunSummary: r.summary(), StatusReason: r.Reason,
		Limits:       Budget{Tokens: r.TokLimit, ToolCalls: r.CallLimit},
		Spent:        Budget{Tokens: r.TokUsed, ToolCalls: r.CallUsed},
		Events:       r.EvtSeq,
		MessageLines: r.MsgLines, ChildrenRunning: r.KidsRun, ChildrenStarted: r.KidsTotal,
		CheckpointStep: r.CkptStep, LeaseHolder: r.Holder, CallbackURL: r.Callback, Continues: r.Continues, Notified: r.Notified,
		PendingApprovals: r.AprPending, SecretGrants: r.Grants,
		Tokens: Tokens{Input: r.InTok, Output: r.OutTok},
		Time:   RunTime{Runner: time.Duration(r.RunnerMs) * time.Millisecond, Sandbox: time.Duration(r.SandboxMs) * time.Millisecond}}
	if r.StartedAt != nil {
		run.StartedAt = *r.StartedAt
	}
	if r.EndedAt != nil {
		run.EndedAt = *r.EndedAt
	}
	if r.LeaseUntil != 0 {
		run.LeaseUntil = time.UnixMilli(r.LeaseUntil).UTC()
	}
	return run
}

type inputRecord struct {
	PK   string `dynamodbav:"pk"`
	SK   string `dynamodbav:"sk"`
	Data []byte `dynamodbav:"data"`
}

func runKey(id string) map[string]types.AttributeValue { return key(prefixRun+id, skRun) }

func (nr NewRun) check() error {
	bad := func(format string, args ...any) error { return fault.New(fault.RequestInvalid, format, args...) }
	if err := checkName("fleet name", nr.Fleet); err != nil {
		return err
	}
	if nr.ID != "" {
		if err := checkName("run id", nr.ID); err != nil {
			return err
		}
	}
	if !nr.Source.Valid() {
		return bad("run source %q: want api, webhook, slack or schedule", nr.Source)
	}
	if nr.Thread != nil {
		if nr.Source != SourceSlack {
			return bad("a run from %s has no Slack thread; only a run from slack carries one", nr.Source)
		}
		if nr.Thread.Channel == "" || nr.Thread.ThreadTS == "" {
			return bad("a Slack thread needs both channel and thread ts")
		}
	}
	if (nr.ScheduleID != "") != (nr.Source == SourceSchedule) {
		return bad("a schedule id goes with source schedule and only with it")
	}
	if nr.ScheduleID != "" {
		if err := checkName("schedule id", nr.ScheduleID); err != nil {
			return err
		}
	}
	if nr.Revision < 0 || nr.Limits.Tokens < 0 || nr.Limits.ToolCalls < 0 {
		return bad("revision and limits must not be negative")
	}
	if len(nr.Input) > MaxBlobBytes {
		return fmt.Errorf("run input of %d bytes: %w", len(nr.Input), ErrTooLarge)
	}
	if len(nr.CallbackURL) > 2048 {
		return bad("a callback URL of %d bytes; at most 2048", len(nr.CallbackURL))
	}
	if nr.Idempotency != nil {
		if err := checkIdempotencyKey(nr.Idempotency.Scope, nr.Idempotency.Key); err != nil {
			return err
		}
	}
	return nil
}

// CreateRun creates a queued run of a fleet, pinning a Definition revision.
// The fleet must exist (fault.FleetNotFound) and not be paused
// (fault.FleetPaused); both are checked inside the transaction that writes
// the run. With an idempotency key, the key is claimed in the same
// transaction: a retry, even a concurrent one, creates nothing and returns
// the first run with created false.
func (s *Store) CreateRun(ctx context.Context, nr NewRun) (run Run, created bool, err error) {
	if err := nr.check(); err != nil {
		return Run{}, false, fmt.Errorf("create run of fleet %s: %w", nr.Fleet, err)
	}
	err = s.retry(ctx, func() error {
		var err error
		run, created, err = s.createRun(ctx, nr)
		return err
	})
	if err != nil {
		return Run{}, false, fmt.Errorf("create run of fleet %s: %w", nr.Fleet, err)
	}
	return run, created, nil
}

func (s *Store) createRun(ctx context.Context, nr NewRun) (Run, bool, error) {
	if nr.Idempotency != nil {
		// The common retry: the key is taken. Answer it with a read.
		if id, ok, err := s.idempotentRun(ctx, *nr.Idempotency, nil); err != nil || ok {
			return s.existingRun(ctx, id, err)
		}
	}
	rev, err := s.runRevision(ctx, nr)
	if err != nil {
		return Run{}, false, err
	}
	now := s.now().UTC()
	id := nr.ID
	if id == "" {
		id = newID("run_", now)
	}
	rr := nr.record(id, rev, now)
	t, err := s.createRunTxn(ctx, nr, rr)
	if err != nil {
		return Run{}, false, err
	}
	err = s.commit(ctx, t)
	var claimed keyClaimed
	if errors.As(err, &claimed) {
		return s.existingRun(ctx, claimed.runID, nil)
	}
	if err != nil {
		return Run{}, false, err
	}
	return rr.run(), true, nil
}

// runRevision returns the revision a run of nr pins, checking what can be
// checked before the write: the fleet exists and is not paused, has the
// revision asked for, and has the run nr continues.
func (s *Store) runRevision(ctx context.Context, nr NewRun) (int64, error) {
	fr, err := s.getFleet(ctx, nr.Fleet)
	if err != nil {
		return 0, err
	}
	if fr.Paused {
		return 0, fault.FleetPaused
	}
	rev := nr.Revision
	if rev == 0 {
		rev = fr.Rev
	}
	if rev > fr.Rev {
		return 0, fault.New(fault.RevisionNotFound, "fleet %s has no revision %d", nr.Fleet, rev)
	}
	if nr.Continues != "" {
		prev, err := s.getRun(ctx, nr.Continues)
		if errors.Is(err, fault.RunNotFound) || (err == nil && prev.Fleet != nr.Fleet) {
			return 0, fault.New(fault.RequestInvalid, "there is no run %s of fleet %s to continue", nr.Continues, nr.Fleet)
		}
		if err != nil {
			return 0, err
		}
	}
	return rev, nil
}

// record is the queued run nr creates, with id, pinning rev.
func (nr NewRun) record(id string, rev int64, now time.Time) runRecord {
	rr := runRecord{PK: prefixRun + id, SK: skRun, GSI1PK: prefixFleet + nr.Fleet, GSI1SK: prefixRun + id,
		Kind: "run", ID: id, Fleet: nr.Fleet, Rev: rev, Source: nr.Source, ScheduleID: nr.ScheduleID,
		Status: StatusQueued, CreatedAt: now, StatusAt: now, Callback: nr.CallbackURL, Continues: nr.Continues,
		TokLimit: nr.Limits.Tokens, CallLimit: nr.Limits.ToolCalls, TokLeft: unlimited, CallLeft: unlimited,
		GSI2PK: gsi2Live, GSI2SK: now.UnixMilli()}
	if nr.Limits.Tokens > 0 {
		rr.TokLeft = nr.Limits.Tokens
	}
	if nr.Limits.ToolCalls > 0 {
		rr.CallLeft = nr.Limits.ToolCalls
	}
	if nr.Thread != nil {
		rr.Channel, rr.ThreadTS = nr.Thread.Channel, nr.Thread.ThreadTS
		rr.SlackUser, rr.SlackTeam = nr.Thread.User, nr.Thread.Team
	}
	return rr
}

// keyClaimed is the failure of a run's idempotency claim: the key's live
// claim names runID.
type keyClaimed struct{ runID string }

func (keyClaimed) Error() string { return "idempotency key already claimed" }

// createRunTxn is the transaction that creates rr: the idempotency claim
// (when nr has a key), a check that the fleet exists and is not paused,
// the run, and its input.
func (s *Store) createRunTxn(ctx context.Context, nr NewRun, rr runRecord) (*txn, error) {
	t := s.newTxn()
	if k := nr.Idempotency; k != nil {
		item, w, err := s.idempotencyClaim(*k, rr.ID)
		if err != nil {
			return nil, err
		}
		t.put("idempotency key", item, w, func(old map[string]types.AttributeValue) error {
			id, ok, err := s.idempotentRun(ctx, *k, old)
			switch {
			case err != nil:
				return err
			case !ok:
				return errRetry // the key expired in between
			}
			return keyClaimed{id}
		})
	}
	fw := newWrite().exists()
	t.check("fleet item", fleetKey(nr.Fleet), fw.is("paused", fw.b(false)), s.fleetRefusesRuns(ctx, nr.Fleet))
	ri, err := marshal(rr)
	if err != nil {
		return nil, err
	}
	t.put("run item", ri, newWrite().absent(), failWith(fault.New(fault.RequestInvalid, "a run with id %s exists", rr.ID)))
	if len(nr.Input) > 0 {
		ii, err := marshal(inputRecord{PK: prefixRun + rr.ID, SK: skInput, Data: nr.Input})
		if err != nil {
			return nil, err
		}
		t.put("run input", ii, nil, nil)
	}
	return t, nil
}

// fleetRefusesRuns says why the fleet refused a run: it does not exist, or
// is paused; otherwise it was resumed in between and the create runs again.
func (s *Store) fleetRefusesRuns(ctx context.Context, fleet string) onFail {
	return func(old map[string]types.AttributeValue) error {
		item, err := s.current(ctx, fleetKey(fleet), old)
		switch {
		case err != nil:
			return err
		case item == nil:
			return fault.FleetNotFound
		}
		var fr fleetRecord
		if err := unmarshal(item, &fr); err != nil {
			return err
		}
		if fr.Paused {
			return fault.FleetPaused
		}
		return errRetry
	}
}

// NewRunID returns a fresh run id. Ids sort by creation time.
func (s *Store) NewRunID() string { return newID("run_", s.now()) }

func (s *Store) existingRun(ctx context.Context, id string, err error) (Run, bool, error) {
	if err != nil {
		return Run{}, false, err
	}
	r, err := s.getRun(ctx, id)
	return r.run(), false, err
}

// GetRun returns the run with id, or fault.RunNotFound.
func (s *Store) GetRun(ctx context.Context, id string) (Run, error) {
	r, err := s.getRun(ctx, id)
	if err != nil {
		return Run{}, fmt.Errorf("get run %s: %w", id, err)
	}
	return r.run(), nil
}

func (s *Store) getRun(ctx context.Context, id string) (runRecord, error) {
	var r runRecord
	found, err := s.getRecord(ctx, runKey(id), &r)
	if err == nil && !found {
		err = fault.RunNotFound
	}
	return r, err
}

// runFrom decodes a run item a failed condition sent back (or reads it when
// none came); fault.RunNotFound when there is no run.
func (s *Store) runFrom(ctx context.Context, id string, old map[string]types.AttributeValue) (runRecord, error) {
	item, err := s.current(ctx, runKey(id), old)
	if err != nil {
		return runRecord{}, err
	}
	if item == nil {
		return runRecord{}, fault.RunNotFound
	}
	var r runRecord
	return r, unmarshal(item, &r)
}

// GetRunInput returns what started the run (nil if nothing was stored).
func (s *Store) GetRunInput(ctx context.Context, id string) ([]byte, error) {
	var in inputRecord
	found, err := s.getRecord(ctx, key(prefixRun+id, skInput), &in)
	if err == nil && !found {
		_, err = s.getRun(ctx, id)
	}
	if err != nil {
		return nil, fmt.Errorf("get input of run %s: %w", id, err)
	}
	return in.Data, nil
}

// RunPage is one page of ListRuns. Next is empty on the last page.
type RunPage struct {
	Runs []RunSummary
	Next string
}

// ListRuns returns a fleet's runs newest first, limit a page (0 means 20, at
// most 100), from the opaque cursor a previous page returned ("" for the
// first). It reads GSI1, which DynamoDB updates eventually: a run created or
// moved a moment ago may show its previous state for that moment. An unknown
// fleet fails with fault.FleetNotFound.
func (s *Store) ListRuns(ctx context.Context, fleet, cursor string, limit int) (RunPage, error) {
	start, err := decodeCursor(cursor, prefixFleet+fleet, AttrGSI1PK, AttrGSI1SK, AttrPK, AttrSK)
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs of fleet %s: %w", fleet, err)
	}
	e := newExpr()
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table,
		IndexName: aws.String(IndexGSI1),
		KeyConditionExpression: aws.String(e.n(AttrGSI1PK) + " = " + e.s(prefixFleet+fleet) +
			" AND begins_with(" + e.n(AttrGSI1SK) + ", " + e.s(prefixRun) + ")"),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ExclusiveStartKey:         start,
		ScanIndexForward:          aws.Bool(false),
		Limit:                     aws.Int32(pageSize(limit, 20, 100)),
	})
	if err != nil {
		return RunPage{}, fmt.Errorf("list runs of fleet %s: %w", fleet, err)
	}
	if len(out.Items) == 0 && cursor == "" {
		if _, err := s.getFleet(ctx, fleet); err != nil {
			return RunPage{}, fmt.Errorf("list runs of fleet %s: %w", fleet, err)
		}
	}
	page := RunPage{Runs: make([]RunSummary, 0, len(out.Items)), Next: encodeCursor(out.LastEvaluatedKey)}
	for _, item := range out.Items {
		var r runRecord
		if err := unmarshal(item, &r); err != nil {
			return RunPage{}, fmt.Errorf("list runs of fleet %s: %w", fleet, err)
		}
		page.Runs = append(page.Runs, r.summary())
	}
	return page, nil
}

// maxReason bounds the status reason kept on the run item.
const maxReason = 1024

// MarkRunNotified records that the run's end was told where the run came
// from (Run.Notified), so that an invocation after it does not tell it
// again, and one that finds it not told (its teller died first) does.
func (s *Store) MarkRunNotified(ctx context.Context, id string) error {
	e := newExpr()
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       runKey(id),
		UpdateExpression:          aws.String("SET " + e.n("notified") + " = " + e.v(&types.AttributeValueMemberBOOL{Value: true})),
		ConditionExpression:       aws.String("attribute_exists(" + e.n(AttrPK) + ")"),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
	})
	if _, ok := conditionFailed(err); ok {
		return fmt.Errorf("mark run %s notified: %w", id, fault.New(fault.RunNotFound, "no run %s", id))
	}
	if err != nil {
		return fmt.Errorf("mark run %s notified: %w", id, err)
	}
	return nil
}

// RunTime is time a run's cost counts: the runner function's, and its
// sandbox's.
type RunTime struct {
	Runner, Sandbox time.Duration
}

// AddRunTime adds t, one of the runner function's invocations for run id
// (and the time it had the run's sandbox), to the run's Time. A run that
// is gone is not an error: nothing is kept for it.
func (s *Store) AddRunTime(ctx context.Context, id string, t RunTime) error {
	runner, sandbox := t.Runner.Milliseconds(), t.Sandbox.Milliseconds()
	if runner <= 0 && sandbox <= 0 {
		return nil
	}
	w := newWrite().exists()
	if runner > 0 {
		w.add("runnerMs", runner)
	}
	if sandbox > 0 {
		w.add("sandboxMs", sandbox)
	}
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName: &s.table, Key: runKey(id), UpdateExpression: w.update(), ConditionExpression: w.condition(),
		ExpressionAttributeNames: w.nameMap(), ExpressionAttributeValues: w.valueMap(),
	})
	if _, ok := conditionFailed(err); ok {
		return nil
	}
	if err != nil {
		return fmt.Errorf("add the time of run %s: %w", id, err)
	}
	return nil
}

// Transition moves a run to status to, with an optional reason (kept,
// truncated to 1 KiB, for people to read). The move is a conditional write
// on the status the run has, so of two concurrent moves at most one wins; a
// move the status diagram does not allow, or that lost, fails with
// fault.RunBadTransition naming both statuses. Ending a run does not stop its
// children: call InterruptRunningChildren.
func (s *Store) Transition(ctx context.Context, id string, to Status, reason string) (Run, error) {
	var from []string
	for _, f := range run.MovesTo(to) {
		from = append(from, string(f))
	}
	if len(from) == 0 {
		// Nothing moves to queued: read the run for an honest message.
		r, err := s.getRun(ctx, id)
		if err == nil {
			err = fault.New(fault.RunBadTransition, "run %s cannot move from %s to %s", id, r.Status, to)
		}
		return Run{}, fmt.Errorf("move run %s to %s: %w", id, to, err)
	}
	if len(reason) > maxReason {
		reason = strings.ToValidUTF8(reason[:maxReason], "")
	}
	now := s.now().UTC()
	e := newExpr()
	set := "SET " + e.n("status") + " = " + e.s(string(to)) + ", " + e.n("statusAt") + " = " + e.t(now)
	if reason != "" {
		set += ", " + e.n("reason") + " = " + e.s(reason)
	}
	if to == StatusRunning {
		set += ", " + e.n("startedAt") + " = if_not_exists(" + e.n("startedAt") + ", " + e.t(now) + ")"
	}
	if to.Terminal() {
		set += ", " + e.n("endedAt") + " = " + e.t(now)
	}
	// Only queued and running runs are in GSI2 (ListLapsed): a waiting run
	// is parked, with nobody meant to hold it, until a person answers.
	if to == StatusRunning {
		set += ", " + e.n(AttrGSI2PK) + " = " + e.s(gsi2Live)
	} else {
		set += " REMOVE " + e.n(AttrGSI2PK)
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                           &s.table,
		Key:                                 runKey(id),
		UpdateExpression:                    aws.String(set),
		ConditionExpression:                 aws.String("attribute_exists(" + e.n(AttrPK) + ") AND " + e.in("status", from...)),
		ExpressionAttributeNames:            e.nameMap(),
		ExpressionAttributeValues:           e.valueMap(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	var r runRecord
	err := s.retry(ctx, func() error {
		out, err := s.db.UpdateItem(ctx, in)
		if old, ok := conditionFailed(err); ok {
			cur, err := s.runFrom(ctx, id, old)
			if err != nil {
				return err
			}
			if CanMove(cur.Status, to) {
				return errRetry // it moved between the write and the read
			}
			return fault.New(fault.RunBadTransition, "run %s cannot move from %s to %s", id, cur.Status, to)
		}
		if err != nil {
			return err
		}
		return unmarshal(out.Attributes, &r)
	})
	if err != nil {
		return Run{}, fmt.Errorf("move run %s to %s: %w", id, to, err)
	}
	return r.run(), nil
}
