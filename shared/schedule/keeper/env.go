package keeper

import (
	"log/slog"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/setting"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Settings are the variables FromEnv reads: eventbridge.ConfigFromEnv's,
// which go together, and SweepFromEnv's; none is required.
func Settings() []setting.Var {
	return setting.Join(eventbridge.Settings(), []setting.Var{{Name: EnvSweepGrace}})
}

// FromEnv is the Keeper a function builds from its settings
// (eventbridge.ConfigFromEnv: the Scheduler group, target and role), over
// EventBridge Scheduler with awsCfg, scrubbing messages through the
// webtools function of inv, unless inv says it has none (a Has(function)
// method answering false, as invoke.Lambda's does for a function it has
// no name of). ok is false, with no error, when the settings are absent:
// that deployment has no schedules.
func FromEnv(getenv func(string) string, awsCfg aws.Config, st *store.Store, inv invoke.Invoker, log *slog.Logger) (k *Keeper, ok bool, err error) {
	cfg, ok, err := eventbridge.ConfigFromEnv(getenv)
	if err != nil || !ok {
		return nil, false, err
	}
	sched, err := eventbridge.New(scheduler.NewFromConfig(awsCfg), cfg)
	if err != nil {
		return nil, false, err
	}
	kc := Config{Store: st, Scheduler: sched, Invoker: inv, Log: log}
	if kc.SweepGrace, err = SweepFromEnv(getenv); err != nil {
		return nil, false, err
	}
	if h, ok := inv.(interface{ Has(function string) bool }); !ok || h.Has(invoke.Webtools) {
		kc.Scrub = WebtoolsScrub(st, inv)
	}
	k, err = New(kc)
	return k, err == nil, err
}
