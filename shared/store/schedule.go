package store

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // schedules name IANA zones; Lambda's provided.al2023 image has no zoneinfo

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/limit"
)

// Schedule limits from the specification.
const (
	MaxSchedules      = limit.Schedules      // schedules a fleet holds in total
	MaxFleetSchedules = limit.FleetSchedules // of which the fleet created itself
)

// Actor is who asks for a schedule change: a person (API, CLI), the fleet
// itself (its schedule tools, from a run), or agentsfleet (removing a
// follow-up that fired or could not run). Only the fleet is restricted: it
// cannot change or delete a schedule a person created.
type Actor string

// The actors. A schedule's Source is the actor that created it (person or
// fleet).
const (
	ActorPerson Actor = "person"
	ActorFleet  Actor = "fleet"
	ActorSystem Actor = "system"
)

// ScheduleState is a schedule's state.
type ScheduleState string

// The schedule states. removing is a schedule on its way out: it no longer
// fires and cannot be changed, and still counts toward the caps until
// DeleteSchedule removes it.
const (
	ScheduleActive   ScheduleState = "active"
	SchedulePaused   ScheduleState = "paused"
	ScheduleRemoving ScheduleState = "removing"
)

// Schedule is a timed run of a fleet.
type Schedule struct {
	Fleet     string
	ID        string
	Source    Actor  // person or fleet
	CreatedBy string // who: a person's id, or the run that created it
	State     ScheduleState
	// Expression is EventBridge Scheduler's: cron(…), rate(…) or at(…).
	Expression string
	Timezone   string // IANA zone, default UTC
	Message    string // the run's input; secrets already replaced by the caller
	// OneShot marks an at(…) follow-up, removed once it has fired.
	OneShot bool
	// SpendCap is the tokens a day the runs the schedule starts may spend
	// together; 0 means no cap. SpentDay (yyyy-mm-dd in the schedule's time
	// zone) and SpentTokens are what they spent that day (AddScheduleSpend).
	SpendCap    int64
	SpentDay    string
	SpentTokens int64
	// PausedReason says why agentsfleet paused the schedule (its spend cap);
	// empty when a person or the fleet paused it, or it is not paused.
	PausedReason         string
	CreatedAt, UpdatedAt time.Time
}

// NewSchedule is what CreateSchedule needs.
type NewSchedule struct {
	Fleet      string
	Source     Actor // ActorPerson or ActorFleet
	CreatedBy  string
	Expression string
	Timezone   string
	Message    string
	SpendCap   int64 // tokens a day; 0: no cap
}

// SchedulePatch changes a schedule; nil fields stay as they are.
type SchedulePatch struct {
	Expression *string
	Timezone   *string
	Message    *string
	SpendCap   *int64 // 0 removes the cap
}

type scheduleRecord struct {
	PK         string        `dynamodbav:"pk"`
	SK         string        `dynamodbav:"sk"`
	Kind       string        `dynamodbav:"kind"`
	ID         string        `dynamodbav:"id"`
	Fleet      string        `dynamodbav:"fleet"`
	Source     Actor         `dynamodbav:"source"`
	CreatedBy  string        `dynamodbav:"createdBy,omitempty"`
	State      ScheduleState `dynamodbav:"state"`
	Expression string        `dynamodbav:"expr"`
	Timezone   string        `dynamodbav:"tz"`
	Message    string        `dynamodbav:"message,omitempty"`
	OneShot    bool          `dynamodbav:"oneShot"`
	SpendCap   int64         `dynamodbav:"spendCap,omitempty"`
	SpentDay   string        `dynamodbav:"spentDay,omitempty"`
	SpentTok   int64         `dynamodbav:"spentTok,omitempty"`
	PausedWhy  string        `dynamodbav:"pausedWhy,omitempty"`
	CreatedAt  time.Time     `dynamodbav:"createdAt"`
	UpdatedAt  time.Time     `dynamodbav:"updatedAt"`
}

