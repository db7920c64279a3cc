package api

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strconv"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/run/start"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// startRun is POST /v1/fleets/{name}/runs. With an Idempotency-Key header a
// retry (by the same key, within a day) gets the first run back.
func (a *API) startRun(r *http.Request, key store.Key) (int, any, error) {
	var req wire.StartRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	switch {
	case req.Input == nil:
		return 0, nil, needed("input")
	case len(*req.Input) > store.MaxBlobBytes:
		return 0, nil, fault.New(fault.RequestInvalid, "field \"input\" is %d bytes; at most %d", len(*req.Input), store.MaxBlobBytes)
	}
	// conversation_id is the run whose conversation this one goes on with:
	// the new run's model reads that conversation, and its answer (or its
	// callback) can repeat it, so continuing is reading and needs runs:read.
	// The Store refuses a run of another fleet than this one (which the key
	// serves, checked by the route).
	if req.ConversationID != "" && !key.Has(scope.RunsRead) {
		return 0, nil, fault.New(fault.ScopeMissing, "continuing a conversation (conversation_id) reads it: this key lacks the scope %q that it needs beside %q", scope.RunsRead, scope.RunsWrite)
	}
	nr := store.NewRun{Fleet: r.PathValue("name"), Source: store.SourceAPI, Input: []byte(*req.Input), Continues: req.ConversationID}
	if err := a.checkCallback(r.Context(), nr.Fleet, req.CallbackURL); err != nil {
		return 0, nil, err
	}
	nr.CallbackURL = req.CallbackURL
	if k := r.Header.Get("Idempotency-Key"); k != "" {
		nr.Idempotency = &store.IdempotencyKey{Scope: "api:" + key.ID, Key: k}
	}
	run, _, err := start.Run(r.Context(), a.cfg.Store, a.cfg.Invoker, nr)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, wire.RunStarted{RunID: run.ID, Status: run.Status}, nil
}

// checkCallback checks a callback_url: allowed by the egress policy, and
// signable (the fleet has a webhook secret).
func (a *API) checkCallback(ctx context.Context, fleetName, u string) error {
	if u == "" {
		return nil
	}
	if a.cfg.Callbacks == nil {
		return fault.New(fault.RequestInvalid, "field \"callback_url\": this deployment sends no callbacks")
	}
	if err := a.cfg.Callbacks.Check(u); err != nil {
		return fault.New(fault.RequestInvalid, "field \"callback_url\": %v", err)
	}
	_, err := a.cfg.Store.WebhookSecret(ctx, fleetName)
	if errors.Is(err, fault.HookNoSecret) {
		if _, ferr := a.cfg.Store.GetFleet(ctx, fleetName); ferr != nil {
			return ferr
		}
		return fault.New(fault.RequestInvalid, "field \"callback_url\": callbacks are signed with the fleet's webhook secret, and fleet %s has none yet: POST /v1/fleets/%s/webhook-secret first", fleetName, fleetName)
	}
	return err
}

func summaryOf(s store.RunSummary) wire.RunSummary {
	return wire.RunSummary{RunID: s.ID, Fleet: s.Fleet, Status: s.Status, Source: s.Source, Revision: s.Revision,
		ScheduleID: s.ScheduleID, CreatedAt: s.CreatedAt, StatusAt: s.StatusAt}
}

func (a *API) listRuns(r *http.Request, _ store.Key) (int, any, error) {
	limit, err := pageLimit(r)
	if err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	name := r.PathValue("name")
	if _, err := a.cfg.Store.GetFleet(ctx, name); err != nil {
		return 0, nil, err
	}
	page, err := a.cfg.Store.ListRuns(ctx, name, r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return 0, nil, err
	}
	out := make([]wire.RunSummary, len(page.Runs))
	for i, s := range page.Runs {
		out[i] = summaryOf(s)
	}
	return http.StatusOK, wire.RunPage{Runs: out, Next: page.Next}, nil
}

