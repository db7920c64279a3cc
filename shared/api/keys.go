package api

import (
	"net/http"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func keyOf(k store.Key) wire.Key {
	b := wire.Key{KeyID: k.ID, Name: k.Name, Scopes: k.Scopes, CreatedAt: k.CreatedAt, Revoked: k.Revoked}
	if !k.LastUsedAt.IsZero() {
		b.LastUsedAt = &k.LastUsedAt
	}
	return b
}

// createKey is POST /v1/keys {name, scopes} → 201 {key_id, key}: the key is
// shown this once. A key grants only scopes it holds itself.
func (a *API) createKey(r *http.Request, key store.Key) (int, any, error) {
	var req struct {
		Name   string   `json:"name"`
		Scopes []string `json:"scopes"`
	}
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	switch {
	case req.Name == "":
		return 0, nil, needed("name")
	case len(req.Scopes) == 0:
		return 0, nil, needed("scopes")
	}
	if err := grantable(key, req.Scopes); err != nil {
		return 0, nil, err
	}
	k, secret, err := a.cfg.Store.CreateKey(r.Context(), req.Name, req.Scopes)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusCreated, wire.NewKey{KeyID: k.ID, Key: secret, Name: k.Name, Scopes: k.Scopes}, nil
}

func (a *API) listKeys(r *http.Request, _ store.Key) (int, any, error) {
	keys, err := a.cfg.Store.ListKeys(r.Context())
	if err != nil {
		return 0, nil, err
	}
	out := make([]wire.Key, len(keys))
	for i, k := range keys {
		out[i] = keyOf(k)
	}
	return http.StatusOK, wire.KeyPage{Keys: out}, nil
}

// revokeKey is DELETE /v1/keys/{id}: the key never authenticates again.
func (a *API) revokeKey(r *http.Request, _ store.Key) (int, any, error) {
	id := r.PathValue("id")
	if err := a.cfg.Store.RevokeKey(r.Context(), id); err != nil {
		return 0, nil, err
	}
	return http.StatusOK, map[string]any{"key_id": id, "revoked": true}, nil
}
