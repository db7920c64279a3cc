// Package eventbridge keeps agentsfleet's schedules in Amazon EventBridge
// Scheduler (aws-sdk-go-v2/service/scheduler): one schedule group per
// deployment, one Scheduler schedule per agentsfleet schedule, each invoking
// the schedule function (functions/schedule) with a Payload naming the fleet
// and the schedule.
//
// The same code runs against the emulator (moto), which stores schedules but
// never fires them; package schedule/clock fires them there. Two moto
// quirks shape it (both checked by the tests):
//
//   - CreateSchedule in a group that does not exist fails with HTTP 500
//     rather than ResourceNotFoundException, and CreateScheduleGroup on a
//     group that exists replaces it, dropping its schedules, where AWS
//     answers ConflictException. EnsureGroup therefore looks before it
//     creates.
//   - UpdateSchedule ignores ActionAfterCompletion and keeps the old value.
//     Put therefore checks it after an update and, where it did not take,
//     deletes and recreates the schedule.
package eventbridge

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/agentsfleet/agentsfleet/shared/schedule"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// ErrNotFound is returned (wrapped) by Get for a schedule that does not
// exist.
var ErrNotFound = errors.New("schedule not found")

// State is a schedule's state in Scheduler.
type State string

// The schedule states.
const (
	Enabled  State = State(types.ScheduleStateEnabled)
	Disabled State = State(types.ScheduleStateDisabled)
)

// What Scheduler does with a schedule once it has no invocations left.
const (
	AfterCompletionNone   = string(types.ActionAfterCompletionNone)
	AfterCompletionDelete = string(types.ActionAfterCompletionDelete)
)

// Payload is the Input every agentsfleet schedule sends its target, the
// schedule function: {"fleet": "...", "schedule_id": "...",
// "scheduled_time": "..."}.
type Payload struct {
	Fleet      string `json:"fleet"`
	ScheduleID string `json:"schedule_id"`
	// ScheduledTime is the firing's due time, RFC 3339. Registered schedules
	// carry ScheduledTimeAttribute, which Scheduler (and the local clock)
	// replaces with the due time on each invocation, so that a delivery
	// and its retries name the same firing. Optional: empty in payloads
	// written before it existed.
	ScheduledTime string `json:"scheduled_time,omitempty"`
}

// ScheduledTimeAttribute is Scheduler's context attribute for the due time
// of the invocation, replaced in the target's Input.
const ScheduledTimeAttribute = "<aws.scheduler.scheduled-time>"

type dueKey struct{}

// WithScheduledTime returns ctx carrying the due time of the firing it
// delivers: the local clock's way of telling the target what Scheduler
// tells it through ScheduledTimeAttribute.
func WithScheduledTime(ctx context.Context, due time.Time) context.Context {
	return context.WithValue(ctx, dueKey{}, due)
}

// ScheduledTime returns the due time WithScheduledTime put in ctx.
func ScheduledTime(ctx context.Context) (time.Time, bool) {
	t, ok := ctx.Value(dueKey{}).(time.Time)
	return t, ok
}

// Marshal returns the payload's JSON. '<' and '>' stay as they are (no
// HTML escaping), so that Scheduler sees its context attributes.
func (p Payload) Marshal() []byte {
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(p) // three strings: cannot fail
	return []byte(strings.TrimSuffix(buf.String(), "\n"))
}

// ParsePayload reads a Payload, refusing one without a fleet or a
// schedule_id, or with fields it does not know.
func ParsePayload(b []byte) (Payload, error) {
	var p Payload
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return Payload{}, fmt.Errorf("schedule payload: %w", err)
	}
	if p.Fleet == "" || p.ScheduleID == "" {
		return Payload{}, fmt.Errorf("schedule payload %s: want fleet and schedule_id", b)
	}
	return p, nil
}