func (a *API) getRun(r *http.Request, _ store.Key) (int, any, error) {
	body, err := RunResult(r.Context(), a.cfg.Store, r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, body, nil
}

// RunResult is a run as GET /v1/runs/{id} shows it: its answer, error and
// usage read from its run.ended once it has ended.
func RunResult(ctx context.Context, st *store.Store, id string) (wire.Run, error) {
	r, err := st.GetRun(ctx, id)
	if err != nil {
		return wire.Run{}, err
	}
	body := wire.Run{RunSummary: summaryOf(r.RunSummary), Reason: r.StatusReason,
		Usage: run.Usage{ToolCalls: r.Spent.ToolCalls}}
	if body.Egress, err = st.EgressSummary(ctx, id); err != nil {
		return wire.Run{}, err
	}
	body.PendingApprovals = []run.PendingApproval{}
	if r.Status == store.StatusWaiting {
		all, err := st.ListApprovals(ctx, id)
		if err != nil {
			return wire.Run{}, err
		}
		for _, a := range all {
			if a.Status == run.DecisionPending {
				body.PendingApprovals = append(body.PendingApprovals, run.PendingApproval{ApprovalID: a.ID, CallID: a.CallID,
					Tool: a.Tool, Arguments: a.Arguments, RequestedAt: a.RequestedAt, ExpiresAt: a.ExpiresAt,
					Secret: a.Secret, Host: a.Host, Method: a.Method})
			}
		}
	}
	if r.Events > 0 {
		evs, _, err := st.ListEvents(ctx, id, r.Events, 1)
		if err != nil {
			return wire.Run{}, err
		}
		if len(evs) == 1 && evs[0].Type == run.EventRunEnded {
			var end run.RunEnded
			if err := json.Unmarshal(evs[0].Data, &end); err == nil {
				body.Answer, body.Error, body.Usage, body.Cost = end.Answer, end.Error, end.Usage, end.Cost
			}
		}
	}
	return body, nil
}

// MaxEventsPage is the most events one GET …/events returns.
const MaxEventsPage = 500

// listEvents is GET /v1/runs/{id}/events?after=N: the events with seq above
// N (0: from the start), at most limit (100, at most MaxEventsPage). next
// is the after of the following page: the last seq returned, or N again
// when there is nothing new yet.
func (a *API) listEvents(r *http.Request, _ store.Key) (int, any, error) {
	after := int64(0)
	if v := r.URL.Query().Get("after"); v != "" {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil || n < 0 {
			return 0, nil, fault.New(fault.RequestInvalid, "after must be a whole number from 0, not %q", v)
		}
		after = n
	}
	limit, err := pageLimit(r)
	if err != nil {
		return 0, nil, err
	}
	limit = min(max(limit, 0), MaxEventsPage)
	evs, _, err := a.cfg.Store.ListEvents(r.Context(), r.PathValue("id"), after+1, limit)
	if err != nil {
		return 0, nil, err
	}
	out := make([]run.Event, len(evs))
	next := after
	for i, ev := range evs {
		out[i] = run.Event{Seq: ev.Seq, Type: ev.Type, Time: ev.At.UTC().Format(time.RFC3339Nano), Agent: ev.Agent, Data: ev.Data}
		next = ev.Seq
	}
	return http.StatusOK, wire.EventPage{Events: out, Next: next}, nil
}

// MaxEgressPage is the most entries one GET …/egress returns.
const MaxEgressPage = 500

// listEgress is GET /v1/runs/{id}/egress?cursor=C&limit=N: the run's
// outbound requests, oldest first, limit a page (100, at most
// MaxEgressPage).
func (a *API) listEgress(r *http.Request, _ store.Key) (int, any, error) {
	limit, err := pageLimit(r)
	if err != nil {
		return 0, nil, err
	}
	id := r.PathValue("id")
	if _, err := a.cfg.Store.GetRun(r.Context(), id); err != nil { // a key of every fleet reaches any id
		return 0, nil, err
	}
	page, err := a.cfg.Store.ListEgress(r.Context(), id, r.URL.Query().Get("cursor"), min(max(limit, 0), MaxEgressPage))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.EgressPage{Egress: page.Egress, Next: page.Next}, nil
}

// cancelRun is POST /v1/runs/{id}/cancel: a queued, running or waiting run
// is cancelled (its runner notices between turns); an ended one answers
// 409 saying how it ended.
//
// A waiting run has no invocation to notice: one is started to end it
// (its run.ended, its Slack thread and callback told).
func (a *API) cancelRun(r *http.Request, _ store.Key) (int, any, error) {
	run, err := a.cfg.Store.Transition(r.Context(), r.PathValue("id"), store.StatusCancelled, "cancelled through the API")
	if err != nil {
		return 0, nil, err
	}
	if run.PendingApprovals > 0 {
		a.startRunner(r.Context(), run.ID)
	}
	return http.StatusOK, wire.RunStarted{RunID: run.ID, Status: run.Status}, nil
}

// decideApproval is POST /v1/runs/{id}/approvals/{approval_id} {decision:
// approve|deny, note?}: the last decision a waiting run needs starts its
// next invocation.
func (a *API) decideApproval(r *http.Request, k store.Key) (int, any, error) {
	var body wire.Decision
	if err := decode(r, &body); err != nil {
		return 0, nil, err
	}
	if body.Decision != run.DecisionApprove && body.Decision != run.DecisionDeny {
		return 0, nil, fault.New(fault.RequestInvalid, "decision must be approve or deny, not %q", body.Decision)
	}
	id := r.PathValue("id")
	ap, resume, err := a.cfg.Store.Decide(r.Context(), id, r.PathValue("approval_id"), body.Decision, "key:"+k.ID, body.Note)
	if err != nil {
		return 0, nil, err
	}
	status := store.StatusWaiting
	if resume {
		status = store.StatusRunning
		a.startRunner(r.Context(), id)
	}
	return http.StatusOK, wire.Decided{ApprovalID: ap.ID, Decision: ap.Status, By: ap.By, Note: ap.Note, RunStatus: status}, nil
}

// startRunner starts a runner invocation for run id. A start that fails
// is logged: the lapsed sweep starts a running run nobody holds.
func (a *API) startRunner(ctx context.Context, id string) {
	if err := start.Invoke(ctx, a.cfg.Invoker, id); err != nil {
		a.log.Error("start the runner for a run", "run_id", id, "error", err)
	}
}

// prettyInput is a webhook body as a run's input: JSON indented (its keys
// and numbers as they came), anything else as it came.
func prettyInput(body []byte) []byte {
	var buf bytes.Buffer
	if json.Indent(&buf, bytes.TrimSpace(body), "", "  ") != nil {
		return body
	}
	return buf.Bytes()
}
