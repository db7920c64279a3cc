package keeper

import (
	"context"

	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Book returns the Keeper as the runner sees it (runner.Config.Schedules):
// every change as the fleet, store.ActorFleet, refused with
// fault.FleetPaused (UZ-AGT-012) while the fleet is paused, listing
// included.
func (k *Keeper) Book() runner.ScheduleBook { return book{k} }

type book struct{ k *Keeper }

var _ runner.ScheduleBook = book{}

func (b book) CreateSchedule(ctx context.Context, fleet, runID string, a control.ScheduleCreateArgs) (store.Schedule, error) {
	return b.k.Create(ctx, fleet, store.ActorFleet, runID, Input{Expression: a.Expression, Message: a.Message, Timezone: a.Timezone})
}

func (b book) ListSchedules(ctx context.Context, fleet string) ([]store.Schedule, error) {
	if err := b.k.fleetActive(ctx, fleet, store.ActorFleet); err != nil {
		return nil, err
	}
	return b.k.List(ctx, fleet)
}

func (b book) UpdateSchedule(ctx context.Context, fleet string, a control.ScheduleUpdateArgs) (store.Schedule, error) {
	return b.k.Update(ctx, fleet, a.ScheduleID, store.ActorFleet,
		Patch{Expression: a.Expression, Message: a.Message, Timezone: a.Timezone, Paused: a.Paused})
}

func (b book) DeleteSchedule(ctx context.Context, fleet, id string) error {
	return b.k.Delete(ctx, fleet, id, store.ActorFleet)
}

func (b book) RunSchedule(ctx context.Context, fleet, id, callerRunID, key string) (store.Run, error) {
	return b.k.RunNow(ctx, fleet, id, store.ActorFleet, callerRunID, &store.IdempotencyKey{Scope: scope("cron_run", fleet), Key: key})
}

func (b book) ScheduleRunEnded(ctx context.Context, run store.Run) error {
	return b.k.RunEnded(ctx, run)
}
