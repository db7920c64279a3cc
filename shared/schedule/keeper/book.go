package keeper

import (
	"context"

	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Book returns the Keeper as the runner sees it (a runner.ScheduleBook,
// runner.Config.Schedules): every change as the fleet, store.ActorFleet,
// refused with fault.FleetPaused (UZ-AGT-012) while the fleet is paused,
// listing included. The keeper does not import the runner, so that the
// functions keeping schedules do not link the agent loop; its tests check
// that Book is a runner.ScheduleBook.
func (k *Keeper) Book() Book { return Book{k} }

// Book is the Keeper as the runner's schedule tools use it.
type Book struct{ k *Keeper }

func (b Book) CreateSchedule(ctx context.Context, fleet, runID string, a control.ScheduleCreateArgs) (store.Schedule, error) {
	return b.k.Create(ctx, fleet, store.ActorFleet, runID, Input{Expression: a.Expression, Message: a.Message, Timezone: a.Timezone})
}

func (b Book) ListSchedules(ctx context.Context, fleet string) ([]store.Schedule, error) {
	if err := b.k.fleetActive(ctx, fleet, store.ActorFleet); err != nil {
		return nil, err
	}
	return b.k.List(ctx, fleet)
}

func (b Book) UpdateSchedule(ctx context.Context, fleet string, a control.ScheduleUpdateArgs) (store.Schedule, error) {
	return b.k.Update(ctx, fleet, a.ScheduleID, store.ActorFleet,
		Patch{Expression: a.Expression, Message: a.Message, Timezone: a.Timezone, Paused: a.Paused})
}

func (b Book) DeleteSchedule(ctx context.Context, fleet, id string) error {
	return b.k.Delete(ctx, fleet, id, store.ActorFleet)
}

func (b Book) RunSchedule(ctx context.Context, fleet, id, callerRunID, key string) (store.Run, error) {
	return b.k.RunNow(ctx, fleet, id, store.ActorFleet, callerRunID, &store.IdempotencyKey{Scope: scope("cron_run", fleet), Key: key})
}

func (b Book) ScheduleRunEnded(ctx context.Context, run store.Run) error {
	return b.k.RunEnded(ctx, run)
}
