package api

import (
	"bytes"
	"errors"
	"mime"
	"net/http"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// routes registers every route of DESIGN.md §11.
func (a *API) routes() {
	m := a.mux
	m.HandleFunc("PUT /v1/fleets/{name}", a.authed(scope.FleetsWrite, a.applyFleet))
	m.HandleFunc("GET /v1/fleets", a.authed(scope.FleetsRead, a.listFleets))
	m.HandleFunc("GET /v1/fleets/{name}", a.authed(scope.FleetsRead, a.getFleet))
	m.HandleFunc("POST /v1/fleets/{name}/pause", a.authed(scope.FleetsWrite, a.pauseFleet(true)))
	m.HandleFunc("POST /v1/fleets/{name}/resume", a.authed(scope.FleetsWrite, a.pauseFleet(false)))
	m.HandleFunc("POST /v1/fleets/{name}/webhook-secret", a.authed(scope.FleetsWrite, a.rotateSecret))

	m.HandleFunc("POST /v1/fleets/{name}/runs", a.authed(scope.RunsWrite, a.startRun))
	m.HandleFunc("GET /v1/fleets/{name}/runs", a.authed(scope.RunsRead, a.listRuns))
	m.HandleFunc("GET /v1/runs/{id}", a.authed(scope.RunsRead, a.getRun))
	m.HandleFunc("GET /v1/runs/{id}/events", a.authed(scope.RunsRead, a.listEvents))
	m.HandleFunc("POST /v1/runs/{id}/cancel", a.authed(scope.RunsWrite, a.cancelRun))

	m.HandleFunc("GET /v1/fleets/{name}/schedules", a.authed(scope.SchedulesRead, a.listSchedules))
	m.HandleFunc("POST /v1/fleets/{name}/schedules", a.authed(scope.SchedulesWrite, a.createSchedule))
	m.HandleFunc("PATCH /v1/fleets/{name}/schedules/{id}", a.authed(scope.SchedulesWrite, a.updateSchedule))
	m.HandleFunc("DELETE /v1/fleets/{name}/schedules/{id}", a.authed(scope.SchedulesWrite, a.deleteSchedule))
	m.HandleFunc("POST /v1/fleets/{name}/schedules/{id}/pause", a.authed(scope.SchedulesWrite, a.pauseSchedule(true)))
	m.HandleFunc("POST /v1/fleets/{name}/schedules/{id}/resume", a.authed(scope.SchedulesWrite, a.pauseSchedule(false)))
	m.HandleFunc("POST /v1/fleets/{name}/schedules/{id}/run", a.authed(scope.SchedulesWrite, a.runSchedule))

	m.HandleFunc("POST /v1/keys", a.authed(scope.KeysAdmin, a.createKey))
	m.HandleFunc("GET /v1/keys", a.authed(scope.KeysAdmin, a.listKeys))
	m.HandleFunc("DELETE /v1/keys/{id}", a.authed(scope.KeysAdmin, a.revokeKey))

	m.HandleFunc("PUT /v1/slack/routes/{channel}", a.authed(scope.SlackAdmin, a.putSlackRoute))
	m.HandleFunc("POST /v1/hooks/{fleet}", a.hook)
	m.HandleFunc("/", a.notFound)
}

func fleetOf(f store.Fleet) wire.Fleet {
	return wire.Fleet{Name: f.Name, Revision: f.Revision, Paused: f.Paused, Hash: f.Hash, Schedules: f.Schedules,
		CreatedAt: f.CreatedAt, UpdatedAt: f.UpdatedAt}
}

// applyFleet is PUT /v1/fleets/{name}: a Definition in TOML (or JSON, by
// its Content-Type or its first character) becomes the fleet's next
// revision, or its first; the Definition the fleet runs already changes
// nothing. The key must hold every tool's scope.
func (a *API) applyFleet(r *http.Request, key store.Key) (int, any, error) {
	name := r.PathValue("name")
	body, err := readBody(r, MaxBody)
	if err != nil {
		return 0, nil, err
	}
	format := fleet.TOML
	if ct, _, _ := mime.ParseMediaType(r.Header.Get("Content-Type")); ct == "application/json" ||
		(ct != "application/toml" && bytes.HasPrefix(bytes.TrimSpace(body), []byte("{"))) {
		format = fleet.JSON
	}
	def, err := fleet.Parse(body, format)
	if err != nil {
		return 0, nil, err
	}
	if def.Name != name {
		return 0, nil, fault.New(fault.DefinitionInvalid, "the Definition is named %q but was put at /v1/fleets/%s; the names must match", def.Name, name)
	}
	if err := def.CheckScopes(key.Scopes); err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	f, err := a.cfg.Store.CreateFleet(ctx, store.NewFleet{Name: name, Definition: def.Canonical(), Hash: def.Hash()})
	if errors.Is(err, fault.FleetExists) {
		// The Definition the fleet already runs: nothing to apply, so that
		// a retried PUT makes no revision.
		if cur, err := a.cfg.Store.GetFleet(ctx, name); err == nil && cur.Hash == def.Hash() {
			return http.StatusOK, wire.Applied{Name: name, Revision: cur.Revision, Unchanged: true}, nil
		}
		rev, err := a.cfg.Store.AppendRevision(ctx, name, def.Canonical(), def.Hash())
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, wire.Applied{Name: name, Revision: rev.Number}, nil
	}
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.Applied{Name: name, Revision: f.Revision}, nil
}

func (a *API) listFleets(r *http.Request, _ store.Key) (int, any, error) {
	limit, err := pageLimit(r)
	if err != nil {
		return 0, nil, err
	}
	page, err := a.cfg.Store.ListFleets(r.Context(), r.URL.Query().Get("cursor"), limit)
	if err != nil {
		return 0, nil, err
	}
	out := make([]wire.Fleet, len(page.Fleets))
	for i, f := range page.Fleets {
		out[i] = fleetOf(f)
	}
	return http.StatusOK, wire.FleetPage{Fleets: out, Next: page.Next}, nil
}

func (a *API) getFleet(r *http.Request, _ store.Key) (int, any, error) {
	ctx := r.Context()
	f, err := a.cfg.Store.GetFleet(ctx, r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	rev, err := a.cfg.Store.GetRevision(ctx, f.Name, f.Revision)
	if err != nil {
		return 0, nil, err
	}
	body := fleetOf(f)
	body.Definition = rev.Definition
	return http.StatusOK, body, nil
}

func (a *API) pauseFleet(pause bool) handler {
	return func(r *http.Request, _ store.Key) (int, any, error) {
		set := a.cfg.Store.ResumeFleet
		if pause {
			set = a.cfg.Store.PauseFleet
		}
		f, err := set(r.Context(), r.PathValue("name"))
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, fleetOf(f), nil
	}
}

// rotateSecret creates or rotates the fleet's webhook secret and shows it,
// once.
func (a *API) rotateSecret(r *http.Request, _ store.Key) (int, any, error) {
	secret, err := a.cfg.Store.RotateWebhookSecret(r.Context(), r.PathValue("name"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]string{"secret": secret}, nil
}
