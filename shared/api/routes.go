package api

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Reach is where a route finds the fleet it acts on, which the request's key
// must serve (store.Key.Serves). Every route declares one, so that no route
// can leave the check out by forgetting it.
type Reach int

const (
	// ReachFleet: the fleet the path's {name} names. A key that does not
	// serve it is refused with 403 before anything is read, the same answer
	// whether or not the fleet exists.
	ReachFleet Reach = iota + 1
	// ReachRun: the fleet of the run the path's {id} names. A key that does
	// not serve it is answered as for a run that does not exist (404), so
	// that run ids of other fleets tell it nothing.
	ReachRun
	// ReachHandler: the route spans fleets (the fleet list, keys, Slack
	// routes), and its handler keeps to the key's fleets itself.
	ReachHandler
	// ReachImprovement: the fleet of the improvement chat the path's {id}
	// names; a key that does not serve it is answered as for a chat that
	// does not exist (404), as for runs.
	ReachImprovement
	// ReachSigned: no key; the webhook's signature, by the fleet's own
	// secret, is the credential.
	ReachSigned
)

func (r Reach) String() string {
	switch r {
	case ReachFleet:
		return "fleet"
	case ReachRun:
		return "run"
	case ReachHandler:
		return "handler"
	case ReachSigned:
		return "signed"
	case ReachImprovement:
		return "improvement"
	}
	return fmt.Sprintf("Reach(%d)", int(r))
}

// Route is one route of the HTTP API.
type Route struct {
	// Pattern is the route as http.ServeMux takes it: "METHOD /path".
	Pattern string
	// Scopes are the scopes a key needs, every one of them; none for
	// ReachSigned.
	Scopes []string
	Reach  Reach
}

// route is a Route with its work: h for the routes a key opens, signed for
// the webhook.
type route struct {
	Route
	h      handler
	signed http.HandlerFunc
}

// table is every route of DESIGN.md §11.
func (a *API) table() []route {
	keyed := func(pattern string, reach Reach, h handler, scopes ...string) route {
		return route{Route: Route{Pattern: pattern, Scopes: scopes, Reach: reach}, h: h}
	}
	return []route{
		keyed("PUT /v1/fleets/{name}", ReachFleet, a.applyFleet, scope.FleetsWrite),
		keyed("GET /v1/fleets", ReachHandler, a.listFleets, scope.FleetsRead),
		keyed("GET /v1/fleets/{name}", ReachFleet, a.getFleet, scope.FleetsRead),
		keyed("POST /v1/fleets/{name}/pause", ReachFleet, a.pauseFleet(true), scope.FleetsWrite),
		keyed("POST /v1/fleets/{name}/resume", ReachFleet, a.pauseFleet(false), scope.FleetsWrite),
		// The webhook secret signs deliveries that start runs, so it takes
		// runs:write too: fleets:write alone must not become run starts.
		keyed("POST /v1/fleets/{name}/webhook-secret", ReachFleet, a.rotateSecret, scope.FleetsWrite, scope.RunsWrite),

		keyed("POST /v1/fleets/{name}/runs", ReachFleet, a.startRun, scope.RunsWrite),
		keyed("GET /v1/fleets/{name}/runs", ReachFleet, a.listRuns, scope.RunsRead),
		keyed("GET /v1/runs/{id}", ReachRun, a.getRun, scope.RunsRead),
		keyed("GET /v1/runs/{id}/events", ReachRun, a.listEvents, scope.RunsRead),
		keyed("GET /v1/runs/{id}/egress", ReachRun, a.listEgress, scope.RunsRead),
		keyed("POST /v1/runs/{id}/cancel", ReachRun, a.cancelRun, scope.RunsWrite),
		keyed("POST /v1/runs/{id}/approvals/{approval_id}", ReachRun, a.decideApproval, scope.RunsApprove),

		keyed("GET /v1/fleets/{name}/schedules", ReachFleet, a.listSchedules, scope.SchedulesRead),
		keyed("POST /v1/fleets/{name}/schedules", ReachFleet, a.createSchedule, scope.SchedulesWrite),
		keyed("PATCH /v1/fleets/{name}/schedules/{id}", ReachFleet, a.updateSchedule, scope.SchedulesWrite),
		keyed("DELETE /v1/fleets/{name}/schedules/{id}", ReachFleet, a.deleteSchedule, scope.SchedulesWrite),
		keyed("POST /v1/fleets/{name}/schedules/{id}/pause", ReachFleet, a.pauseSchedule(true), scope.SchedulesWrite),
		keyed("POST /v1/fleets/{name}/schedules/{id}/resume", ReachFleet, a.pauseSchedule(false), scope.SchedulesWrite),
		keyed("POST /v1/fleets/{name}/schedules/{id}/run", ReachFleet, a.runSchedule, scope.SchedulesWrite),

		// The chat's agent reads the fleet's runs and its answers tell of
		// them, so a chat takes runs:read as well as the fleets scope.
		keyed("POST /v1/fleets/{name}/improvements", ReachFleet, a.startImprovement, scope.FleetsWrite, scope.RunsRead),
		keyed("POST /v1/improvements/{id}/messages", ReachImprovement, a.postImprovement, scope.FleetsWrite, scope.RunsRead),
		keyed("GET /v1/improvements/{id}", ReachImprovement, a.getImprovement, scope.FleetsRead, scope.RunsRead),
		keyed("POST /v1/improvements/{id}/apply", ReachImprovement, a.applyImprovement, scope.FleetsWrite),
		keyed("POST /v1/improvements/{id}/discard", ReachImprovement, a.discardImprovement, scope.FleetsWrite),
		keyed("GET /v1/fleets/{name}/revisions", ReachFleet, a.listRevisions, scope.FleetsRead),
		keyed("POST /v1/fleets/{name}/revisions/{revision}/restore", ReachFleet, a.restoreRevision, scope.FleetsWrite),

		keyed("POST /v1/keys", ReachHandler, a.createKey, scope.KeysAdmin),
		keyed("GET /v1/keys", ReachHandler, a.listKeys, scope.KeysAdmin),
		keyed("DELETE /v1/keys/{id}", ReachHandler, a.revokeKey, scope.KeysAdmin),

		keyed("PUT /v1/slack/routes/{channel}", ReachHandler, a.putSlackRoute, scope.SlackAdmin),
		{Route: Route{Pattern: "POST /v1/hooks/{fleet}", Reach: ReachSigned}, signed: a.hook},
	}
}

