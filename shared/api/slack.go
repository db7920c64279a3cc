package api

import (
	"net/http"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

// SlackRouteRequest is PUT /v1/slack/routes/{channel}'s body.
type SlackRouteRequest struct {
	Fleet string `json:"fleet"`
}

// SlackRoute is a Slack channel's route: the fleet its mentions reach.
type SlackRoute struct {
	Channel   string    `json:"channel"`
	Fleet     string    `json:"fleet"`
	UpdatedAt time.Time `json:"updated_at"`
}

// putSlackRoute is PUT /v1/slack/routes/{channel}: mentions of the app in
// the channel (its id, such as C0123456789) reach the fleet from now on,
// replacing the channel's route if it had one. An unknown fleet is 404, a
// channel that is not a Slack channel id 400.
func (a *API) putSlackRoute(r *http.Request, _ store.Key) (int, any, error) {
	var req SlackRouteRequest
	if err := decode(r, &req); err != nil {
		return 0, nil, err
	}
	if req.Fleet == "" {
		return 0, nil, needed("fleet")
	}
	route, err := a.cfg.Store.PutSlackRoute(r.Context(), r.PathValue("channel"), req.Fleet)
	if err != nil {
		return 0, nil, err
	}
	return http.StatusOK, SlackRoute{Channel: route.Channel, Fleet: route.Fleet, UpdatedAt: route.UpdatedAt}, nil
}
