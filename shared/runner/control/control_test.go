package control_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/runner/control"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/tool/tooltest"
)

func TestConform(t *testing.T) {
	t.Parallel()
	for _, spec := range control.Specs() {
		t.Run(spec.Name(), func(t *testing.T) {
			t.Parallel()
			tooltest.Conform(t, spec)
		})
	}
}

// TestSpecsAreTheCatalogsRunnerTools: this package holds every tool the
// catalog says runs in the runner, and no other.
func TestSpecsAreTheCatalogsRunnerTools(t *testing.T) {
	t.Parallel()
	var want []string
	for _, info := range fleet.Tools() {
		if info.RunsIn == fleet.InRunner {
			want = append(want, info.Name)
		}
	}
	specs := control.Specs()
	got := make([]string, len(specs))
	for i, s := range specs {
		got[i] = s.Name()
	}
	if !slices.Equal(got, want) {
		t.Errorf("Specs() names = %v\nwant the catalog's runner tools %v", got, want)
	}
	if !slices.IsSorted(got) {
		t.Errorf("Specs() is not sorted by name: %v", got)
	}
	if tools := tool.Names(control.Tools(control.Caller{})); !slices.Equal(tools, want) {
		t.Errorf("Tools() names = %v, want %v", tools, want)
	}
}

// TestDescriptionsStateTheFigures: each description states the limits and
// codes the store and fault packages hold, as rendered from them.
func TestDescriptionsStateTheFigures(t *testing.T) {
	t.Parallel()
	expressions := []string{"cron(", "rate(", "at(yyyy-mm-ddThh:mm:ss)", "EventBridge Scheduler"}
	childCaps := []string{
		fmt.Sprintf("at most %d children working at once", store.MaxChildrenRunning),
		fmt.Sprintf("at most %d in all", store.MaxChildrenTotal),
	}
	startChild := append(slices.Clone(childCaps),
		fmt.Sprintf("nest %d levels deep", store.MaxChildDepth),
		fault.ChildCapReached.ID(), fault.ChildToolNotHeld.ID())
	statuses := []string{string(store.ChildRunning), string(store.ChildDone), string(store.ChildFailed), string(store.ChildInterrupted)}
	want := map[string][]string{
		"update_plan": {control.StepPending, control.StepInProgress, control.StepCompleted, "one step is in_progress"},
		"message": {
			fmt.Sprintf("at most %d lines", store.MaxMessageLines),
			fmt.Sprintf("at most %d bytes", control.MaxMessageBytes),
			fmt.Sprintf("within %d seconds", int(control.MessageDeliveryTimeout/time.Second)),
			fault.RunMessageCap.ID(), fault.RunNoThread.ID(), "«secret:NAME»",
		},
		"schedule_create": append(slices.Clone(expressions),
			fmt.Sprintf("at most %d schedules", store.MaxSchedules),
			fmt.Sprintf("at most %d created by the fleet", store.MaxFleetSchedules),
			fmt.Sprintf("Default %s", control.DefaultTimezone),
			fault.SchedFleetCap.ID(), fault.SchedTotalCap.ID(), "«secret:NAME»"),
		"schedule_list": {
			fmt.Sprintf("at most %d schedules", store.MaxSchedules),
			fmt.Sprintf("at most %d created by the fleet", store.MaxFleetSchedules),
			string(store.ActorPerson), string(store.ActorFleet),
			string(store.ScheduleActive), string(store.SchedulePaused), string(store.ScheduleRemoving),
		},
		"schedule_update": append(slices.Clone(expressions), fault.SchedPersonOwns.ID(), fault.SchedNotFound.ID()),
		"schedule_delete": {fmt.Sprintf("the %d schedules", store.MaxFleetSchedules), fault.SchedPersonOwns.ID(), fault.SchedNotFound.ID()},
		"cron_run":        {fault.SchedNotRunnable.ID(), fault.FleetPaused.ID(), fault.SchedNotFound.ID()},
		"spawn_agent":     append(slices.Clone(startChild), statuses...),
		"delegate_agent":  startChild,
		"wait_agent": {
			fmt.Sprintf("Default %d", control.WaitDefaultTimeoutSeconds),
			fmt.Sprintf("at most %d", control.WaitMaxTimeoutSeconds),
			fault.ChildNotFound.ID(),
		},
		"inspect_agent":   append(slices.Clone(statuses), fault.ChildNotFound.ID()),
		"interrupt_agent": {string(store.ChildInterrupted), fault.ChildNotFound.ID()},
		"list_agents":     append(slices.Clone(childCaps), statuses...),
	}
	for _, spec := range control.Specs() {
		phrases, ok := want[spec.Name()]
		if !ok {
			t.Errorf("%s: no figures to check", spec.Name())
			continue
		}
		for _, p := range phrases {
			if !strings.Contains(spec.Description(), p) {
				t.Errorf("%s: the description does not say %q:\n%s", spec.Name(), p, spec.Description())
			}
		}
	}
}