// Schedule is one schedule as Put writes it and Get reads it.
type Schedule struct {
	Name       string // see Name
	Expression string // cron(…), rate(…) or at(…)
	Timezone   string // IANA zone; empty means UTC
	State      State  // empty means Enabled
	Input      []byte // the target's input; agentsfleet's is a Payload
	// Start is Scheduler's StartDate: a rate counts from it, a cron
	// expression fires on or after it. Zero means none: a rate then counts
	// from the schedule's creation.
	Start time.Time

	// Read by Get, ignored by Put.
	ARN                   string
	ActionAfterCompletion string // AfterCompletionNone or AfterCompletionDelete
	TargetARN             string
	Created, Modified     time.Time
}

// Summary is a schedule as List returns it.
type Summary struct {
	Name              string
	ARN               string
	State             State
	Created, Modified time.Time
}

// Config says where the schedules go and what they invoke.
type Config struct {
	// Group is the schedule group holding every schedule of the deployment
	// (1-64 characters of 0-9 a-z A-Z - _ .).
	Group string
	// TargetARN is the function each schedule invokes.
	TargetARN string
	// RoleARN is the role Scheduler assumes to invoke it.
	RoleARN string
	// PageSize is ListSchedules' page size; 0 leaves the service's default.
	PageSize int32
}

// Scheduler is the deployment's schedule group in EventBridge Scheduler. It
// is safe for concurrent use.
type Scheduler struct {
	client *scheduler.Client
	cfg    Config
}

var nameRE = regexp.MustCompile(`^[0-9a-zA-Z_.-]{1,64}$`)

// New returns a Scheduler for the group in cfg, checking cfg.
func New(client *scheduler.Client, cfg Config) (*Scheduler, error) {
	switch {
	case client == nil:
		return nil, errors.New("eventbridge scheduler: no client")
	case !nameRE.MatchString(cfg.Group):
		return nil, fmt.Errorf("eventbridge scheduler: group name %q: want 1 to 64 of the characters 0-9 a-z A-Z - _ and . (dot)", cfg.Group)
	case cfg.TargetARN == "" || cfg.RoleARN == "":
		return nil, fmt.Errorf("eventbridge scheduler group %s: want the target ARN and the role ARN", cfg.Group)
	}
	return &Scheduler{client: client, cfg: cfg}, nil
}

// Group returns the schedule group's name.
func (s *Scheduler) Group() string { return s.cfg.Group }

// EnsureGroup creates the schedule group unless it exists. It looks first
// because moto's CreateScheduleGroup replaces an existing group with an
// empty one; two EnsureGroup calls racing on a missing group can therefore,
// on moto only, drop schedules put in between.
func (s *Scheduler) EnsureGroup(ctx context.Context) error {
	_, err := s.client.GetScheduleGroup(ctx, &scheduler.GetScheduleGroupInput{Name: &s.cfg.Group})
	if err == nil {
		return nil
	}
	if !isNotFound(err) {
		return fmt.Errorf("get schedule group %s: %w", s.cfg.Group, err)
	}
	_, err = s.client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: &s.cfg.Group})
	var conflict *types.ConflictException
	if err != nil && !errors.As(err, &conflict) {
		return fmt.Errorf("create schedule group %s: %w", s.cfg.Group, err)
	}
	return nil
}

// Put creates the schedule, or replaces it when one of that name exists:
// expression, time zone, state, input and start as given, invoking the
// target with the role, FlexibleTimeWindow OFF, and ActionAfterCompletion
// DELETE for an at() expression (NONE otherwise). The expression and time
// zone are checked first (a *schedule.Error), and the name and input (not
// empty), so that what Scheduler refuses is refused on moto too. The group
// must exist (EnsureGroup): on moto a missing group fails with HTTP 500.
func (s *Scheduler) Put(ctx context.Context, sc Schedule) error {
	if err := s.put(ctx, sc); err != nil {
		return fmt.Errorf("put schedule %s in group %s: %w", sc.Name, s.cfg.Group, err)
	}
	return nil
}

