package api

import (
	"net/http"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// putSlackRoute is PUT /v1/slack/routes/{channel}: mentions of the app in
// the channel (its id, such as C0123456789) reach the fleet from now on,
// replacing the channel's route if it had one. An unknown fleet is 404, a
// channel that is not a Slack channel id 400.
//
// A key naming fleets routes only to a fleet it serves (403 otherwise), and
// takes a channel only when it has no route or a route to one of its
// fleets, checked in the write (403): one team cannot take another's
// channel. A deployment-wide key routes any channel anywhere.
func (a *API) putSlackRoute(r *http.Request, key store.Key) (int, any, error) {
	var req wire.SlackRouteRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Fleet == "" {
		return 0, nil, needed("fleet")
	}
	if err := serves(key, req.Fleet); err != nil {
		return 0, nil, err
	}
	route, err := a.cfg.Store.PutSlackRoute(r.Context(), r.PathValue("channel"), req.Fleet, key.Fleets...)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, wire.SlackRoute{Channel: route.Channel, Fleet: route.Fleet, UpdatedAt: route.UpdatedAt}, nil
}
