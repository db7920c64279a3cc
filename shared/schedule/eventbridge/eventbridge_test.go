package eventbridge_test

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/scheduler/types"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/schedule"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
)

func TestMain(m *testing.M) { awstest.Main(m) }

// client talks to the emulator without keeping connections: the emulator
// serves one connection at a time, and a connection the transport dialed
// for a request cancelled meanwhile would otherwise sit idle in its pool,
// holding the emulator (and every other test) until the idle timeout.
func client(t *testing.T) *scheduler.Client {
	t.Helper()
	return scheduler.NewFromConfig(awstest.Config(t), func(o *scheduler.Options) {
		o.HTTPClient = awshttp.NewBuildableClient().WithTransportOptions(func(tr *http.Transport) { tr.DisableKeepAlives = true })
	})
}

const (
	targetARN = "arn:aws:lambda:us-east-1:123456789012:function:agentsfleet-schedule"
	roleARN   = "arn:aws:iam::123456789012:role/agentsfleet-scheduler"
)

func newScheduler(t *testing.T, pageSize int32) (*eventbridge.Scheduler, *scheduler.Client) {
	t.Helper()
	c := client(t)
	s, err := eventbridge.New(c, eventbridge.Config{
		Group: awstest.UniqueName(t, "af"), TargetARN: targetARN, RoleARN: roleARN, PageSize: pageSize})
	if err != nil {
		t.Fatal(err)
	}
	return s, c
}

func ensured(t *testing.T, pageSize int32) (*eventbridge.Scheduler, *scheduler.Client) {
	t.Helper()
	s, client := newScheduler(t, pageSize)
	if err := s.EnsureGroup(context.Background()); err != nil {
		t.Fatalf("EnsureGroup: %v", err)
	}
	return s, client
}

func TestPutGetListDelete(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := ensured(t, 0)
	name := eventbridge.Name("ops", "sch_01")
	input := eventbridge.Payload{Fleet: "ops", ScheduleID: "sch_01"}.Marshal()
	want := eventbridge.Schedule{Name: name, Expression: "cron(0 9 ? * MON-FRI *)", Timezone: "America/New_York",
		State: eventbridge.Enabled, Input: input}
	if err := s.Put(ctx, want); err != nil {
		t.Fatalf("Put: %v", err)
	}
	got, err := s.Get(ctx, name)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Name != name || got.Expression != want.Expression || got.Timezone != want.Timezone ||
		got.State != eventbridge.Enabled || string(got.Input) != string(input) || got.TargetARN != targetARN ||
		got.ActionAfterCompletion != eventbridge.AfterCompletionNone || got.Created.IsZero() || got.ARN == "" {
		t.Fatalf("Get = %+v, want %+v with NONE after completion", got, want)
	}
	p, err := eventbridge.ParsePayload(got.Input)
	if err != nil || p.Fleet != "ops" || p.ScheduleID != "sch_01" {
		t.Fatalf("ParsePayload(%s) = %+v, %v", got.Input, p, err)
	}

	// Put again: an update (disable, new expression, default zone).
	want.Expression, want.State, want.Timezone = "rate(5 minutes)", eventbridge.Disabled, ""
	if err := s.Put(ctx, want); err != nil {
		t.Fatalf("Put (update): %v", err)
	}
	got, err = s.Get(ctx, name)
	if err != nil {
		t.Fatalf("Get: %v", err)
	}
	if got.Expression != "rate(5 minutes)" || got.State != eventbridge.Disabled || got.Timezone != "UTC" {
		t.Fatalf("after update Get = %+v, want rate(5 minutes), DISABLED, UTC", got)
	}

	list, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	if len(list) != 1 || list[0].Name != name || list[0].State != eventbridge.Disabled {
		t.Fatalf("List = %+v, want the one disabled schedule", list)
	}

	if err := s.Delete(ctx, name); err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if _, err := s.Get(ctx, name); !errors.Is(err, eventbridge.ErrNotFound) {
		t.Fatalf("Get after Delete: %v, want ErrNotFound", err)
	}
	if err := s.Delete(ctx, name); err != nil {
		t.Fatalf("Delete of a missing schedule: %v, want nil", err)
	}
}

