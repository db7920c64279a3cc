package api

import (
	"net/http"
	"strconv"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/diff"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/improve"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func (a *API) chats() *improve.Chats {
	return &improve.Chats{Store: a.cfg.Store, Invoker: a.cfg.Invoker}
}

// startImprovement is POST /v1/fleets/{name}/improvements {message}: a
// chat about the fleet, its agent thinking about the message → 201.
func (a *API) startImprovement(r *http.Request, key store.Key) (int, any, error) {
	var body wire.ImprovementRequest
	if err := decode(r, &body); err != nil {
		return 0, nil, err
	}
	imp, err := a.chats().Start(r.Context(), r.PathValue("name"), body.Message, origin(r, key), store.ChatThread{})
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, wire.ImprovementStarted{ImprovementID: imp.ID, Status: imp.Status}, nil
}

// postImprovement is POST /v1/improvements/{id}/messages {message} → 202,
// the agent thinking about it.
func (a *API) postImprovement(r *http.Request, key store.Key) (int, any, error) {
	var body wire.ImprovementRequest
	if err := decode(r, &body); err != nil {
		return 0, nil, err
	}
	imp, err := a.chats().Post(r.Context(), r.PathValue("id"), body.Message, key.ID)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusAccepted, wire.ImprovementStarted{ImprovementID: imp.ID, Status: imp.Status}, nil
}

func (a *API) getImprovement(r *http.Request, _ store.Key) (int, any, error) {
	v, err := a.chats().View(r.Context(), r.PathValue("id"))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, v, nil
}

// applyImprovement is POST /v1/improvements/{id}/apply → 200 {revision}:
// the key must hold the scopes the proposal needs, and the fleet must
// still be at its from_revision (409 UZ-IMP-409 otherwise).
func (a *API) applyImprovement(r *http.Request, key store.Key) (int, any, error) {
	rev, err := a.chats().Apply(r.Context(), r.PathValue("id"), key.Scopes, origin(r, key))
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.ImprovementApplied{Revision: rev.Number}, nil
}

func (a *API) discardImprovement(r *http.Request, _ store.Key) (int, any, error) {
	if _, err := a.cfg.Store.DiscardImprovement(r.Context(), r.PathValue("id")); err != nil {
		return 0, nil, err
	}
	return a.getImprovement(r, store.Key{})
}

func revisionOf(r store.Revision) wire.Revision {
	return wire.Revision{Revision: r.Number, Hash: r.Hash, By: r.Origin.By, Via: r.Origin.Via,
		Improvement: r.Origin.Improvement, Restored: r.Origin.Restored, CreatedAt: r.CreatedAt}
}

// listRevisions is GET /v1/fleets/{name}/revisions, newest first, paged;
// with ?from=A&to=B, the diff of B against A too.
func (a *API) listRevisions(r *http.Request, _ store.Key) (int, any, error) {
	limit, err := pageLimit(r)
	if err != nil {
		return 0, nil, err
	}
	name, q := r.PathValue("name"), r.URL.Query()
	page, err := a.cfg.Store.ListRevisions(r.Context(), name, q.Get("cursor"), limit)
	if err != nil {
		return 0, nil, err
	}
	out := wire.RevisionPage{Revisions: make([]wire.Revision, len(page.Revisions)), Next: page.Next}
	for i, rev := range page.Revisions {
		out.Revisions[i] = revisionOf(rev)
	}
	if q.Has("from") || q.Has("to") {
		if out.Diff, err = a.revisionDiff(r, name, q.Get("from"), q.Get("to")); err != nil {
			return 0, nil, err
		}
	}
	return http.StatusOK, out, nil
}

// revisionDiff is the diff from revision from to revision to, as TOML.
func (a *API) revisionDiff(r *http.Request, name, from, to string) (*wire.RevisionDiff, error) {
	texts := make([]string, 2)
	nums := make([]int64, 2)
	for i, v := range []string{from, to} {
		n, err := revisionNumber(v, []string{"from", "to"}[i])
		if err != nil {
			return nil, err
		}
		def, err := a.revisionDefinition(r, name, n)
		if err != nil {
			return nil, err
		}
		nums[i], texts[i] = n, string(def.TOML())
	}
	return &wire.RevisionDiff{From: nums[0], To: nums[1],
		Diff: diff.Unified("revision "+from, "revision "+to, texts[0], texts[1])}, nil
}

func revisionNumber(v, param string) (int64, error) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, fault.New(fault.RequestInvalid, "%s must be a revision number from 1, not %q (give both from and to for a diff)", param, v)
	}
	return n, nil
}

func (a *API) revisionDefinition(r *http.Request, name string, n int64) (*fleet.Definition, error) {
	rev, err := a.cfg.Store.GetRevision(r.Context(), name, n)
	if err != nil {
		return nil, err
	}
	return fleet.ParseJSON(rev.Definition)
}

// restoreRevision is POST /v1/fleets/{name}/revisions/{revision}/restore:
// that revision's Definition becomes the next revision, needing its
// tools' scopes as PUT does; restoring the Definition the fleet runs
// changes nothing.
func (a *API) restoreRevision(r *http.Request, key store.Key) (int, any, error) {
	name := r.PathValue("name")
	n, err := revisionNumber(r.PathValue("revision"), "the path's revision")
	if err != nil {
		return 0, nil, err
	}
	def, err := a.revisionDefinition(r, name, n)
	if err != nil {
		return 0, nil, err
	}
	if err := def.CheckScopes(key.Scopes); err != nil {
		return 0, nil, err
	}
	ctx := r.Context()
	cur, err := a.cfg.Store.GetFleet(ctx, name)
	if err != nil {
		return 0, nil, err
	}
	if cur.Hash == def.Hash() {
		return http.StatusOK, wire.Applied{Name: name, Revision: cur.Revision, Unchanged: true}, nil
	}
	o := origin(r, key)
	o.Restored = n
	rev, err := a.cfg.Store.AppendRevision(ctx, name, def.Canonical(), def.Hash(), o)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.Applied{Name: name, Revision: rev.Number}, nil
}
