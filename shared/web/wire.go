package web

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// Invoke is Call over the Lambda payload: a Request as JSON in, the
// tool.Result as JSON out. It is the handler the webtools function serves
// in-process (invoke.Local), the same shape lambda.Start(svc.Call) serves in
// AWS. A payload that is not a Request is an error.
func (s *Service) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	var req wire.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, fmt.Errorf("webtools: the payload is not a web tool request: %w", err)
	}
	res, err := s.Call(ctx, req)
	if err != nil {
		return nil, err
	}
	return json.Marshal(res)
}