// TestDescriptionsNameEveryArgument: the model is told what each argument
// of the schema is for.
func TestDescriptionsNameEveryArgument(t *testing.T) {
	t.Parallel()
	for _, spec := range control.Specs() {
		var schema struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if err := json.Unmarshal(spec.Schema(), &schema); err != nil {
			t.Fatalf("%s: schema: %v", spec.Name(), err)
		}
		if len(schema.Properties) == 0 && !strings.Contains(spec.Description(), "Takes no arguments.") {
			t.Errorf("%s: takes no arguments, and the description does not say so", spec.Name())
		}
		for name := range schema.Properties {
			if !strings.Contains(spec.Description(), "- "+name+":") && !strings.Contains(spec.Description(), "- "+name+" (required):") {
				t.Errorf("%s: the description has no entry for argument %q", spec.Name(), name)
			}
		}
	}
}

func TestUpdatePlanArgumentErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ args, want string }{
		{`{"plan":[{"step":"fix the test","status":"done"}]}`, `update_plan: argument "plan[0].status" must be one of pending, in_progress or completed, not "done"`},
		{`{"plan":[{"step":"a","status":"completed"},{"status":"pending"}]}`, `update_plan: argument "plan[1].step" is required`},
		{`{"plan":[{"step":"  ","status":"pending"}]}`, `update_plan: argument "plan[0].step" must not be empty`},
		{`{"plan":[{"step":"a"}]}`, `update_plan: argument "plan[0].status" is required`},
		{`{"plan":[{"step":"a","status":"pending","note":"x"}]}`, `update_plan: argument "plan[0]" has no field "note"; its fields are step and status`},
		{`{"plan":"step one"}`, `update_plan: argument "plan" must be an array of objects, not a string`},
		{`{"explanation":"why"}`, `update_plan: argument "plan" is required`},
		{`{"plan":[],"explain":"x"}`, `update_plan: unknown argument "explain"; the arguments are explanation and plan`},
	} {
		res, ok := control.UpdatePlanSpec.Check(json.RawMessage(tc.args))
		if ok || !res.IsError || res.Output != tc.want {
			t.Errorf("Check(%s) = %q, ok %v\n want %q", tc.args, res.Output, ok, tc.want)
		}
	}
	args, res, ok := control.UpdatePlanSpec.Decode(json.RawMessage(`{"explanation":"tests first","plan":[{"step":"a","status":"completed"},{"step":"b","status":"in_progress"}]}`))
	if !ok {
		t.Fatalf("Decode refused a valid plan: %s", res.Output)
	}
	want := []control.PlanStep{{Step: "a", Status: control.StepCompleted}, {Step: "b", Status: control.StepInProgress}}
	if args.Explanation != "tests first" || !slices.Equal(args.Plan, want) {
		t.Errorf("Decode = %+v, want explanation %q and plan %v", args, "tests first", want)
	}
}

