package client

import (
	"context"
	"net/http"

	"github.com/agentsfleet/agentsfleet/shared/api/wire"
)

// SlackRoute is a Slack channel's route: the fleet its mentions reach.
type SlackRoute = wire.SlackRoute

// RouteSlackChannel makes the app's mentions in a Slack channel (its id,
// such as C0123456789) reach fleet: PUT /v1/slack/routes/{channel}, with a
// key holding slack:admin.
func (c *Client) RouteSlackChannel(ctx context.Context, channel, fleet string) (SlackRoute, error) {
	var out SlackRoute
	err := c.do(ctx, http.MethodPut, "/v1/slack/routes/"+seg(channel), wire.SlackRouteRequest{Fleet: fleet}, &out)
	return out, err
}
