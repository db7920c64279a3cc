package keeper

import "context"

// Handle is the schedule λ's handler, in Lambda and in the local stack
// alike: payload is what Scheduler sends (an eventbridge.Payload), fired by
// Fire; the answer is empty. An error is Fire's, and Scheduler retries it.
func (k *Keeper) Handle(ctx context.Context, payload []byte) ([]byte, error) {
	return nil, k.Fire(ctx, payload)
}