// TestDecodeFillsDefaults: the defaults and the clamp the descriptions
// state are the ones the arguments get.
func TestDecodeFillsDefaults(t *testing.T) {
	t.Parallel()
	w, res, ok := control.WaitAgentSpec.Decode(json.RawMessage(`{"child_id":"c1"}`))
	if !ok || w.TimeoutSeconds != control.WaitDefaultTimeoutSeconds {
		t.Errorf("wait_agent without timeout_seconds: %+v (%s), want timeout %d", w, res.Output, control.WaitDefaultTimeoutSeconds)
	}
	w, res, ok = control.WaitAgentSpec.Decode(json.RawMessage(fmt.Sprintf(`{"child_id":"c1","timeout_seconds":%d}`, control.WaitMaxTimeoutSeconds+1)))
	if !ok || w.TimeoutSeconds != control.WaitMaxTimeoutSeconds {
		t.Errorf("wait_agent past the maximum: %+v (%s), want timeout %d", w, res.Output, control.WaitMaxTimeoutSeconds)
	}
	if res, _ := control.WaitAgentSpec.Check(json.RawMessage(`{"child_id":"c1","timeout_seconds":0}`)); res.Output != `wait_agent: argument "timeout_seconds" must be 1 or more, not 0` {
		t.Errorf("wait_agent timeout 0: %q", res.Output)
	}
	c, res, ok := control.ScheduleCreateSpec.Decode(json.RawMessage(`{"expression":"rate(1 day)","message":"check the build"}`))
	if !ok || c.Timezone != control.DefaultTimezone {
		t.Errorf("schedule_create without timezone: %+v (%s), want %s", c, res.Output, control.DefaultTimezone)
	}
	u, res, ok := control.ScheduleUpdateSpec.Decode(json.RawMessage(`{"schedule_id":"sch_1","paused":false}`))
	if !ok || u.Paused == nil || *u.Paused || u.Expression != nil || u.Message != nil || u.Timezone != nil {
		t.Errorf("schedule_update paused false: %+v (%s), want only paused, false", u, res.Output)
	}
	s, res, ok := control.SpawnAgentSpec.Decode(json.RawMessage(`{"task":"t","budget":{"tool_calls":5}}`))
	if !ok || s.Tools != nil || s.Budget == nil || s.Budget.ToolCalls != 5 || s.Budget.Tokens != 0 {
		t.Errorf("spawn_agent with a tool-call share: %+v (%s)", s, res.Output)
	}
	if res, _ := control.DelegateAgentSpec.Check(json.RawMessage(`{"task":"t","budget":{"tokens":0}}`)); res.Output != `delegate_agent: argument "budget.tokens" must be 1 or more, not 0` {
		t.Errorf("delegate_agent budget.tokens 0: %q", res.Output)
	}
	if res, _ := control.MessageSpec.Check(json.RawMessage(`{"text":" \n "}`)); res.Output != `message: argument "text" must not be empty` {
		t.Errorf("message blank text: %q", res.Output)
	}
}

// TestToolsAreNotBuilt: each tool not built yet checks its arguments and
// then says plainly that it is not built, and why.
func TestToolsAreNotBuilt(t *testing.T) {
	t.Parallel()
	valid := map[string]string{
		"cron_run":        `{"schedule_id":"sch_1"}`,
		"delegate_agent":  `{"task":"count the files"}`,
		"inspect_agent":   `{"child_id":"c1"}`,
		"interrupt_agent": `{"child_id":"c1"}`,
		"list_agents":     `{}`,
		"message":         `{"text":"fix pushed, re-checking at 09:00"}`,
		"schedule_create": `{"expression":"cron(0 9 ? * MON-FRI *)","message":"check the build"}`,
		"schedule_delete": `{"schedule_id":"sch_1"}`,
		"schedule_list":   `{}`,
		"schedule_update": `{"schedule_id":"sch_1","paused":true}`,
		"spawn_agent":     `{"task":"count the files","tools":["read"],"budget":{"tokens":1000},"secrets":["GH"],"hosts":["api.github.com"]}`,
		"update_plan":     `{"plan":[{"step":"a","status":"pending"}]}`,
		"wait_agent":      `{"child_id":"c1","timeout_seconds":5}`,
	}
	for _, tl := range control.Tools(control.Caller{}) {
		if tl.Name() == "update_plan" {
			continue // built: TestUpdatePlan
		}
		args, ok := valid[tl.Name()]
		if !ok {
			t.Errorf("%s: no valid arguments to try", tl.Name())
			continue
		}
		res, err := tl.Run(context.Background(), json.RawMessage(args))
		want := tl.Name() + " is not available in this version of agentsfleet: "
		if err != nil || !res.IsError || !strings.HasPrefix(res.Output, want) || len(res.Output) < len(want)+20 {
			t.Errorf("%s.Run(%s) = %q, %v, error %v\n want %q", tl.Name(), args, res.Output, res.IsError, err, want)
		}
		res, err = tl.Run(context.Background(), json.RawMessage(`{"zz":1}`))
		if err != nil || !res.IsError || !strings.HasPrefix(res.Output, tl.Name()+`: unknown argument "zz"`) {
			t.Errorf("%s.Run({\"zz\":1}) = %q, %v; want the argument error first", tl.Name(), res.Output, err)
		}
	}
}

