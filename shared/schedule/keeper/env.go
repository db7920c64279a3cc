package keeper

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// FromEnv is the Keeper a function builds from its settings
// (eventbridge.ConfigFromEnv: the Scheduler group, target and role), over
// EventBridge Scheduler with awsCfg, scrubbing messages through the
// webtools function of inv. ok is false, with no error, when the settings
// are absent: that deployment has no schedules.
func FromEnv(getenv func(string) string, awsCfg aws.Config, st *store.Store, inv invoke.Invoker, log *slog.Logger) (k *Keeper, ok bool, err error) {
	cfg, ok, err := eventbridge.ConfigFromEnv(getenv)
	if err != nil || !ok {
		return nil, false, err
	}
	sched, err := eventbridge.New(scheduler.NewFromConfig(awsCfg), cfg)
	if err != nil {
		return nil, false, err
	}
	k, err = New(Config{Store: st, Scheduler: sched, Invoker: inv, Scrub: WebtoolsScrub(st, inv), Log: log})
	return k, err == nil, err
}