// moto's CreateScheduleGroup replaces an existing group (dropping its
// schedules) where AWS answers ConflictException; EnsureGroup must keep them.
func TestEnsureGroupKeepsSchedules(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, client := ensured(t, 0)
	put := func(name string) {
		t.Helper()
		if err := s.Put(ctx, eventbridge.Schedule{Name: name, Expression: "rate(1 hour)", Input: []byte(`{}`)}); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	put("keep")
	if err := s.EnsureGroup(ctx); err != nil {
		t.Fatalf("EnsureGroup again: %v", err)
	}
	if _, err := s.Get(ctx, "keep"); err != nil {
		t.Fatalf("Get after a second EnsureGroup: %v", err)
	}

	// What the emulator does with a second CreateScheduleGroup, recorded.
	_, err := client.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(s.Group())})
	var conflict *types.ConflictException
	switch _, getErr := s.Get(ctx, "keep"); {
	case errors.As(err, &conflict):
		t.Log("emulator: CreateScheduleGroup on an existing group is ConflictException, as on AWS")
	case err == nil && errors.Is(getErr, eventbridge.ErrNotFound):
		t.Log("emulator: CreateScheduleGroup on an existing group replaced it and dropped its schedules (moto)")
	default:
		t.Logf("emulator: CreateScheduleGroup on an existing group: %v; schedule then: %v", err, getErr)
	}
}

// moto answers 500 to CreateSchedule in a missing group: Put must fail,
// not create the schedule elsewhere.
func TestPutWithoutGroupFails(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newScheduler(t, 0)
	err := s.Put(ctx, eventbridge.Schedule{Name: "x", Expression: "rate(1 hour)", Input: []byte(`{}`)})
	if err == nil {
		t.Fatal("Put in a missing group succeeded")
	}
	if !strings.Contains(err.Error(), "put schedule x in group "+s.Group()) {
		t.Fatalf("error %q lacks its context", err)
	}
	t.Logf("emulator: CreateSchedule in a missing group: %v", err)
	list, err := s.List(ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("List of a missing group = %v, %v; want empty, nil", list, err)
	}
}

// at() schedules carry ActionAfterCompletion DELETE, others NONE, also when
// Put changes one into the other, although moto's UpdateSchedule ignores
// ActionAfterCompletion.
func TestActionAfterCompletion(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, client := ensured(t, 0)
	check := func(name, want string) eventbridge.Schedule {
		t.Helper()
		got, err := s.Get(ctx, name)
		if err != nil {
			t.Fatalf("Get: %v", err)
		}
		if got.ActionAfterCompletion != want {
			t.Fatalf("%s: ActionAfterCompletion = %q, want %q", got.Expression, got.ActionAfterCompletion, want)
		}
		return got
	}
	sc := eventbridge.Schedule{Name: "follow-up", Expression: "at(2030-01-01T09:00:00)", Input: []byte(`{"a":1}`)}
	if err := s.Put(ctx, sc); err != nil {
		t.Fatalf("Put: %v", err)
	}
	check(sc.Name, eventbridge.AfterCompletionDelete)
	sc.Expression = "cron(0 9 * * ? *)"
	if err := s.Put(ctx, sc); err != nil {
		t.Fatalf("Put (to cron): %v", err)
	}
	got := check(sc.Name, eventbridge.AfterCompletionNone)
	if got.Expression != sc.Expression || string(got.Input) != `{"a":1}` {
		t.Fatalf("after Put to cron: %+v", got)
	}
	sc.Expression = "at(2031-01-01T09:00:00)"
	if err := s.Put(ctx, sc); err != nil {
		t.Fatalf("Put (back to at): %v", err)
	}
	check(sc.Name, eventbridge.AfterCompletionDelete)

	// The quirk itself, recorded: a raw UpdateSchedule asking for NONE.
	_, err := client.UpdateSchedule(ctx, &scheduler.UpdateScheduleInput{
		Name: aws.String(sc.Name), GroupName: aws.String(s.Group()), ScheduleExpression: aws.String("rate(1 hour)"),
		FlexibleTimeWindow:    &types.FlexibleTimeWindow{Mode: types.FlexibleTimeWindowModeOff},
		Target:                &types.Target{Arn: aws.String(targetARN), RoleArn: aws.String(roleARN)},
		ActionAfterCompletion: types.ActionAfterCompletionNone,
	})
	if err != nil {
		t.Fatalf("UpdateSchedule: %v", err)
	}
	raw, _ := s.Get(ctx, sc.Name)
	t.Logf("emulator: UpdateSchedule asking ActionAfterCompletion NONE left %q", raw.ActionAfterCompletion)
}

