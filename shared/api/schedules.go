package api

import (
	"context"
	"net/http"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/schedule/keeper"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Schedules is what the schedule routes need: *keeper.Keeper, which keeps
// the store and EventBridge Scheduler in step.
type Schedules interface {
	Create(ctx context.Context, fleet string, actor store.Actor, createdBy string, in keeper.Input) (store.Schedule, error)
	List(ctx context.Context, fleet string) ([]store.Schedule, error)
	Update(ctx context.Context, fleet, id string, actor store.Actor, p keeper.Patch) (store.Schedule, error)
	Pause(ctx context.Context, fleet, id string, actor store.Actor) (store.Schedule, error)
	Resume(ctx context.Context, fleet, id string, actor store.Actor) (store.Schedule, error)
	Delete(ctx context.Context, fleet, id string, actor store.Actor) error
	RunNow(ctx context.Context, fleet, id string, actor store.Actor, callerRunID string, idem *store.IdempotencyKey) (store.Run, error)
}

var _ Schedules = (*keeper.Keeper)(nil)

func scheduleOf(s store.Schedule) wire.Schedule {
	return wire.Schedule{ScheduleID: s.ID, Fleet: s.Fleet, Source: string(s.Source), CreatedBy: s.CreatedBy, State: string(s.State),
		Expression: s.Expression, Timezone: s.Timezone, Message: s.Message, OneShot: s.OneShot,
		SpendCap: s.SpendCap, SpentDay: s.SpentDay, SpentTokens: s.SpentTokens, PausedReason: s.PausedReason,
		CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
}

// schedules returns the keeper, or an error saying there is none.
func (a *API) schedules() (Schedules, error) {
	if a.cfg.Schedules == nil {
		return nil, fault.New(fault.RequestInvalid, "schedules are not configured in this deployment")
	}
	return a.cfg.Schedules, nil
}

// person names the key that acts, for a schedule's created_by.
func person(key store.Key) string { return "key:" + key.ID }

func (a *API) listSchedules(r *http.Request, _ store.Key) (int, any, error) {
	k, err := a.schedules()
	if err != nil {
		return 0, nil, err
	}
	list, err := k.List(r.Context(), r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	out := make([]wire.Schedule, len(list))
	for i, s := range list {
		out[i] = scheduleOf(s)
	}
	return http.StatusOK, wire.SchedulePage{Schedules: out}, nil
}

// createSchedule is POST /v1/fleets/{name}/schedules {expression, message,
// timezone?, spend_cap_tokens?} → 201 {schedule_id, source}.
func (a *API) createSchedule(r *http.Request, key store.Key) (int, any, error) {
	k, err := a.schedules()
	if err != nil {
		return 0, nil, err
	}
	var req struct {
		Expression string `json:"expression"`
		Message    string `json:"message"`
		Timezone   string `json:"timezone"`
		SpendCap   int64  `json:"spend_cap_tokens"`
	}
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	switch {
	case req.Expression == "":
		return 0, nil, needed("expression")
	case req.Message == "":
		return 0, nil, needed("message")
	}
	s, err := k.Create(r.Context(), r.PathValue("name"), store.ActorPerson, person(key),
		keeper.Input{Expression: req.Expression, Message: req.Message, Timezone: req.Timezone, SpendCap: req.SpendCap})
	if err != nil {
		return 0, nil, err
	}
	body := scheduleOf(s)
	return http.StatusCreated, body, nil
}

// updateSchedule is PATCH …/schedules/{id} with any of expression,
// message, timezone, paused, spend_cap_tokens.
func (a *API) updateSchedule(r *http.Request, _ store.Key) (int, any, error) {
	k, err := a.schedules()
	if err != nil {
		return 0, nil, err
	}
	var req struct {
		Expression *string `json:"expression"`
		Message    *string `json:"message"`
		Timezone   *string `json:"timezone"`
		Paused     *bool   `json:"paused"`
		SpendCap   *int64  `json:"spend_cap_tokens"`
	}
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Expression == nil && req.Message == nil && req.Timezone == nil && req.Paused == nil && req.SpendCap == nil {
		return 0, nil, fault.New(fault.RequestInvalid, "nothing to change: send one or more of expression, message, timezone, paused, spend_cap_tokens")
	}
	s, err := k.Update(r.Context(), r.PathValue("name"), r.PathValue("id"), store.ActorPerson,
		keeper.Patch{Expression: req.Expression, Message: req.Message, Timezone: req.Timezone, Paused: req.Paused, SpendCap: req.SpendCap})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, scheduleOf(s), nil
}

func (a *API) deleteSchedule(r *http.Request, _ store.Key) (int, any, error) {
	k, err := a.schedules()
	if err != nil {
		return 0, nil, err
	}
	id := r.PathValue("id")
	if err := k.Delete(r.Context(), r.PathValue("name"), id, store.ActorPerson); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"schedule_id": id, "deleted": true}, nil
}

func (a *API) pauseSchedule(pause bool) handler {
	return func(r *http.Request, _ store.Key) (int, any, error) {
		k, err := a.schedules()
		if err != nil {
			return 0, nil, err
		}
		set := k.Resume
		if pause {
			set = k.Pause
		}
		s, err := set(r.Context(), r.PathValue("name"), r.PathValue("id"), store.ActorPerson)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, scheduleOf(s), nil
	}
}

// runSchedule is POST …/schedules/{id}/run: a run of the schedule now;
// an Idempotency-Key makes a retry answer the first run, as for starts.
func (a *API) runSchedule(r *http.Request, key store.Key) (int, any, error) {
	k, err := a.schedules()
	if err != nil {
		return 0, nil, err
	}
	var idem *store.IdempotencyKey
	if h := r.Header.Get("Idempotency-Key"); h != "" {
		idem = &store.IdempotencyKey{Scope: "api-schedule-run:" + key.ID, Key: h}
	}
	run, err := k.RunNow(r.Context(), r.PathValue("name"), r.PathValue("id"), store.ActorPerson, "", idem)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, wire.RunStarted{RunID: run.ID, Status: run.Status}, nil
}
