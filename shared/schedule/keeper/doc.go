// Package keeper keeps a fleet's schedules in step between the store (the
// schedule records, their caps and permissions, shared/store) and Amazon
// EventBridge Scheduler (one Scheduler schedule per record, through
// shared/schedule/eventbridge), and fires them: Keeper.Fire is the body of
// the schedule function (functions/schedule), which Scheduler invokes with
// an eventbridge.Payload, and which the local clock (shared/schedule/clock)
// calls in its place on one machine.
//
// Who uses it: the HTTP API (people: store.ActorPerson), the runner's
// schedule tools and cron_run (the fleet: store.ActorFleet, through
// Keeper.Book, which the runner takes as its ScheduleBook), and the schedule function. A run a
// schedule starts is recorded and started through start.Run, with source
// schedule and no thread.
//
// The order of the two writes is chosen so that a failure leaves nothing
// that fires without a record: Create writes the record first and removes
// it if Scheduler refuses the schedule; Delete marks the record removing
// (it no longer fires) before deleting the Scheduler schedule, then the
// record. A firing finding no record deletes its Scheduler schedule.
//
// Spend caps: a schedule may carry a cap of tokens a day (Input.SpendCap).
// The runner reports each schedule-started run that ends (Keeper.RunEnded);
// once the runs of a day (in the schedule's time zone) spent more than the
// cap, agentsfleet pauses the schedule (store.ActorSystem) and keeps the
// reason on it. Its Scheduler schedule stays enabled for one more firing:
// that firing starts no agent but records a run that ends failed at once
// with the reason (UZ-SCHED-011 and the figures), so the next run's place
// in the fleet's runs and event log says why; then the Scheduler schedule is
// disabled. A person resumes it (the fleet cannot lift its own cap), which
// clears the reason. The cap is checked when a run ends, so the run that
// crosses it finishes, and runs already under way when it is crossed do
// too; the count starts afresh each day, but a paused schedule stays paused
// until resumed.
//
// The sweep: the schedule function's other payload, the deployment's sweep
// schedule's eventbridge.SweepPayload ({"kind": "sweep"}), has Fire call
// Keeper.Sweep, which re-invokes the runner on each run and child agent
// that no live invocation holds (store.ListLapsed), so that a run whose
// invocation died without handing it over is not left running for ever.
package keeper