// Routes returns every route the API serves (but the catch-all that answers
// 404), with its scopes and reach. The caller owns the slice.
func (a *API) Routes() []Route {
	t := a.table()
	out := make([]Route, len(t))
	for i, r := range t {
		out[i] = r.Route
	}
	return out
}

// routes registers the table, refusing a route whose reach is not one a
// key can be checked by (or a keyed route with no scope).
func (a *API) routes() error {
	for _, r := range a.table() {
		switch {
		case r.Reach == ReachSigned && r.signed != nil && len(r.Scopes) == 0:
			a.mux.HandleFunc(r.Pattern, r.signed)
		case (r.Reach == ReachFleet || r.Reach == ReachRun || r.Reach == ReachImprovement || r.Reach == ReachHandler) && r.h != nil && len(r.Scopes) > 0:
			a.mux.HandleFunc(r.Pattern, a.authed(r.Route, r.h))
		default:
			return fmt.Errorf("api: route %s: reach %s with %d scopes cannot be served", r.Pattern, r.Reach, len(r.Scopes))
		}
	}
	a.mux.HandleFunc("/", a.notFound)
	return nil
}

// authed serves h to requests carrying a key with every scope of rt and
// serving the fleet rt reaches.
func (a *API) authed(rt Route, h handler) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		key, err := a.authenticate(r)
		if err == nil {
			err = missingScope(key, rt.Scopes, r)
		}
		if err == nil {
			err = a.reaches(r, key, rt.Reach)
		}
		if err != nil {
			a.fail(w, r, err)
			return
		}
		status, v, err := h(r, key)
		if err != nil {
			a.fail(w, r, err)
			return
		}
		writeJSON(w, status, v)
	}
}

// missingScope refuses a key lacking one of scopes, naming the first it
// lacks (and, for a route needing more than one, all of them).
func missingScope(key store.Key, scopes []string, r *http.Request) error {
	for _, s := range scopes {
		if key.Has(s) {
			continue
		}
		if len(scopes) == 1 {
			return fault.New(fault.ScopeMissing, "this key lacks the scope %q that %s %s needs", s, r.Method, r.URL.Path)
		}
		return fault.New(fault.ScopeMissing, "this key lacks the scope %q that %s %s needs (it needs %s)",
			s, r.Method, r.URL.Path, strings.Join(scopes, " and "))
	}
	return nil
}

// reaches refuses a key that does not serve the fleet the request acts on.
// A deployment-wide key reads nothing more than before.
func (a *API) reaches(r *http.Request, key store.Key, reach Reach) error {
	if key.AllFleets() {
		return nil
	}
	switch reach {
	case ReachFleet:
		return serves(key, r.PathValue("name"))
	case ReachRun:
		id := r.PathValue("id")
		run, err := a.cfg.Store.GetRun(r.Context(), id)
		if errors.Is(err, fault.RunNotFound) || (err == nil && !key.Serves(run.Fleet)) {
			return fault.New(fault.RunNotFound, "there is no run %s of the fleets this key serves", id)
		}
		return err
	case ReachImprovement:
		id := r.PathValue("id")
		imp, err := a.cfg.Store.GetImprovement(r.Context(), id)
		if errors.Is(err, fault.ImproveNotFound) || (err == nil && !key.Serves(imp.Fleet)) {
			return fault.New(fault.ImproveNotFound, "there is no improvement chat %s of the fleets this key serves", id)
		}
		return err
	case ReachHandler:
		return nil
	}
	return fmt.Errorf("api: %s %s: no fleet check for reach %s", r.Method, r.URL.Path, reach)
}

// serves refuses a key that does not serve fleet, naming the fleets it
// does (its holder's own list).
func serves(key store.Key, fleet string) error {
	if key.Serves(fleet) {
		return nil
	}
	return fault.New(fault.ScopeMissing, "this key serves the fleets %s only, not %q", strings.Join(key.Fleets, ", "), fleet)
}
