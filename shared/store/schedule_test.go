package store_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func (e *env) schedule(t testing.TB, fleet string, source store.Actor, expr string) store.Schedule {
	t.Helper()
	s, err := e.CreateSchedule(ctx, store.NewSchedule{Fleet: fleet, Source: source, CreatedBy: "u1", Expression: expr, Message: "check the build"})
	if err != nil {
		t.Fatalf("CreateSchedule(%s, %s): %v", source, expr, err)
	}
	return s
}

func TestCreateSchedule(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	tests := []struct {
		name        string
		ns          store.NewSchedule
		want        fault.Code
		wantOneShot bool
	}{
		{"cron", store.NewSchedule{Source: store.ActorPerson, Expression: "cron(0 9 ? * MON-FRI *)", Timezone: "Europe/Paris"}, fault.Code{}, false},
		{"rate", store.NewSchedule{Source: store.ActorPerson, Expression: "rate(5 minutes)"}, fault.Code{}, false},
		{"rate of 1", store.NewSchedule{Source: store.ActorFleet, Expression: "rate(1 hour)"}, fault.Code{}, false},
		{"follow-up", store.NewSchedule{Source: store.ActorFleet, Expression: "at(2026-03-02T09:00:00)"}, fault.Code{}, true},
		{"cron with 5 fields", store.NewSchedule{Source: store.ActorPerson, Expression: "cron(0 9 * * *)"}, fault.RequestInvalid, false},
		{"rate plural of 1", store.NewSchedule{Source: store.ActorPerson, Expression: "rate(1 hours)"}, fault.RequestInvalid, false},
		{"rate singular of 5", store.NewSchedule{Source: store.ActorPerson, Expression: "rate(5 minute)"}, fault.RequestInvalid, false},
		{"at without time", store.NewSchedule{Source: store.ActorPerson, Expression: "at(2026-03-02)"}, fault.RequestInvalid, false},
		{"at on no day", store.NewSchedule{Source: store.ActorPerson, Expression: "at(2026-02-30T09:00:00)"}, fault.RequestInvalid, false},
		{"unix cron", store.NewSchedule{Source: store.ActorPerson, Expression: "0 9 * * *"}, fault.RequestInvalid, false},
		{"bad zone", store.NewSchedule{Source: store.ActorPerson, Expression: "rate(5 minutes)", Timezone: "Mars/Olympus"}, fault.RequestInvalid, false},
		{"bad source", store.NewSchedule{Source: store.ActorSystem, Expression: "rate(5 minutes)"}, fault.RequestInvalid, false},
		{"no fleet", store.NewSchedule{Fleet: "nope", Source: store.ActorPerson, Expression: "rate(5 minutes)"}, fault.FleetNotFound, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.ns.Fleet == "" {
				tt.ns.Fleet = "ops"
			}
			s, err := e.CreateSchedule(ctx, tt.ns)
			wantCode(t, err, tt.want)
			if err != nil {
				return
			}
			if s.State != store.ScheduleActive || s.OneShot != tt.wantOneShot || s.Source != tt.ns.Source || !strings.HasPrefix(s.ID, "sch_") ||
				s.Timezone == "" || s.Expression != tt.ns.Expression {
				t.Fatalf("CreateSchedule = %+v, want active, one-shot %v", s, tt.wantOneShot)
			}
			got, err := e.GetSchedule(ctx, "ops", s.ID)
			if err != nil || got != s {
				t.Fatalf("GetSchedule = %+v, %v; want %+v", got, err, s)
			}
		})
	}
}