func TestListPages(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := ensured(t, 2)
	var want []string
	for i := range 5 {
		name := eventbridge.Name("pages", "sch_"+string(rune('a'+i)))
		want = append(want, name)
		if err := s.Put(ctx, eventbridge.Schedule{Name: name, Expression: "rate(1 day)", Input: []byte(`{}`)}); err != nil {
			t.Fatalf("Put: %v", err)
		}
	}
	list, err := s.List(ctx)
	if err != nil {
		t.Fatalf("List: %v", err)
	}
	var got []string
	for _, it := range list {
		got = append(got, it.Name)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("List over pages of 2 = %v, want %v", got, want)
	}
}

func TestPutRefusesBadInput(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := newScheduler(t, 0) // no group: nothing may reach the service
	for _, tt := range []struct {
		sc   eventbridge.Schedule
		want string
	}{
		{eventbridge.Schedule{Name: "a", Expression: "cron(0 9 * * * *)"}, "cron(0 9 * * * *): day-of-month or day-of-week must be ?"},
		{eventbridge.Schedule{Name: "a", Expression: "rate(1 hour)", Timezone: "Mars/Base"}, `time zone "Mars/Base": not an IANA`},
		{eventbridge.Schedule{Name: "a b", Expression: "rate(1 hour)"}, `schedule name "a b"`},
		{eventbridge.Schedule{Name: "a", Expression: "rate(1 hour)", State: "PAUSED"}, `schedule state "PAUSED"`},
	} {
		err := s.Put(ctx, tt.sc)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("Put(%+v) = %v, want an error containing %q", tt.sc, err, tt.want)
		}
	}
	err := s.Put(ctx, eventbridge.Schedule{Name: "a", Expression: "rate(0 hours)"})
	if !errors.Is(err, fault.RequestInvalid) {
		t.Errorf("a bad expression's error %v does not match fault.RequestInvalid", err)
	}
}

// What Scheduler's API refuses and moto takes is refused before the call:
// a ScheduleExpression over 256 characters (well formed, or moto would
// catch it too) and an empty target Input (at least 1 character).
func TestPutRefusesWhatSchedulerRefuses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := ensured(t, 0)
	var years []string
	for y := 2030; y < 2078; y++ {
		years = append(years, strconv.Itoa(y))
	}
	long := "cron(0 9 ? * MON-FRI " + strings.Join(years, ",") + ")"
	err := s.Put(ctx, eventbridge.Schedule{Name: "long", Expression: long, Input: []byte(`{}`)})
	var se *schedule.Error
	if !errors.As(err, &se) || !strings.Contains(err.Error(), "Scheduler takes at most 256") {
		t.Errorf("Put of a %d-character expression = %v, want a *schedule.Error saying Scheduler takes at most 256", len(long), err)
	}
	if err := s.Put(ctx, eventbridge.Schedule{Name: "empty", Expression: "rate(1 hour)"}); err == nil || !strings.Contains(err.Error(), "input") {
		t.Errorf("Put without an input = %v, want an error naming the input", err)
	}
	for _, name := range []string{"long", "empty"} {
		if _, err := s.Get(ctx, name); !errors.Is(err, eventbridge.ErrNotFound) {
			t.Errorf("Get(%s) after the refused Put = %v, want ErrNotFound: nothing reached the service", name, err)
		}
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	client := scheduler.New(scheduler.Options{Region: "us-east-1"})
	for _, cfg := range []eventbridge.Config{
		{Group: "", TargetARN: targetARN, RoleARN: roleARN},
		{Group: strings.Repeat("g", 65), TargetARN: targetARN, RoleARN: roleARN},
		{Group: "has space", TargetARN: targetARN, RoleARN: roleARN},
		{Group: "ok", RoleARN: roleARN},
		{Group: "ok", TargetARN: targetARN},
	} {
		if _, err := eventbridge.New(client, cfg); err == nil {
			t.Errorf("New(%+v) = nil error", cfg)
		}
	}
	if _, err := eventbridge.New(nil, eventbridge.Config{Group: "ok", TargetARN: targetARN, RoleARN: roleARN}); err == nil {
		t.Error("New(nil client) = nil error")
	}
}

