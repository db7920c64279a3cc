package api

import (
	"bytes"
	"context"
	"errors"
	"mime"
	"net/http"
	"slices"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

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
	o := origin(r, key)
	f, err := a.cfg.Store.CreateFleet(ctx, store.NewFleet{Name: name, Definition: def.Canonical(), Hash: def.Hash(), Origin: o})
	if errors.Is(err, fault.FleetExists) {
		// The Definition the fleet already runs: nothing to apply, so that
		// a retried PUT makes no revision.
		if cur, err := a.cfg.Store.GetFleet(ctx, name); err == nil && cur.Hash == def.Hash() {
			return http.StatusOK, wire.Applied{Name: name, Revision: cur.Revision, Unchanged: true}, nil
		}
		rev, err := a.cfg.Store.AppendRevision(ctx, name, def.Canonical(), def.Hash(), o)
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

// origin is who makes a revision through r: its key, from the API, or
// from the CLI when the request says it comes from agentsfleet's client
// (its User-Agent: a label for the history, not a credential).
func origin(r *http.Request, key store.Key) store.Origin {
	via := store.OriginAPI
	if strings.HasPrefix(r.UserAgent(), wire.CLIUserAgent) {
		via = store.OriginCLI
	}
	return store.Origin{By: key.ID, Via: via}
}

// listFleets is GET /v1/fleets: every fleet in name order for a
// deployment-wide key; for a key naming fleets, those of them that exist
// (keyFleets), so that no other fleet's name shows, in a page or a cursor.
func (a *API) listFleets(r *http.Request, key store.Key) (int, any, error) {
	limit, err := pageLimit(r)
	if err != nil {
		return 0, nil, err
	}
	if !key.AllFleets() {
		page, err := a.keyFleets(r.Context(), key, r.URL.Query().Get("cursor"), limit)
		if err != nil {
			return 0, nil, err
		}
		return http.StatusOK, page, nil
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

// keyFleets is a page of the fleets a key names that exist, in name order,
// read one by one (a key names at most store.MaxKeyFleets): the fleets
// after cursor (a name the key names, "" from the first), limit a page (0
// means 50, at most 100), as ListFleets pages. Next is the last name of a
// full page when the key names more after it.
func (a *API) keyFleets(ctx context.Context, key store.Key, cursor string, limit int) (wire.FleetPage, error) {
	if limit == 0 {
		limit = 50
	}
	limit = min(limit, 100)
	page := wire.FleetPage{Fleets: []wire.Fleet{}}
	i, found := slices.BinarySearch(key.Fleets, cursor)
	if found {
		i++
	}
	for ; i < len(key.Fleets); i++ {
		if len(page.Fleets) == limit {
			page.Next = page.Fleets[limit-1].Name
			break
		}
		f, err := a.cfg.Store.GetFleet(ctx, key.Fleets[i])
		if errors.Is(err, fault.FleetNotFound) {
			continue
		}
		if err != nil {
			return wire.FleetPage{}, err
		}
		page.Fleets = append(page.Fleets, fleetOf(f))
	}
	return page, nil
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
