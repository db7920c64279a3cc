package stack

import (
	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
)

// SweepRate is how often the sweep schedule has the schedule function
// re-invoke the runs and child agents a dead invocation left
// (eventbridge.SweepPayload, schedule/keeper's Keeper.Sweep).
const SweepRate = "rate(5 minutes)"

// FailedInvocationRetentionDays is how long the queue of failed
// asynchronous invocations keeps each: SQS's most.
const FailedInvocationRetentionDays = 14

// addSweeper makes sure nothing stays running for ever:
//
//   - the functions invoked asynchronously — the runner (the API, the slack
//     and schedule functions, the runner itself: invoke.Lambda.Start) and
//     the schedule function (EventBridge Scheduler invokes its targets so) —
//     send an invocation that failed all of Lambda's retries, or grew too
//     old to try, to the FailedInvocations queue, where an operator reads
//     what was lost and why;
//   - the sweep schedule, in the fleets' schedule group and through
//     Scheduler's role (which may invoke the schedule function alone),
//     invokes the schedule function with the sweep payload every five
//     minutes, and it re-invokes each run and child whose lease lapsed
//     with no live holder, or that was queued and never started.
func addSweeper(st *Stack, fns functions, group awsscheduler.ScheduleGroup) {
	stack := st.Stack
	failed := awssqs.NewQueue(stack, jsii.String("FailedInvocations"), &awssqs.QueueProps{
		Encryption:      awssqs.QueueEncryption_SQS_MANAGED,
		EnforceSSL:      jsii.Bool(true),
		RetentionPeriod: awscdk.Duration_Days(jsii.Number(FailedInvocationRetentionDays)),
	})
	// Lambda's two retries are the runner's to count on (a run's second
	// takeover fails it); an event that waited six hours in Lambda's
	// queue (a throttled runner) goes to the queue, and its run to the
	// sweep. A firing an hour late is not run late.
	for _, a := range []struct {
		id  string
		fn  *function
		age awscdk.Duration
	}{
		{"RunnerAsync", fns.runner, awscdk.Duration_Hours(jsii.Number(6))},
		{"ScheduleAsync", fns.schedule, awscdk.Duration_Hours(jsii.Number(1))},
	} {
		// The destination grants the function's own role what sending
		// to the queue needs.
		awslambda.NewEventInvokeConfig(stack, jsii.String(a.id), &awslambda.EventInvokeConfigProps{
			Function:      a.fn.fn,
			OnFailure:     awslambdadestinations.NewSqsDestination(failed),
			MaxEventAge:   a.age,
			RetryAttempts: jsii.Number(2),
		})
	}

	// Scheduler's role (newFunctions) trusts the schedules of this group
	// alone and may invoke the schedule function alone: all the sweep
	// schedule needs.
	role := stack.Node().FindChild(jsii.String("SchedulerRole")).(awsiam.Role)
	sweep := awsscheduler.NewCfnSchedule(stack, jsii.String("Sweep"), &awsscheduler.CfnScheduleProps{
		Name:               jsii.String(Name + "-sweep"),
		GroupName:          group.ScheduleGroupName(),
		Description:        jsii.String("agentsfleet: re-invoke the runs and child agents whose runner invocation died without handing them over"),
		ScheduleExpression: jsii.String(SweepRate),
		FlexibleTimeWindow: &awsscheduler.CfnSchedule_FlexibleTimeWindowProperty{Mode: jsii.String("OFF")},
		State:              jsii.String("ENABLED"),
		Target: &awsscheduler.CfnSchedule_TargetProperty{
			Arn:     jsii.String(fns.schedule.arn),
			RoleArn: role.RoleArn(),
			Input:   jsii.String(string(eventbridge.SweepInput())),
			// A sweep missed is made up by the next, five minutes on.
			RetryPolicy: &awsscheduler.CfnSchedule_RetryPolicyProperty{
				MaximumEventAgeInSeconds: jsii.Number(240),
				MaximumRetryAttempts:     jsii.Number(2),
			},
		},
	})
	// The group is named, not referenced: CloudFormation must be told to
	// make it first.
	sweep.Node().AddDependency(group)
	awscdk.NewCfnOutput(stack, jsii.String("FailedInvocationsQueueUrl"), &awscdk.CfnOutputProps{
		Value:       failed.QueueUrl(),
		Description: jsii.String("runner and schedule invocations that failed all of Lambda's retries (kept 14 days)"),
	})
}