func (s *Scheduler) put(ctx context.Context, sc Schedule) error {
	if !nameRE.MatchString(sc.Name) {
		return fmt.Errorf("schedule name %q: want 1 to 64 characters of 0-9 a-z A-Z - _ . (see Name)", sc.Name)
	}
	expr, err := schedule.Parse(sc.Expression)
	if err != nil {
		return err
	}
	if _, err := schedule.LoadTimezone(sc.Timezone); err != nil {
		return err
	}
	tz := sc.Timezone
	if tz == "" {
		tz = "UTC"
	}
	state := sc.State
	if state == "" {
		state = Enabled
	}
	if state != Enabled && state != Disabled {
		return fmt.Errorf("schedule state %q: want %s or %s", state, Enabled, Disabled)
	}
	if len(sc.Input) == 0 {
		// Scheduler's Target.Input is at least 1 character; moto takes "".
		return errors.New("schedule input: empty; Scheduler wants at least 1 character (agentsfleet's is a Payload)")
	}
	after := types.ActionAfterCompletionNone
	if expr.OneShot() {
		after = types.ActionAfterCompletionDelete
	}
	target := &types.Target{Arn: &s.cfg.TargetARN, RoleArn: &s.cfg.RoleARN, Input: aws.String(string(sc.Input))}
	window := &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff}
	var start *time.Time
	if !sc.Start.IsZero() {
		start = aws.Time(sc.Start)
	}
	create := func() error {
		_, err := s.client.CreateSchedule(ctx, &scheduler.CreateScheduleInput{
			Name: &sc.Name, GroupName: &s.cfg.Group, ScheduleExpression: &sc.Expression,
			ScheduleExpressionTimezone: &tz, State: types.ScheduleState(state), Target: target,
			FlexibleTimeWindow: window, ActionAfterCompletion: after, StartDate: start,
		})
		return err
	}
	err = create()
	var conflict *types.ConflictException
	if !errors.As(err, &conflict) {
		return err
	}
	_, err = s.client.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{
		Name: &sc.Name, GroupName: &s.cfg.Group, ScheduleExpression: &sc.Expression,
		ScheduleExpressionTimezone: &tz, State: types.ScheduleState(state), Target: target,
		FlexibleTimeWindow: window, ActionAfterCompletion: after, StartDate: start,
	})
	if err != nil {
		return err
	}
	// moto keeps the old ActionAfterCompletion on update: where it did not
	// take, recreate the schedule so that it does.
	got, err := s.get(ctx, sc.Name)
	if err != nil {
		return err
	}
	if got.ActionAfterCompletion == string(after) {
		return nil
	}
	if err := s.delete(ctx, sc.Name); err != nil {
		return err
	}
	return create()
}

// Get returns the named schedule, or an error wrapping ErrNotFound.
func (s *Scheduler) Get(ctx context.Context, name string) (Schedule, error) {
	sc, err := s.get(ctx, name)
	if err != nil {
		return Schedule{}, fmt.Errorf("get schedule %s in group %s: %w", name, s.cfg.Group, err)
	}
	return sc, nil
}

func (s *Scheduler) get(ctx context.Context, name string) (Schedule, error) {
	out, err := s.client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: &name, GroupName: &s.cfg.Group})
	if isNotFound(err) {
		return Schedule{}, ErrNotFound
	}
	if err != nil {
		return Schedule{}, err
	}
	sc := Schedule{
		Name: aws.ToString(out.Name), Expression: aws.ToString(out.ScheduleExpression),
		Timezone: aws.ToString(out.ScheduleExpressionTimezone), State: State(out.State),
		Start: aws.ToTime(out.StartDate), ARN: aws.ToString(out.Arn),
		ActionAfterCompletion: string(out.ActionAfterCompletion),
		Created:               aws.ToTime(out.CreationDate), Modified: aws.ToTime(out.LastModificationDate),
	}
	if sc.ActionAfterCompletion == "" {
		sc.ActionAfterCompletion = AfterCompletionNone // Scheduler's default
	}
	if out.Target != nil {
		sc.TargetARN = aws.ToString(out.Target.Arn)
		if out.Target.Input != nil {
			sc.Input = []byte(*out.Target.Input)
		}
	}
	return sc, nil
}

// Delete deletes the named schedule; one that does not exist is no error.
func (s *Scheduler) Delete(ctx context.Context, name string) error {
	if err := s.delete(ctx, name); err != nil {
		return fmt.Errorf("delete schedule %s in group %s: %w", name, s.cfg.Group, err)
	}
	return nil
}