func (r scheduleRecord) schedule() Schedule {
	return Schedule{Fleet: r.Fleet, ID: r.ID, Source: r.Source, CreatedBy: r.CreatedBy, State: r.State,
		Expression: r.Expression, Timezone: r.Timezone, Message: r.Message, OneShot: r.OneShot,
		SpendCap: r.SpendCap, SpentDay: r.SpentDay, SpentTokens: r.SpentTok, PausedReason: r.PausedWhy,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

func schedKey(fleet, id string) map[string]types.AttributeValue {
	return key(prefixFleet+fleet, prefixSched+id)
}

var (
	rateRE = regexp.MustCompile(`^rate\(([1-9][0-9]*) (minute|minutes|hour|hours|day|days)\)$`)
	atRE   = regexp.MustCompile(`^at\((\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})\)$`)
)

// checkExpression checks the form of an EventBridge Scheduler expression and
// reports whether it is one-shot (at). Field-level cron checks are
// EventBridge's: it refuses what it cannot run when the schedule is
// registered.
func checkExpression(x string) (oneShot bool, err error) {
	bad := func(why string) error {
		return fault.New(fault.RequestInvalid, "schedule expression %q: %s", x, why)
	}
	switch {
	case strings.HasPrefix(x, "cron(") && strings.HasSuffix(x, ")"):
		if n := len(strings.Fields(x[len("cron(") : len(x)-1])); n != 6 {
			return false, bad(fmt.Sprintf("cron() has 6 fields (minutes hours day-of-month month day-of-week year), not %d", n))
		}
		return false, nil
	case strings.HasPrefix(x, "rate("):
		m := rateRE.FindStringSubmatch(x)
		if m == nil {
			return false, bad("want rate(N minutes|hours|days)")
		}
		n, _ := strconv.Atoi(m[1])
		if (n == 1) != !strings.HasSuffix(m[2], "s") {
			return false, bad("rate() takes a singular unit for 1 and a plural one otherwise")
		}
		return false, nil
	case strings.HasPrefix(x, "at("):
		m := atRE.FindStringSubmatch(x)
		if m == nil {
			return false, bad("want at(yyyy-mm-ddThh:mm:ss)")
		}
		if _, err := time.Parse("2006-01-02T15:04:05", m[1]); err != nil {
			return false, bad("not a valid date and time")
		}
		return true, nil
	}
	return false, bad("want cron(…), rate(…) or at(…)")
}

func checkTimezone(tz string) error {
	if _, err := time.LoadLocation(tz); err != nil || tz == "" || tz == "Local" {
		return fault.New(fault.RequestInvalid, "time zone %q is not an IANA time zone", tz)
	}
	return nil
}

func checkSpendCap(c int64) error {
	if c < 0 {
		return fault.New(fault.RequestInvalid, "spend_cap %d: want tokens a day, 0 for no cap", c)
	}
	return nil
}

func checkMessage(m string) error {
	if len(m) > MaxBlobBytes {
		return fault.New(fault.RequestInvalid, "a schedule message is at most %d bytes", MaxBlobBytes)
	}
	return nil
}

// CreateSchedule creates an active schedule of a fleet. One transaction
// writes it and counts it on the fleet item, so whatever races, a fleet
// holds at most MaxSchedules (past that: fault.SchedTotalCap) of which at
// most MaxFleetSchedules created by the fleet (the next one:
// fault.SchedFleetCap, UZ-SCHED-009). An unknown fleet fails with
// fault.FleetNotFound. A paused fleet can have schedules created; they do
// not fire while it is paused.
func (s *Store) CreateSchedule(ctx context.Context, ns NewSchedule) (Schedule, error) {
	sc, err := s.createSchedule(ctx, ns)
	if err != nil {
		return Schedule{}, fmt.Errorf("create schedule of fleet %s: %w", ns.Fleet, err)
	}
	return sc, nil
}

func (s *Store) createSchedule(ctx context.Context, ns NewSchedule) (Schedule, error) {
	if err := checkName("fleet name", ns.Fleet); err != nil {
		return Schedule{}, err
	}
	if ns.Source != ActorPerson && ns.Source != ActorFleet {
		return Schedule{}, fault.New(fault.RequestInvalid, "a schedule's source is person or fleet, not %q", ns.Source)
	}
	if ns.Timezone == "" {
		ns.Timezone = "UTC"
	}
	oneShot, err := checkExpression(ns.Expression)
	if err != nil {
		return Schedule{}, err
	}
	if err := checkTimezone(ns.Timezone); err != nil {
		return Schedule{}, err
	}
	if err := checkMessage(ns.Message); err != nil {
		return Schedule{}, err
	}
	if err := checkSpendCap(ns.SpendCap); err != nil {
		return Schedule{}, err
	}
	byFleet := ns.Source == ActorFleet
	var rec scheduleRecord
	err = s.retry(ctx, func() error {
		now := s.now().UTC()
		rec = scheduleRecord{PK: prefixFleet + ns.Fleet, Kind: "schedule", ID: newID("sch_", now), Fleet: ns.Fleet,
			Source: ns.Source, CreatedBy: ns.CreatedBy, State: ScheduleActive, Expression: ns.Expression,
			Timezone: ns.Timezone, Message: ns.Message, OneShot: oneShot, SpendCap: ns.SpendCap, CreatedAt: now, UpdatedAt: now}
		rec.SK = prefixSched + rec.ID
		item, err := marshal(rec)
		if err != nil {
			return err
		}
		t := s.newTxn()
		fw := newWrite().exists().incr("schedTotal", 1).below("schedTotal", MaxSchedules)
		if byFleet {
			fw.incr("schedFleet", 1).below("schedFleet", MaxFleetSchedules)
		}
		t.update("fleet item", fleetKey(ns.Fleet), fw, s.scheduleCapFailed(ctx, ns.Fleet, byFleet))
		t.put("schedule item", item, newWrite().absent(), failWith(errRetry)) // id collision: theoretical
		return s.commit(ctx, t)
	})
	if err != nil {
		return Schedule{}, err
	}
	return rec.schedule(), nil
}

// scheduleCapFailed says why the fleet refused a schedule: it does not
// exist, or a cap is reached; otherwise a schedule was deleted in between
// and the create runs again.
func (s *Store) scheduleCapFailed(ctx context.Context, fleet string, byFleet bool) onFail {
	return func(old map[string]types.AttributeValue) error {
		item, err := s.current(ctx, fleetKey(fleet), old)
		if err != nil {
			return err
		}
		if item == nil {
			return fault.FleetNotFound
		}
		var fr fleetRecord
		if err := unmarshal(item, &fr); err != nil {
			return err
		}
		// The fleet's own cap first: the 17th fleet-created schedule is
		// UZ-SCHED-009 even when the fleet also holds 32.
		if byFleet && fr.SchedFleet >= MaxFleetSchedules {
			return fault.New(fault.SchedFleetCap, "fleet %s has created %d schedules itself", fleet, fr.SchedFleet)
		}
		if fr.SchedTotal >= MaxSchedules {
			return fault.New(fault.SchedTotalCap, "fleet %s holds %d schedules", fleet, fr.SchedTotal)
		}
		return errRetry
	}
}

// GetSchedule returns a schedule of the fleet, or fault.SchedNotFound.
func (s *Store) GetSchedule(ctx context.Context, fleet, id string) (Schedule, error) {
	r, err := s.getSchedule(ctx, fleet, id)
	if err != nil {
		return Schedule{}, fmt.Errorf("get schedule %s of fleet %s: %w", id, fleet, err)
	}
	return r.schedule(), nil
}

func (s *Store) getSchedule(ctx context.Context, fleet, id string) (scheduleRecord, error) {
	var r scheduleRecord
	if id == "" {
		return r, fault.SchedNotFound
	}
	found, err := s.getRecord(ctx, schedKey(fleet, id), &r)
	if err == nil && !found {
		err = fault.SchedNotFound
	}
	return r, err
}

// ListSchedules returns the fleet's schedules (at most MaxSchedules, so one
// page), oldest first, those of people and of the fleet together. An unknown
// fleet fails with fault.FleetNotFound.
func (s *Store) ListSchedules(ctx context.Context, fleet string) ([]Schedule, error) {
	var out []Schedule
	var start map[string]types.AttributeValue
	for {
		e := newExpr()
		page, err := s.db.Query(ctx, &dynamodb.QueryInput{
			TableName: &s.table,
			KeyConditionExpression: aws.String(e.n(AttrPK) + " = " + e.s(prefixFleet+fleet) +
				" AND begins_with(" + e.n(AttrSK) + ", " + e.s(prefixSched) + ")"),
			ExpressionAttributeNames:  e.nameMap(),
			ExpressionAttributeValues: e.valueMap(),
			ExclusiveStartKey:         start,
			ConsistentRead:            aws.Bool(true),
		})
		if err != nil {
			return nil, fmt.Errorf("list schedules of fleet %s: %w", fleet, err)
		}
		for _, item := range page.Items {
			var r scheduleRecord
			if err := unmarshal(item, &r); err != nil {
				return nil, fmt.Errorf("list schedules of fleet %s: %w", fleet, err)
			}
			out = append(out, r.schedule())
		}
		if start = page.LastEvaluatedKey; len(start) == 0 {
			break
		}
	}
	if len(out) == 0 {
		if _, err := s.getFleet(ctx, fleet); err != nil {
			return nil, fmt.Errorf("list schedules of fleet %s: %w", fleet, err)
		}
	}
	return out, nil
}

// UpdateSchedule changes a schedule's expression, time zone or message.
// The fleet cannot change a schedule a person created
// (fault.SchedPersonOwns); a schedule being removed cannot be changed
// (fault.SchedNotFound).
func (s *Store) UpdateSchedule(ctx context.Context, fleet, id string, actor Actor, p SchedulePatch) (Schedule, error) {
	sc, err := s.updateSchedule(ctx, fleet, id, actor, p)
	if err != nil {
		return Schedule{}, fmt.Errorf("update schedule %s of fleet %s: %w", id, fleet, err)
	}
	return sc, nil
}

func (s *Store) updateSchedule(ctx context.Context, fleet, id string, actor Actor, p SchedulePatch) (Schedule, error) {
	e := newExpr()
	set := []string{e.n("updatedAt") + " = " + e.t(s.now())}
	if p.Expression != nil {
		oneShot, err := checkExpression(*p.Expression)
		if err != nil {
			return Schedule{}, err
		}
		set = append(set, e.n("expr")+" = "+e.s(*p.Expression), e.n("oneShot")+" = "+e.b(oneShot))
	}
	if p.Timezone != nil {
		if err := checkTimezone(*p.Timezone); err != nil {
			return Schedule{}, err
		}
		set = append(set, e.n("tz")+" = "+e.s(*p.Timezone))
	}
	if p.Message != nil {
		if err := checkMessage(*p.Message); err != nil {
			return Schedule{}, err
		}
		set = append(set, e.n("message")+" = "+e.s(*p.Message))
	}
	if p.SpendCap != nil {
		if err := checkSpendCap(*p.SpendCap); err != nil {
			return Schedule{}, err
		}
		set = append(set, e.n("spendCap")+" = "+e.i(*p.SpendCap))
	}
	states := []string{string(ScheduleActive), string(SchedulePaused)}
	return s.changeSchedule(ctx, fleet, id, actor, e, "SET "+strings.Join(set, ", "), states)
}

// PauseSchedule stops a schedule from firing until ResumeSchedule. Pausing
// a paused schedule is no error. Permissions as UpdateSchedule.
func (s *Store) PauseSchedule(ctx context.Context, fleet, id string, actor Actor) (Schedule, error) {
	return s.setScheduleState(ctx, fleet, id, actor, SchedulePaused)
}

// ResumeSchedule makes a paused schedule active again. Permissions as
// UpdateSchedule.
func (s *Store) ResumeSchedule(ctx context.Context, fleet, id string, actor Actor) (Schedule, error) {
	return s.setScheduleState(ctx, fleet, id, actor, ScheduleActive)
}

// MarkScheduleRemoving moves a schedule to removing, the first step of
// deleting it: it no longer fires or changes, and cron_run refuses it, while
// its EventBridge schedule is deleted; DeleteSchedule then removes it.
// Permissions as DeleteSchedule.
func (s *Store) MarkScheduleRemoving(ctx context.Context, fleet, id string, actor Actor) (Schedule, error) {
	return s.setScheduleState(ctx, fleet, id, actor, ScheduleRemoving)
}

func (s *Store) setScheduleState(ctx context.Context, fleet, id string, actor Actor, to ScheduleState) (Schedule, error) {
	e := newExpr()
	set := "SET " + e.n("state") + " = " + e.s(string(to)) + ", " + e.n("updatedAt") + " = " + e.t(s.now()) +
		" REMOVE " + e.n("pausedWhy") // a reason is agentsfleet's own pause only (PauseScheduleBecause)
	states := []string{string(ScheduleActive), string(SchedulePaused)}
	if to == ScheduleRemoving {
		states = append(states, string(ScheduleRemoving))
	}
	sc, err := s.changeSchedule(ctx, fleet, id, actor, e, set, states)
	if err != nil {
		return Schedule{}, fmt.Errorf("move schedule %s of fleet %s to %s: %w", id, fleet, to, err)
	}
	return sc, nil
}

// changeSchedule applies update to a schedule in one of states, if actor
// may change it.
func (s *Store) changeSchedule(ctx context.Context, fleet, id string, actor Actor, e *expr, update string, states []string) (Schedule, error) {
	if err := checkActor(actor); err != nil {
		return Schedule{}, err
	}
	if id == "" {
		return Schedule{}, fault.SchedNotFound
	}
	cond := "attribute_exists(" + e.n(AttrPK) + ") AND " + e.in("state", states...)
	if actor == ActorFleet {
		cond += " AND " + e.n("source") + " = " + e.s(string(ActorFleet))
	}
	in := &dynamodb.UpdateItemInput{
		TableName:                           &s.table,
		Key:                                 schedKey(fleet, id),
		UpdateExpression:                    aws.String(update),
		ConditionExpression:                 aws.String(cond),
		ExpressionAttributeNames:            e.nameMap(),
		ExpressionAttributeValues:           e.valueMap(),
		ReturnValues:                        types.ReturnValueAllNew,
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
	}
	var r scheduleRecord
	err := s.retry(ctx, func() error {
		out, err := s.db.UpdateItem(ctx, in)
		if old, ok := conditionFailed(err); ok {
			return s.whyNotChange(ctx, fleet, id, actor, old, states)
		}
		if err != nil {
			return err
		}
		return unmarshal(out.Attributes, &r)
	})
	if err != nil {
		return Schedule{}, err
	}
	return r.schedule(), nil
}

// whyNotChange explains a failed schedule change from the schedule as it was.
func (s *Store) whyNotChange(ctx context.Context, fleet, id string, actor Actor, old map[string]types.AttributeValue, states []string) error {
	item, err := s.current(ctx, schedKey(fleet, id), old)
	if err != nil {
		return err
	}
	if item == nil {
		return fault.SchedNotFound
	}
	var r scheduleRecord
	if err := unmarshal(item, &r); err != nil {
		return err
	}
	if actor == ActorFleet && r.Source != ActorFleet {
		return fault.New(fault.SchedPersonOwns, "schedule %s was created by a person", id)
	}
	if slices.Contains(states, string(r.State)) {
		return errRetry // it changed between the write and the read
	}
	return fault.New(fault.SchedNotFound, "schedule %s is being removed", id)
}

func checkActor(a Actor) error {
	if a != ActorPerson && a != ActorFleet && a != ActorSystem {
		return fault.New(fault.RequestInvalid, "actor %q: want person, fleet or system", a)
	}
	return nil
}

// DeleteSchedule removes a schedule and uncounts it from the fleet's caps in
// one transaction. The fleet cannot delete a schedule a person created
// (fault.SchedPersonOwns); an unknown schedule fails with
// fault.SchedNotFound.
func (s *Store) DeleteSchedule(ctx context.Context, fleet, id string, actor Actor) error {
	if err := s.deleteSchedule(ctx, fleet, id, actor); err != nil {
		return fmt.Errorf("delete schedule %s of fleet %s: %w", id, fleet, err)
	}
	return nil
}

func (s *Store) deleteSchedule(ctx context.Context, fleet, id string, actor Actor) error {
	if err := checkActor(actor); err != nil {
		return err
	}
	r, err := s.getSchedule(ctx, fleet, id)
	if err != nil {
		return err
	}
	if actor == ActorFleet && r.Source != ActorFleet {
		return fault.New(fault.SchedPersonOwns, "schedule %s was created by a person", id)
	}
	// Source never changes, so the counters to lower are known before the
	// write; the delete's condition makes sure they are lowered once.
	t := s.newTxn()
	sw := newWrite().exists()
	t.delete("schedule item", schedKey(fleet, id), sw.is("source", sw.s(string(r.Source))), failWith(fault.SchedNotFound)) // deleted meanwhile
	fw := newWrite().incr("schedTotal", -1)
	if r.Source == ActorFleet {
		fw.incr("schedFleet", -1)
	}
	t.update("fleet item", fleetKey(fleet), fw, nil)
	return s.commit(ctx, t)
}

// ScheduleRunnable applies cron_run's rule (and the schedule λ's) to a
// schedule: the fleet must not be paused (fault.FleetPaused), the schedule
// must be active (fault.SchedNotRunnable when paused or being removed), and
// callerRunID, when not empty, must not be a run a schedule started
// (fault.SchedNotRunnable). It returns the schedule.
func (s *Store) ScheduleRunnable(ctx context.Context, fleet, id, callerRunID string) (Schedule, error) {
	sc, err := s.scheduleRunnable(ctx, fleet, id, callerRunID)
	if err != nil {
		return Schedule{}, fmt.Errorf("run schedule %s of fleet %s: %w", id, fleet, err)
	}
	return sc, nil
}

func (s *Store) scheduleRunnable(ctx context.Context, fleet, id, callerRunID string) (Schedule, error) {
	fr, err := s.getFleet(ctx, fleet)
	if err != nil {
		return Schedule{}, err
	}
	r, err := s.getSchedule(ctx, fleet, id)
	if err != nil {
		return Schedule{}, err
	}
	if fr.Paused {
		return Schedule{}, fault.New(fault.FleetPaused, "fleet %s is paused", fleet)
	}
	if r.State != ScheduleActive {
		return Schedule{}, fault.New(fault.SchedNotRunnable, "schedule %s is %s", id, r.State)
	}
	if callerRunID != "" {
		run, err := s.getRun(ctx, callerRunID)
		if err != nil {
			return Schedule{}, err
		}
		if run.Source == SourceSchedule {
			return Schedule{}, fault.New(fault.SchedNotRunnable, "run %s was started by schedule %s", callerRunID, run.ScheduleID)
		}
	}
	return r.schedule(), nil
}

// PauseScheduleBecause is agentsfleet pausing an active schedule by itself
// (ActorSystem), keeping reason on it (Schedule.PausedReason) until a
// person or the fleet resumes or pauses it. A schedule already paused is
// returned as it is, its reason unchanged; one being removed fails with
// fault.SchedNotFound.
func (s *Store) PauseScheduleBecause(ctx context.Context, fleet, id, reason string) (Schedule, error) {
	e := newExpr()
	set := "SET " + e.n("state") + " = " + e.s(string(SchedulePaused)) + ", " + e.n("updatedAt") + " = " + e.t(s.now()) +
		", " + e.n("pausedWhy") + " = " + e.s(reason)
	sc, err := s.changeSchedule(ctx, fleet, id, ActorSystem, e, set, []string{string(ScheduleActive)})
	if err == nil {
		return sc, nil
	}
	if cur, gerr := s.GetSchedule(ctx, fleet, id); gerr == nil && cur.State == SchedulePaused {
		return cur, nil
	}
	return Schedule{}, fmt.Errorf("pause schedule %s of fleet %s: %w", id, fleet, err)
}

// AddScheduleSpend adds tokens to what the runs of a schedule spent on day
// (yyyy-mm-dd, the caller's calendar): on the day already counted it adds,
// on another day it starts the count afresh. Each call is one conditional
// write, so concurrent callers neither lose nor double an addition; the
// caller makes sure each run is added once. It returns the schedule as
// changed; an unknown schedule fails with fault.SchedNotFound.
func (s *Store) AddScheduleSpend(ctx context.Context, fleet, id, day string, tokens int64) (Schedule, error) {
	var r scheduleRecord
	err := s.retry(ctx, func() error {
		for _, same := range []bool{true, false} {
			e := newExpr()
			d, tok, pk := e.n("spentDay"), e.n("spentTok"), e.n(AttrPK)
			dayV, tokV := e.s(day), e.i(tokens)
			update := "SET " + d + " = " + dayV + ", " + tok + " = " + tokV
			cond := "attribute_exists(" + pk + ") AND (attribute_not_exists(" + d + ") OR " + d + " <> " + dayV + ")"
			if same {
				update = "SET " + tok + " = if_not_exists(" + tok + ", " + e.i(0) + ") + " + tokV
				cond = "attribute_exists(" + pk + ") AND " + d + " = " + dayV
			}
			out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
				TableName: &s.table, Key: schedKey(fleet, id),
				UpdateExpression: aws.String(update), ConditionExpression: aws.String(cond),
				ExpressionAttributeNames: e.nameMap(), ExpressionAttributeValues: e.valueMap(),
				ReturnValues:                        types.ReturnValueAllNew,
				ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
			})
			if old, failed := conditionFailed(err); failed {
				item, err := s.current(ctx, schedKey(fleet, id), old)
				if err != nil {
					return err
				}
				if item == nil {
					return fault.SchedNotFound
				}
				continue // the other branch holds
			}
			if err != nil {
				return err
			}
			return unmarshal(out.Attributes, &r)
		}
		return errRetry // the day changed under both branches
	})
	if err != nil {
		return Schedule{}, fmt.Errorf("add spend to schedule %s of fleet %s: %w", id, fleet, err)
	}
	return r.schedule(), nil
}