func TestUpdatePlan(t *testing.T) {
	t.Parallel()
	var got []control.UpdatePlanArgs
	up := control.NewUpdatePlan(func(a control.UpdatePlanArgs) { got = append(got, a) })
	for _, tc := range []struct{ args, want string }{
		{`{"explanation":"start","plan":[{"step":"read","status":"in_progress"},{"step":"fix","status":"pending"}]}`, "Plan updated"},
		{`{"plan":[{"step":"read","status":"in_progress"},{"step":"fix","status":"in_progress"}]}`,
			`update_plan: argument "plan" may have at most one step in_progress, not 2 (steps 1, 2); mark the others pending or completed`},
		{`{"plan":[]}`, `update_plan: argument "plan" must hold at least one step`},
	} {
		res, err := up.Run(context.Background(), json.RawMessage(tc.args))
		if err != nil || res.Output != tc.want || res.IsError != (tc.want != "Plan updated") {
			t.Errorf("Run(%s) = %q (is_error %v), %v; want %q", tc.args, res.Output, res.IsError, err, tc.want)
		}
	}
	if len(got) != 1 || got[0].Explanation != "start" || len(got[0].Plan) != 2 || got[0].Plan[0].Status != control.StepInProgress {
		t.Errorf("recorded %+v; want the one accepted plan", got)
	}
}

// scheduleBook is an in-memory control.Schedules that records the method
// it was reached by and its decoded arguments.
type scheduleBook struct{ got string }

func (s *scheduleBook) note(name string, a any) {
	b, _ := json.Marshal(a)
	s.got = name + " " + string(b)
}
func (s *scheduleBook) Create(_ context.Context, a control.ScheduleCreateArgs) (control.Schedule, error) {
	s.note("create", a)
	return control.Schedule{}, nil
}
func (s *scheduleBook) List(context.Context) ([]control.Schedule, error) {
	s.note("list", struct{}{})
	return nil, nil
}
func (s *scheduleBook) Update(_ context.Context, a control.ScheduleUpdateArgs) (control.Schedule, error) {
	s.note("update", a)
	return control.Schedule{}, nil
}
func (s *scheduleBook) Delete(_ context.Context, id string) error {
	s.note("delete", control.ScheduleDeleteArgs{ScheduleID: id})
	return nil
}
func (s *scheduleBook) Run(_ context.Context, a control.CronRunArgs) (control.ScheduledRun, error) {
	s.note("run", a)
	return control.ScheduledRun{}, nil
}

// TestScheduleToolsBound: with a Schedules, each schedule tool reaches its
// method with the decoded arguments (defaults applied), and schedule_update
// without a change is refused before it.
func TestScheduleToolsBound(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, args, want string }{
		{"schedule_create", `{"expression":"rate(1 day)","message":"m"}`, `create {"expression":"rate(1 day)","message":"m","timezone":"UTC"}`},
		{"schedule_list", `{}`, `list {}`},
		{"schedule_update", `{"schedule_id":"sch_1","paused":false}`, `update {"schedule_id":"sch_1","paused":false}`},
		{"schedule_update", `{"schedule_id":"sch_1"}`, "schedule_update: give schedule_id and at least one of expression, message, timezone or paused"},
		{"schedule_delete", `{"schedule_id":"sch_1"}`, `delete {"schedule_id":"sch_1"}`},
		{"cron_run", `{"schedule_id":"sch_1"}`, `run {"schedule_id":"sch_1"}`},
		{"cron_run", `{}`, `cron_run: argument "schedule_id" is required`},
	} {
		book := &scheduleBook{}
		tl, _ := control.Tool(tc.name, control.Caller{Schedules: book})
		res, err := tl.Run(context.Background(), json.RawMessage(tc.args))
		got := book.got
		if got == "" { // refused before the book
			got = res.Output
		}
		if err != nil || !strings.HasPrefix(got, tc.want) {
			t.Errorf("%s(%s) = %q (reached %q), %v; want %q", tc.name, tc.args, res.Output, book.got, err, tc.want)
		}
	}
	// The child-agent tools stay unbuilt without Agents.
	list, _ := control.Tool("list_agents", control.Caller{Schedules: &scheduleBook{}})
	if res, _ := list.Run(context.Background(), json.RawMessage(`{}`)); !res.IsError {
		t.Errorf("list_agents without Agents = %q; want an error result", res.Output)
	}
}
