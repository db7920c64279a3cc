package api

import (
	"context"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentsfleet/agentsfleet/shared/gateway"
)

// HandleGateway serves one API Gateway HTTP API request (payload format
// 2.0) as ServeHTTP would: the api function's handler.
func (a *API) HandleGateway(ctx context.Context, req events.APIGatewayV2HTTPRequest) (events.APIGatewayV2HTTPResponse, error) {
	return gateway.Serve(ctx, a, req), nil
}
