package stack_test

import (
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentsfleet/agentsfleet/infra/stack"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
)

// TestSweeper: the functions invoked asynchronously (the runner, and the
// schedule function Scheduler invokes) send what fails all of Lambda's
// retries to an encrypted queue kept 14 days, each with its own role's
// grant; the sweep schedule invokes the schedule function with the sweep
// payload every five minutes, in the fleets' group, as Scheduler's role.
func TestSweeper(t *testing.T) {
	for _, name := range []string{"public", "private"} {
		t.Run(name, func(t *testing.T) {
			tmpl, m := layout(t, name)
			tmpl.ResourceCountIs(jsii.String("AWS::SQS::Queue"), jsii.Number(1))
			q := resources(m, "AWS::SQS::Queue")["FailedInvocations"]
			if q == nil {
				t.Fatalf("no FailedInvocations queue: %v", keys(resources(m, "AWS::SQS::Queue")))
			}
			if q["SqsManagedSseEnabled"] != true || q["MessageRetentionPeriod"] != float64(stack.FailedInvocationRetentionDays*24*3600) {
				t.Errorf("queue: SSE %v, retention %v s; want SQS-managed SSE, 14 days", q["SqsManagedSseEnabled"], q["MessageRetentionPeriod"])
			}
			for id, p := range resources(m, "AWS::SQS::QueuePolicy") {
				if got := render(p["PolicyDocument"]); !contains(got, "aws:SecureTransport=false") || !contains(got, "Effect=Deny") {
					t.Errorf("queue policy %s does not refuse plain HTTP: %s", id, got)
				}
			}

			configs := resources(m, "AWS::Lambda::EventInvokeConfig")
			want := map[string]string{
				"RunnerAsync":   "{DestinationConfig={OnFailure={Destination=${FailedInvocations.Arn}}} FunctionName=${Runner} MaximumEventAgeInSeconds=21600 MaximumRetryAttempts=2 Qualifier=$LATEST}",
				"ScheduleAsync": "{DestinationConfig={OnFailure={Destination=${FailedInvocations.Arn}}} FunctionName=${Schedule} MaximumEventAgeInSeconds=3600 MaximumRetryAttempts=2 Qualifier=$LATEST}",
			}
			if len(configs) != len(want) {
				t.Errorf("event invoke configs %v, want %v", keys(configs), keys(want))
			}
			for id, w := range want {
				if got := render(configs[id]); got != w {
					t.Errorf("%s:\ngot  %s\nwant %s", id, got, w)
				}
			}

			schedules := resources(m, "AWS::Scheduler::Schedule")
			if len(schedules) != 1 {
				t.Fatalf("schedules %v, want the sweep alone", keys(schedules))
			}
			got := render(schedules["Sweep"])
			w := "{Description=agentsfleet: re-invoke the runs and child agents whose runner invocation died without handing them over" +
				" FlexibleTimeWindow={Mode=OFF} GroupName=Agentsfleet-fleets Name=Agentsfleet-sweep ScheduleExpression=rate(5 minutes) State=ENABLED" +
				" Target={Arn=" + fnArn("schedule") + " Input=" + string(eventbridge.SweepInput()) +
				" RetryPolicy={MaximumEventAgeInSeconds=240 MaximumRetryAttempts=2} RoleArn=${SchedulerRole.Arn}}}"
			if got != w {
				t.Errorf("sweep schedule:\ngot  %s\nwant %s", got, w)
			}
			tmpl.HasResource(jsii.String("AWS::Scheduler::Schedule"), map[string]any{
				"DependsOn": assertions.Match_ArrayWith(&[]any{assertions.Match_StringLikeRegexp(jsii.String("^Schedules"))}),
			})
			// Scheduler's role trusts this group's schedules and may invoke
			// the schedule function: nothing more is granted for the sweep
			// (TestStatements).
			tmpl.HasOutput(jsii.String("FailedInvocationsQueueUrl"), map[string]any{})
		})
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}