func TestName(t *testing.T) {
	t.Parallel()
	valid := regexp.MustCompile(`^[0-9a-zA-Z_.-]{1,64}$`)
	long := strings.Repeat("f", 128)
	tests := []struct{ fleet, id, want string }{
		{"ops", "sch_01jq3v8m2k7x9p4r5t6w8y0z1a", "ops-sch_01jq3v8m2k7x9p4r5t6w8y0z1a-"},
		{"équipe/nuit", "sch_1", "__quipe_nuit-sch_1-"},
		{long, "sch_1", strings.Repeat("f", 21) + "-sch_1-"},
	}
	for _, tt := range tests {
		got := eventbridge.Name(tt.fleet, tt.id)
		if !valid.MatchString(got) || !strings.HasPrefix(got, tt.want) || len(got) != len(tt.want)+10 {
			t.Errorf("Name(%q, %q) = %q, want %q + 10 hex digits, valid for Scheduler", tt.fleet, tt.id, got, tt.want)
		}
		if again := eventbridge.Name(tt.fleet, tt.id); again != got {
			t.Errorf("Name is not deterministic: %q then %q", got, again)
		}
	}
	if n := eventbridge.Name(long, long); len(n) > 64 || !valid.MatchString(n) {
		t.Errorf("Name of the longest fleet and id = %q (%d characters)", n, len(n))
	}
	// Pairs whose readable parts agree still get different names.
	pairs := [][2]string{{"a.b", "c"}, {"a", "b.c"}, {"a/b", "c"}, {"a_b", "c"}, {long, "x"}, {long + "g", "x"}, {"a-b", "c"}, {"a", "b-c"}}
	seen := map[string]bool{}
	for _, p := range pairs {
		n := eventbridge.Name(p[0], p[1])
		if seen[n] {
			t.Errorf("Name(%q, %q) = %q collides", p[0], p[1], n)
		}
		seen[n] = true
	}
}

func TestParsePayload(t *testing.T) {
	t.Parallel()
	in := eventbridge.Payload{Fleet: "ops", ScheduleID: "sch_1"}
	if got := string(in.Marshal()); got != `{"fleet":"ops","schedule_id":"sch_1"}` {
		t.Fatalf("Marshal = %s", got)
	}
	for _, bad := range []string{`{}`, `{"fleet":"ops"}`, `{"fleet":"ops","schedule_id":"s","x":1}`, `not json`} {
		if _, err := eventbridge.ParsePayload([]byte(bad)); err == nil {
			t.Errorf("ParsePayload(%s) = nil error", bad)
		}
	}
}

// TestPayloadScheduledTime: the scheduled-time attribute is written as
// Scheduler must see it, '<' and '>' unescaped, and read back once filled.
func TestPayloadScheduledTime(t *testing.T) {
	t.Parallel()
	in := eventbridge.Payload{Fleet: "ops", ScheduleID: "sch_1", ScheduledTime: eventbridge.ScheduledTimeAttribute}
	want := `{"fleet":"ops","schedule_id":"sch_1","scheduled_time":"<aws.scheduler.scheduled-time>"}`
	if got := string(in.Marshal()); got != want {
		t.Fatalf("Marshal = %s, want %s", got, want)
	}
	filled := strings.Replace(want, eventbridge.ScheduledTimeAttribute, "2030-01-31T09:00:00Z", 1)
	p, err := eventbridge.ParsePayload([]byte(filled))
	if err != nil || p.ScheduledTime != "2030-01-31T09:00:00Z" || p.ScheduleID != "sch_1" {
		t.Fatalf("ParsePayload(%s) = %+v, %v", filled, p, err)
	}
}
