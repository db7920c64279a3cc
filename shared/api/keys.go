package api

import (
	"errors"
	"net/http"
	"strings"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func keyOf(k store.Key) wire.Key {
	b := wire.Key{KeyID: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: k.CreatedAt, Revoked: k.Revoked, Fleets: k.Fleets}
	if !k.LastUsedAt.IsZero() {
		b.LastUsedAt = &k.LastUsedAt
	}
	return b
}

// createKey is POST /v1/keys {name, scopes, fleets?} → 201 {key_id, key}:
// the key is shown this once. A key grants only scopes it holds itself and
// fleets it serves itself: fleets absent are the creating key's own, and a
// key naming fleets cannot make a deployment-wide key.
func (a *API) createKey(r *http.Request, key store.Key) (int, any, error) {
	var req wire.KeyRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	switch {
	case req.Name == "":
		return 0, nil, needed("name")
	case len(req.Scopes) == 0:
		return 0, nil, needed("scopes")
	case req.Fleets != nil && len(req.Fleets) == 0: // "fleets": [] decodes to an empty slice, absent to nil
		return 0, nil, fault.New(fault.RequestInvalid, "field \"fleets\" is empty: name at least one fleet, or leave it out for the fleets of this key")
	}
	if err := grantable(key, req.Scopes); err != nil {
		return 0, nil, err
	}
	fleets := key.Fleets
	if req.Fleets != nil {
		fleets = req.Fleets
	}
	if !key.Covers(fleets) {
		var over []string
		for _, f := range fleets {
			if !key.Serves(f) {
				over = append(over, f)
			}
		}
		return 0, nil, fault.New(fault.ScopeMissing, "a key can grant only fleets it serves; this one serves %s only, not %s",
			strings.Join(key.Fleets, ", "), strings.Join(over, ", "))
	}
	k, secret, err := a.cfg.Store.CreateKey(r.Context(), req.Name, req.Scopes, fleets...)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, wire.NewKey{KeyID: k.ID, Key: secret, Name: k.Name, Scopes: k.Scopes, Fleets: k.Fleets}, nil
}

// listKeys is GET /v1/keys: every key for a deployment-wide key; for a key
// naming fleets, the keys whose fleets are all among its own (its team's),
// never a deployment-wide key or another team's.
func (a *API) listKeys(r *http.Request, key store.Key) (int, any, error) {
	keys, err := a.cfg.Store.ListKeys(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := []wire.Key{}
	for _, k := range keys {
		if key.Covers(k.Fleets) {
			out = append(out, keyOf(k))
		}
	}
	return http.StatusOK, wire.KeyPage{Keys: out}, nil
}

// revokeKey is DELETE /v1/keys/{id}: the key never authenticates again. A
// key naming fleets revokes only the keys it lists; any other is answered
// as an unknown key (404).
func (a *API) revokeKey(r *http.Request, key store.Key) (int, any, error) {
	id := r.PathValue("id")
	if !key.AllFleets() {
		k, err := a.cfg.Store.GetKey(r.Context(), id)
		if errors.Is(err, fault.KeyNotFound) || (err == nil && !key.Covers(k.Fleets)) {
			return 0, nil, fault.New(fault.KeyNotFound, "there is no key %s of the fleets this key serves", id)
		}
		if err != nil {
			return 0, nil, err
		}
	}
	if err := a.cfg.Store.RevokeKey(r.Context(), id); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"key_id": id, "revoked": true}, nil
}