func TestScheduleCaps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		person, fleet int // created before the attempt
		source        store.Actor
		want          fault.Code
	}{
		{"16th by the fleet", 0, 15, store.ActorFleet, fault.Code{}},
		{"17th by the fleet", 0, 16, store.ActorFleet, fault.SchedFleetCap},
		{"person after 16 by the fleet", 0, 16, store.ActorPerson, fault.Code{}},
		{"32nd in all", 16, 15, store.ActorPerson, fault.Code{}},
		{"33rd by a person", 16, 16, store.ActorPerson, fault.SchedTotalCap},
		{"fleet when persons hold 32", 32, 0, store.ActorFleet, fault.SchedTotalCap},
		{"17th by the fleet when full", 16, 16, store.ActorFleet, fault.SchedFleetCap},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t)
			e.fleet(t, "ops")
			for range tt.person {
				e.schedule(t, "ops", store.ActorPerson, "rate(1 day)")
			}
			for range tt.fleet {
				e.schedule(t, "ops", store.ActorFleet, "rate(1 day)")
			}
			_, err := e.CreateSchedule(ctx, store.NewSchedule{Fleet: "ops", Source: tt.source, Expression: "rate(2 days)"})
			wantCode(t, err, tt.want)
		})
	}
}

func TestDeletingFreesTheCap(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	var first store.Schedule
	for i := range store.MaxFleetSchedules {
		s := e.schedule(t, "ops", store.ActorFleet, "rate(1 day)")
		if i == 0 {
			first = s
		}
	}
	_, err := e.CreateSchedule(ctx, store.NewSchedule{Fleet: "ops", Source: store.ActorFleet, Expression: "rate(1 day)"})
	wantCode(t, err, fault.SchedFleetCap)
	if err := e.DeleteSchedule(ctx, "ops", first.ID, store.ActorPerson); err != nil {
		t.Fatalf("DeleteSchedule: %v", err)
	}
	e.schedule(t, "ops", store.ActorFleet, "rate(1 day)")
	f, _ := e.GetFleet(ctx, "ops")
	if f.Schedules != 16 || f.FleetSchedules != 16 {
		t.Fatalf("fleet counts %d schedules, %d by the fleet; want 16, 16", f.Schedules, f.FleetSchedules)
	}
}

func TestConcurrentFleetSchedulesStopAtSixteen(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	const creators = 64
	errs := make([]error, creators)
	parallel(creators, func(i int) {
		_, errs[i] = e.CreateSchedule(ctx, store.NewSchedule{Fleet: "ops", Source: store.ActorFleet,
			Expression: fmt.Sprintf("at(2026-04-01T09:%02d:00)", i%60), Message: fmt.Sprint("follow-up ", i)})
	})
	ok, capped := 0, 0
	for _, err := range errs {
		switch {
		case err == nil:
			ok++
		case errorsIs(err, fault.SchedFleetCap):
			capped++
		default:
			t.Fatalf("CreateSchedule: %v", err)
		}
	}
	list, err := e.ListSchedules(ctx, "ops")
	if err != nil {
		t.Fatal(err)
	}
	f, _ := e.GetFleet(ctx, "ops")
	if ok != 16 || capped != 48 || len(list) != 16 || f.Schedules != 16 || f.FleetSchedules != 16 {
		t.Fatalf("%d created, %d UZ-SCHED-009, %d listed, fleet counts %d/%d; want 16, 48, 16, 16/16",
			ok, capped, len(list), f.Schedules, f.FleetSchedules)
	}
	// People can still add up to the total of 32, concurrently too.
	errs = make([]error, 24)
	parallel(len(errs), func(i int) {
		_, errs[i] = e.CreateSchedule(ctx, store.NewSchedule{Fleet: "ops", Source: store.ActorPerson, Expression: "rate(1 day)"})
	})
	ok = 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			wantCode(t, err, fault.SchedTotalCap)
		}
	}
	if list, _ := e.ListSchedules(ctx, "ops"); ok != 16 || len(list) != 32 {
		t.Fatalf("%d person schedules created, %d listed; want 16 and 32", ok, len(list))
	}
}