func (s *Scheduler) delete(ctx context.Context, name string) error {
	_, err := s.client.DeleteSchedule(ctx, &scheduler.DeleteScheduleInput{Name: &name, GroupName: &s.cfg.Group})
	if isNotFound(err) {
		return nil
	}
	return err
}

// List returns every schedule in the group, all pages, in the service's
// order. A group that does not exist lists nothing on moto; on AWS it is
// also an empty list.
func (s *Scheduler) List(ctx context.Context) ([]Summary, error) {
	in := &scheduler.ListSchedulesInput{GroupName: &s.cfg.Group}
	if s.cfg.PageSize > 0 {
		in.MaxResults = aws.Int32(s.cfg.PageSize)
	}
	var out []Summary
	for p := scheduler.NewListSchedulesPaginator(s.client, in); p.HasMorePages(); {
		page, err := p.NextPage(ctx)
		if err != nil {
			return nil, fmt.Errorf("list schedules in group %s: %w", s.cfg.Group, err)
		}
		for _, it := range page.Schedules {
			out = append(out, Summary{Name: aws.ToString(it.Name), ARN: aws.ToString(it.Arn), State: State(it.State),
				Created: aws.ToTime(it.CreationDate), Modified: aws.ToTime(it.LastModificationDate)})
		}
	}
	return out, nil
}

func isNotFound(err error) bool {
	var nf *types.ResourceNotFoundException
	return errors.As(err, &nf)
}

// Name returns the Scheduler schedule name of a fleet's schedule: a
// deterministic function of the two, unique to the pair, that fits
// Scheduler's 1-64 characters of 0-9 a-z A-Z - _ . whatever the fleet name
// (store allows 1-128 printable characters without spaces or '#').
//
// It reads FLEET-ID-HASH: FLEET is the fleet name's first 21 bytes and ID
// the schedule id's first 30 (store's ids, sch_ and 26 characters, fit),
// each with every byte outside that alphabet replaced by '_', and HASH is
// the first 10 hex digits of SHA-256(fleet, NUL, id), which keeps two pairs
// apart when cutting or replacing made their readable parts equal. At most
// 21+1+30+1+10 = 63 characters.
func Name(fleet, scheduleID string) string {
	sum := sha256.Sum256([]byte(fleet + "\x00" + scheduleID))
	return clean(fleet, 21) + "-" + clean(scheduleID, 30) + "-" + hex.EncodeToString(sum[:5])
}

func clean(s string, n int) string {
	b := []byte(s)
	if len(b) > n {
		b = b[:n]
	}
	for i, c := range b {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '-' || c == '_' || c == '.') {
			b[i] = '_'
		}
	}
	return string(b)
}

// The settings ConfigFromEnv reads.
const (
	EnvGroup  = "AGENTSFLEET_SCHEDULE_GROUP"
	EnvTarget = "AGENTSFLEET_SCHEDULE_TARGET_ARN"
	EnvRole   = "AGENTSFLEET_SCHEDULE_ROLE_ARN"
)

// Settings are the variables ConfigFromEnv reads, none of them required
// (they go together).
func Settings() []setting.Var {
	return []setting.Var{{Name: EnvGroup}, {Name: EnvTarget}, {Name: EnvRole}}
}

// ConfigFromEnv reads a Config from EnvGroup, EnvTarget and EnvRole: all
// three, or none (ok false: this deployment has no schedules). Some but not
// all is an error naming them.
func ConfigFromEnv(getenv func(string) string) (cfg Config, ok bool, err error) {
	get := func(k string) string { return strings.TrimSpace(getenv(k)) }
	cfg = Config{Group: get(EnvGroup), TargetARN: get(EnvTarget), RoleARN: get(EnvRole)}
	switch {
	case cfg.Group == "" && cfg.TargetARN == "" && cfg.RoleARN == "":
		return Config{}, false, nil
	case cfg.Group == "" || cfg.TargetARN == "" || cfg.RoleARN == "":
		return Config{}, false, fmt.Errorf("%s, %s and %s go together: set all three or none", EnvGroup, EnvTarget, EnvRole)
	}
	return cfg, true, nil
}