func TestScheduleChanges(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	byPerson := e.schedule(t, "ops", store.ActorPerson, "rate(1 day)")
	byFleet := e.schedule(t, "ops", store.ActorFleet, "at(2026-04-01T09:00:00)")
	removing := e.schedule(t, "ops", store.ActorFleet, "rate(1 day)")
	if _, err := e.MarkScheduleRemoving(ctx, "ops", removing.ID, store.ActorSystem); err != nil {
		t.Fatal(err)
	}
	msg := "new message"
	expr := "rate(2 hours)"
	tests := []struct {
		name string
		do   func() (store.Schedule, error)
		want fault.Code
	}{
		{"fleet updates its own", func() (store.Schedule, error) {
			return e.UpdateSchedule(ctx, "ops", byFleet.ID, store.ActorFleet, store.SchedulePatch{Message: &msg})
		}, fault.Code{}},
		{"fleet updates a person's", func() (store.Schedule, error) {
			return e.UpdateSchedule(ctx, "ops", byPerson.ID, store.ActorFleet, store.SchedulePatch{Message: &msg})
		}, fault.SchedPersonOwns},
		{"fleet pauses a person's", func() (store.Schedule, error) {
			return e.PauseSchedule(ctx, "ops", byPerson.ID, store.ActorFleet)
		}, fault.SchedPersonOwns},
		{"fleet marks a person's for removal", func() (store.Schedule, error) {
			return e.MarkScheduleRemoving(ctx, "ops", byPerson.ID, store.ActorFleet)
		}, fault.SchedPersonOwns},
		{"person updates the fleet's", func() (store.Schedule, error) {
			return e.UpdateSchedule(ctx, "ops", byFleet.ID, store.ActorPerson, store.SchedulePatch{Expression: &expr})
		}, fault.Code{}},
		{"person updates a person's", func() (store.Schedule, error) {
			return e.UpdateSchedule(ctx, "ops", byPerson.ID, store.ActorPerson, store.SchedulePatch{Expression: &expr})
		}, fault.Code{}},
		{"bad expression", func() (store.Schedule, error) {
			bad := "rate(often)"
			return e.UpdateSchedule(ctx, "ops", byPerson.ID, store.ActorPerson, store.SchedulePatch{Expression: &bad})
		}, fault.RequestInvalid},
		{"update one being removed", func() (store.Schedule, error) {
			return e.UpdateSchedule(ctx, "ops", removing.ID, store.ActorPerson, store.SchedulePatch{Message: &msg})
		}, fault.SchedNotFound},
		{"resume one being removed", func() (store.Schedule, error) {
			return e.ResumeSchedule(ctx, "ops", removing.ID, store.ActorPerson)
		}, fault.SchedNotFound},
		{"unknown schedule", func() (store.Schedule, error) {
			return e.PauseSchedule(ctx, "ops", "sch_nope", store.ActorPerson)
		}, fault.SchedNotFound},
		{"unknown actor", func() (store.Schedule, error) {
			return e.PauseSchedule(ctx, "ops", byPerson.ID, "robot")
		}, fault.RequestInvalid},
	}
	for _, tt := range tests { // in order
		_, err := tt.do()
		if tt.want == (fault.Code{}) && err != nil || tt.want != (fault.Code{}) && !errorsIs(err, tt.want) {
			t.Fatalf("%s: err = %v, want %s", tt.name, err, tt.want.ID())
		}
	}
	got, _ := e.GetSchedule(ctx, "ops", byFleet.ID)
	if got.Message != msg || got.Expression != expr || got.OneShot {
		t.Fatalf("updated schedule = %+v; want the new message, rate(2 hours), no longer one-shot", got)
	}

	for _, s := range []store.Schedule{byPerson, byFleet} {
		p, err := e.PauseSchedule(ctx, "ops", s.ID, store.ActorPerson)
		if err != nil || p.State != store.SchedulePaused {
			t.Fatalf("PauseSchedule = %s, %v", p.State, err)
		}
		if p, err = e.PauseSchedule(ctx, "ops", s.ID, store.ActorPerson); err != nil || p.State != store.SchedulePaused {
			t.Fatalf("PauseSchedule again = %s, %v; want paused, no error", p.State, err)
		}
		if r, err := e.ResumeSchedule(ctx, "ops", s.ID, store.ActorPerson); err != nil || r.State != store.ScheduleActive {
			t.Fatalf("ResumeSchedule = %s, %v", r.State, err)
		}
	}

	// Deleting.
	err := e.DeleteSchedule(ctx, "ops", byPerson.ID, store.ActorFleet)
	wantCode(t, err, fault.SchedPersonOwns)
	if err := e.DeleteSchedule(ctx, "ops", byFleet.ID, store.ActorFleet); err != nil {
		t.Fatalf("fleet deletes its own: %v", err)
	}
	if err := e.DeleteSchedule(ctx, "ops", removing.ID, store.ActorSystem); err != nil {
		t.Fatalf("system deletes a removing one: %v", err)
	}
	err = e.DeleteSchedule(ctx, "ops", byFleet.ID, store.ActorPerson)
	wantCode(t, err, fault.SchedNotFound)
	if err := e.DeleteSchedule(ctx, "ops", byPerson.ID, store.ActorPerson); err != nil {
		t.Fatalf("person deletes a person's: %v", err)
	}
	f, _ := e.GetFleet(ctx, "ops")
	list, _ := e.ListSchedules(ctx, "ops")
	if f.Schedules != 0 || f.FleetSchedules != 0 || len(list) != 0 {
		t.Fatalf("after deleting all: counts %d/%d, %d listed; want 0", f.Schedules, f.FleetSchedules, len(list))
	}
	_, err = e.ListSchedules(ctx, "nope")
	wantCode(t, err, fault.FleetNotFound)
}

func TestConcurrentDeletesUncountOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	s := e.schedule(t, "ops", store.ActorFleet, "rate(1 day)")
	e.schedule(t, "ops", store.ActorFleet, "rate(1 day)")
	errs := make([]error, 6)
	parallel(len(errs), func(i int) { errs[i] = e.DeleteSchedule(ctx, "ops", s.ID, store.ActorFleet) })
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else {
			wantCode(t, err, fault.SchedNotFound)
		}
	}
	f, _ := e.GetFleet(ctx, "ops")
	if ok != 1 || f.Schedules != 1 || f.FleetSchedules != 1 {
		t.Fatalf("%d deletes won, counts %d/%d; want 1 and 1/1", ok, f.Schedules, f.FleetSchedules)
	}
}

func TestScheduleRunnable(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	e.fleet(t, "sleepy")
	active := e.schedule(t, "ops", store.ActorPerson, "rate(1 day)")
	paused := e.schedule(t, "ops", store.ActorPerson, "rate(1 day)")
	removing := e.schedule(t, "ops", store.ActorFleet, "at(2026-04-01T09:00:00)")
	onSleepy := e.schedule(t, "sleepy", store.ActorPerson, "rate(1 day)")
	if _, err := e.PauseSchedule(ctx, "ops", paused.ID, store.ActorPerson); err != nil {
		t.Fatal(err)
	}
	if _, err := e.MarkScheduleRemoving(ctx, "ops", removing.ID, store.ActorSystem); err != nil {
		t.Fatal(err)
	}
	if _, err := e.PauseFleet(ctx, "sleepy"); err != nil {
		t.Fatal(err)
	}
	fromAPI := e.run(t, "ops", false)
	fromSchedule, _, err := e.CreateRun(ctx, store.NewRun{Fleet: "ops", Source: store.SourceSchedule, ScheduleID: active.ID})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name      string
		fleet, id string
		caller    string
		want      fault.Code
	}{
		{"active", "ops", active.ID, "", fault.Code{}},
		{"active from an API run", "ops", active.ID, fromAPI.ID, fault.Code{}},
		{"paused schedule", "ops", paused.ID, "", fault.SchedNotRunnable},
		{"schedule being removed", "ops", removing.ID, "", fault.SchedNotRunnable},
		{"from a run a schedule started", "ops", active.ID, fromSchedule.ID, fault.SchedNotRunnable},
		{"paused fleet", "sleepy", onSleepy.ID, "", fault.FleetPaused},
		{"unknown schedule", "ops", "sch_nope", "", fault.SchedNotFound},
		{"unknown fleet", "nope", active.ID, "", fault.FleetNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, err := e.ScheduleRunnable(ctx, tt.fleet, tt.id, tt.caller)
			wantCode(t, err, tt.want)
			if err == nil && s.ID != tt.id {
				t.Fatalf("ScheduleRunnable = %s, want %s", s.ID, tt.id)
			}
		})
	}
}
