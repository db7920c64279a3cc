package stack

import (
	"path/filepath"
	"strconv"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsec2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentsfleet/agentsfleet/shared/cost"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model/provider"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/schedule/eventbridge"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// function is one Lambda function with its role. Its name is fixed
// (Name-<fn>) so that the functions, their roles and Scheduler's role can
// name each other's ARNs without a dependency between them: the runner
// invokes itself and the schedule function is the target of the schedules
// it registers, which a reference to the function's own ARN would make a
// cycle.
type function struct {
	fn   awslambda.Function
	role awsiam.Role
	name string
	arn  string
}

// shape is a function's size, each chosen in newFunctions.
type shape struct {
	memoryMiB, timeoutSeconds int
	// reserved is its reserved concurrency; 0 reserves none.
	reserved int
}

type functions struct {
	api, runner, schedule, slack, webtools *function
}

// FunctionName is the deployed name of function fn.
func FunctionName(fn string) string { return Name + "-" + fn }

// newFunctions builds the five functions, their settings (each named by
// the constant of the component that reads it; shared/deploy/settings.Of
// lists what each function reads) and their grants.
func newFunctions(st *Stack, group awsscheduler.ScheduleGroup) functions {
	stack, s := st.Stack, st.Settings
	arnOf := func(fn string) string {
		return *stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("lambda"), Resource: jsii.String("function"),
			ResourceName: jsii.String(FunctionName(fn)), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
	}
	groupName := *group.ScheduleGroupName()
	scheduleARN := arnOf("schedule")

	// Scheduler's role: Scheduler assumes it, for this account's schedules
	// in this group alone, to invoke the schedule function alone.
	schedulerRole := awsiam.NewRole(stack, jsii.String("SchedulerRole"), &awsiam.RoleProps{
		AssumedBy: awsiam.NewPrincipalWithConditions(awsiam.NewServicePrincipal(jsii.String("scheduler.amazonaws.com"), nil), &map[string]any{
			"StringEquals": map[string]any{"aws:SourceAccount": stack.Account()},
			"ArnLike":      map[string]any{"aws:SourceArn": scheduleArnPattern(stack, groupName)},
		}),
		Description: jsii.String("agentsfleet: EventBridge Scheduler invokes the schedule function"),
	})
	schedulerRole.AddToPolicy(allow([]string{"lambda:InvokeFunction"}, []string{scheduleARN}, nil))

	table := []string{*st.Table.TableArn(), *st.Table.TableArn() + "/index/*"}
	tableActions := []string{"dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:UpdateItem", "dynamodb:DeleteItem",
		"dynamodb:Query", "dynamodb:ConditionCheckItem"}
	// The warm pool's items (store.PoolKeyPrefix) are the runner's alone:
	// every other function that may use the table is denied any request
	// whose partition key is one of theirs. A deny of that prefix, not an
	// allow of the others', so that an item kind added later needs no
	// change here; the pool's items hold no token anyway (a nonce, which
	// only the runner's key makes a token of).
	readTable := func(f *function) {
		f.role.AddToPolicy(allow(tableActions, table, nil))
		f.role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
			Effect:    awsiam.Effect_DENY,
			Actions:   jsii.Strings("dynamodb:*"),
			Resources: jsii.Strings(table...),
			Conditions: &map[string]any{"ForAnyValue:StringLike": map[string]any{
				"dynamodb:LeadingKeys": []string{store.PoolKeyPrefix + "*"}}},
		}))
	}
	schedules := func(f *function) {
		// The schedule routes and tools register, replace and delete the
		// fleets' schedules in the group (shared/schedule/eventbridge); the
		// group itself is the stack's.
		f.role.AddToPolicy(allow([]string{"scheduler:CreateSchedule", "scheduler:UpdateSchedule", "scheduler:GetSchedule",
			"scheduler:DeleteSchedule"}, []string{scheduleArnPattern(stack, groupName)}, nil))
		f.role.AddToPolicy(allow([]string{"iam:PassRole"}, []string{*schedulerRole.RoleArn()},
			map[string]any{"StringEquals": map[string]any{"iam:PassedToService": "scheduler.amazonaws.com"}}))
	}
	scheduleEnv := map[string]string{
		eventbridge.EnvGroup:  groupName,
		eventbridge.EnvTarget: scheduleARN,
		eventbridge.EnvRole:   *schedulerRole.RoleArn(),
	}
	mk := func(name string, sh shape, env map[string]string, vpc bool) *function {
		return newFunction(st, name, arnOf(name), sh, env, vpc)
	}

	// webtools: 512 MB for HTML to text of pages up to the size cap; 60 s
	// for one call's 30 s limit (web.DefaultTimeout) plus reading the
	// fleet's secrets. Its callers invoke it synchronously, so a throttled
	// call fails (a tool call, a step's screen, a schedule's message): its
	// reserved concurrency (WebtoolsConcurrency) is what its callers can
	// use at once, so that it caps the function against a runaway without
	// ever throttling a deployment's own runs. Without a runner
	// reservation nothing bounds that, and it reserves none.
	webEnv := map[string]string{store.EnvTable: *st.Table.TableName()}
	for k, v := range map[string]string{web.EnvSearchBackend: s.SearchBackend, web.EnvSearchURL: s.SearchURL,
		web.EnvSearchKeySecret: s.SearchAPIKeySecret} {
		if v != "" {
			webEnv[k] = v
		}
	}
	webFn := mk("webtools", shape{memoryMiB: 512, timeoutSeconds: 60, reserved: WebtoolsConcurrency(s.RunnerConcurrency)}, webEnv, false)
	// What a call may use, read by its run id (shared/web/grants): the run,
	// its fleet's revision and its child, read-only.
	webFn.role.AddToPolicy(allow([]string{"dynamodb:GetItem"}, []string{*st.Table.TableArn()},
		map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []string{store.PrefixRun + "*", store.PrefixFleet + "*"}}}))
	// The runs' egress logs (store.RecordEgress: entries and their
	// summary, one transaction), a partition of their own: it can write
	// no run, event or checkpoint.
	webFn.role.AddToPolicy(allow([]string{"dynamodb:PutItem", "dynamodb:UpdateItem"}, []string{*st.Table.TableArn()},
		map[string]any{"ForAllValues:StringLike": map[string]any{"dynamodb:LeadingKeys": []string{store.PrefixEgress + "*"}}}))
	webFn.role.AddToPolicy(allow([]string{"secretsmanager:GetSecretValue"}, fleetSecretArns(stack, s), nil))
	// The deployment's own secrets are never a fleet's, whatever the
	// pattern FleetSecrets allows.
	webFn.role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Effect:  awsiam.Effect_DENY,
		Actions: jsii.Strings("secretsmanager:*"),
		Resources: jsii.Strings(*st.Secrets.SlackSigningSecret.SecretArn(), *st.Secrets.SlackBotToken.SecretArn(),
			*st.Secrets.ModelKeys.SecretArn(), *st.Secrets.SandboxTokenKey.SecretArn()),
	}))

	// runner: 1024 MB, since a step decodes and encodes the whole
	// conversation and talks TLS to the model and the sandbox, and Lambda's
	// CPU grows with memory; 900 s, Lambda's most, since the runner
	// checkpoints and re-invokes itself before the deadline and a longer
	// invocation re-invokes less. Reserved concurrency (20 by default)
	// caps how many runs step at once, and so Fargate tasks and model
	// spend, against a runaway of schedules or child agents; its
	// invocations are asynchronous, so a throttled one waits in Lambda's
	// queue instead of failing.
	runnerEnv := map[string]string{
		store.EnvTable:             *st.Table.TableName(),
		runner.EnvCheckpointBucket: *st.Bucket.BucketName(),
		invoke.EnvWebtools:         FunctionName("webtools"),
		invoke.EnvSlack:            FunctionName("slack"),
		provider.EnvProvider:       s.ModelProvider,
		ecs.EnvCluster:             *st.Sandbox.Cluster.ClusterName(),
		ecs.EnvTaskDefinition:      *st.Sandbox.Task.TaskDefinitionArn(),
		ecs.EnvSubnets:             *awscdk.Fn_Join(jsii.String(","), st.Sandbox.Subnets.SubnetIds),
		ecs.EnvSecurityGroups:      *st.Sandbox.Group.SecurityGroupId(),
		ecs.EnvPublicIP:            map[Network]string{Public: "true", Private: "false"}[s.Network],
		ecs.EnvTokenKeyARN:         *st.Secrets.SandboxTokenKey.SecretArn(),
		// Written out, not left to the default: webtools' reservation is
		// sized by it.
		runner.EnvToolConcurrency: strconv.Itoa(ToolConcurrency),
	}
	for k, v := range scheduleEnv {
		runnerEnv[k] = v
	}
	if s.Model != "" {
		runnerEnv[provider.EnvModel] = s.Model
	}
	if s.ModelPrices != "" {
		runnerEnv[cost.EnvModelPrices] = s.ModelPrices
	}
	if s.ComputePrices != "" {
		runnerEnv[cost.EnvComputePrices] = s.ComputePrices
	}
	if s.WarmPool != "" {
		runnerEnv[pool.TargetsEnv] = s.WarmPool
	}
	taskDefs := []string{*st.Sandbox.Task.TaskDefinitionArn()}
	if st.Sandbox.BrowserTask != nil {
		runnerEnv[ecs.EnvBrowserTaskDefinition] = *st.Sandbox.BrowserTask.TaskDefinitionArn()
		taskDefs = append(taskDefs, *st.Sandbox.BrowserTask.TaskDefinitionArn())
		if s.BrowserWarmPool != "" {
			runnerEnv[pool.BrowserTargetsEnv] = s.BrowserWarmPool
		}
	}
	// The providers' API keys stay in Secrets Manager, out of the
	// function's configuration: the runner reads ModelKeys on its first
	// model call (shared/model/provider), and only the runner may.
	keyed := s.ModelProvider == provider.Anthropic || s.ModelProvider == provider.OpenAI
	if keyed {
		runnerEnv[provider.EnvKeysSecret] = *st.Secrets.ModelKeys.SecretArn()
	}
	runnerFn := mk("runner", shape{memoryMiB: 1024, timeoutSeconds: 900, reserved: s.RunnerConcurrency}, runnerEnv, s.Network == Private)
	runnerFn.role.AddToPolicy(allow(tableActions, table, nil))
	// The key of the sandboxes' tokens: the runner's alone, so that what
	// the table holds of a sandbox (its nonce) reaches it from here only.
	runnerFn.role.AddToPolicy(allow([]string{"secretsmanager:GetSecretValue"}, []string{*st.Secrets.SandboxTokenKey.SecretArn()}, nil))
	if keyed {
		runnerFn.role.AddToPolicy(allow([]string{"secretsmanager:GetSecretValue"}, []string{*st.Secrets.ModelKeys.SecretArn()}, nil))
	}
	// The fleets' secrets, for the values a fleet's setup step lists (the
	// runner hands them to the sandbox's setup command alone): the pattern
	// webtools reads, without the search key. The Slack secrets stay the
	// slack function's, whatever the pattern allows.
	runnerFn.role.AddToPolicy(allow([]string{"secretsmanager:GetSecretValue"}, fleetSecretArns(stack, s)[:1], nil))
	runnerFn.role.AddToPolicy(awsiam.NewPolicyStatement(&awsiam.PolicyStatementProps{
		Effect:    awsiam.Effect_DENY,
		Actions:   jsii.Strings("secretsmanager:*"),
		Resources: jsii.Strings(*st.Secrets.SlackSigningSecret.SecretArn(), *st.Secrets.SlackBotToken.SecretArn()),
	}))
	// Itself (hand-over, child agents), webtools, and slack to post in a
	// run's thread: only the slack function holds the Slack token.
	runnerFn.role.AddToPolicy(allow([]string{"lambda:InvokeFunction"}, []string{runnerFn.arn, webFn.arn, arnOf("slack")}, nil))
	// Checkpoints and the fleets' folders; ListBucket so that a fleet's
	// first HeadObject of its folder answers 404, not 403.
	runnerFn.role.AddToPolicy(allow([]string{"s3:GetObject", "s3:PutObject"},
		[]string{*st.Bucket.ArnForObjects(jsii.String(CheckpointPrefix + "*")), *st.Bucket.ArnForObjects(jsii.String(FleetsPrefix + "*"))}, nil))
	runnerFn.role.AddToPolicy(allow([]string{"s3:ListBucket"}, []string{*st.Bucket.BucketArn()}, nil))
	// The sandbox tasks: these task definitions (the browser image's too,
	// when built), on this cluster, passing the execution role they share
	// alone (the tasks have no role to pass).
	cluster := map[string]any{"ArnEquals": map[string]any{"ecs:cluster": *st.Sandbox.Cluster.ClusterArn()}}
	tasks := *stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("ecs"), Resource: jsii.String("task"),
		ResourceName: jsii.String(*st.Sandbox.Cluster.ClusterName() + "/*")})
	runnerFn.role.AddToPolicy(allow([]string{"ecs:RunTask"}, taskDefs, cluster))
	runnerFn.role.AddToPolicy(allow([]string{"ecs:StopTask", "ecs:DescribeTasks"}, []string{tasks}, cluster))
	// RunTask tags each task with its run (or the pool): tagging at
	// creation needs ecs:TagResource, for RunTask alone.
	runnerFn.role.AddToPolicy(allow([]string{"ecs:TagResource"}, []string{tasks},
		map[string]any{"StringEquals": map[string]any{"ecs:CreateAction": "RunTask"}}))
	runnerFn.role.AddToPolicy(allow([]string{"iam:PassRole"}, []string{*st.Sandbox.ExecutionRole.RoleArn()},
		map[string]any{"StringEquals": map[string]any{"iam:PassedToService": "ecs-tasks.amazonaws.com"}}))
	if s.Network == Public {
		// The task's public IP is on its network interface. This action
		// takes no resource: "*" is the only form IAM accepts.
		runnerFn.role.AddToPolicy(allow([]string{"ec2:DescribeNetworkInterfaces"}, []string{"*"}, nil))
	}
	if s.ModelProvider == provider.Bedrock {
		// ConverseStream. A Definition may name any model, so the models
		// are not known here; cross-region inference profiles route to a
		// foundation model in another region.
		runnerFn.role.AddToPolicy(allow([]string{"bedrock:InvokeModelWithResponseStream"}, []string{
			*stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("bedrock"), Region: jsii.String("*"), Account: jsii.String(""),
				Resource: jsii.String("foundation-model"), ResourceName: jsii.String("*")}),
			*stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("bedrock"), Resource: jsii.String("inference-profile"), ResourceName: jsii.String("*")}),
		}, nil))
	}
	schedules(runnerFn)

	// api: 512 MB for quick cold starts of the front door; 29 s, within
	// API Gateway's 30 s integration limit. No reserved concurrency: it
	// answers people and webhooks, and API Gateway throttles in front.
	apiEnv := map[string]string{
		store.EnvTable:     *st.Table.TableName(),
		invoke.EnvRunner:   runnerFn.name,
		invoke.EnvWebtools: webFn.name,
	}
	for k, v := range scheduleEnv {
		apiEnv[k] = v
	}
	api := mk("api", shape{memoryMiB: 512, timeoutSeconds: 29}, apiEnv, false)
	readTable(api)
	// The runner to start runs; webtools to scrub schedule messages.
	api.role.AddToPolicy(allow([]string{"lambda:InvokeFunction"}, []string{runnerFn.arn, webFn.arn}, nil))
	schedules(api)

	// schedule: 256 MB, 30 s: a firing reads the fleet and the schedule,
	// writes the run and invokes the runner asynchronously. No reserved
	// concurrency: Scheduler retries a throttled delivery, and the runner's
	// own reservation is the cap that matters.
	schedEnv := map[string]string{
		store.EnvTable:   *st.Table.TableName(),
		invoke.EnvRunner: runnerFn.name,
	}
	for k, v := range scheduleEnv {
		schedEnv[k] = v
	}
	sched := mk("schedule", shape{memoryMiB: 256, timeoutSeconds: 30}, schedEnv, false)
	readTable(sched)
	sched.role.AddToPolicy(allow([]string{"lambda:InvokeFunction"}, []string{runnerFn.arn}, nil))
	schedules(sched)

	// slack: 256 MB, 30 s: it verifies a request, records the run and
	// acks within Slack's 3 s, and posts a run's thread for the runner (a
	// streamed answer, an upload). No reserved concurrency: Slack retries
	// what is not answered, and the runner's reservation caps the runs.
	slackEnv := map[string]string{
		store.EnvTable:            *st.Table.TableName(),
		invoke.EnvRunner:          runnerFn.name,
		slack.EnvSigningSecretARN: *st.Secrets.SlackSigningSecret.SecretArn(),
		slack.EnvBotTokenARN:      *st.Secrets.SlackBotToken.SecretArn(),
	}
	if s.SlackDefaultFleet != "" {
		slackEnv[slack.EnvDefaultFleet] = s.SlackDefaultFleet
	}
	slackFn := mk("slack", shape{memoryMiB: 256, timeoutSeconds: 30}, slackEnv, false)
	readTable(slackFn)
	slackFn.role.AddToPolicy(allow([]string{"lambda:InvokeFunction"}, []string{runnerFn.arn}, nil))
	slackFn.role.AddToPolicy(allow([]string{"secretsmanager:GetSecretValue"},
		[]string{*st.Secrets.SlackSigningSecret.SecretArn(), *st.Secrets.SlackBotToken.SecretArn()}, nil))

	return functions{api: api, runner: runnerFn, schedule: sched, slack: slackFn, webtools: webFn}
}

// ToolConcurrency is the runner's AGENTSFLEET_RUN_TOOL_CONCURRENCY in the
// stack: how many tool calls of one model answer run at once.
const ToolConcurrency = runner.DefaultToolConcurrency

// WebtoolsConcurrency is the webtools function's reserved concurrency for
// a runner reserving runnerConcurrency: what its callers can ask of it at
// once. Each runner invocation (a run's own agent, or a child agent, each
// an invocation of its own) makes at most ToolConcurrency webtools calls at
// once: its tool calls, of which at most that many run together, a message
// line's scrub among them, or, after them, its step's screen. The api
// function scrubs a schedule's message once a request, and API Gateway lets
// at most APIBurstLimit requests in at once. So runnerConcurrency ×
// ToolConcurrency + APIBurstLimit (260 by default) never throttles them;
// 0 (no runner reservation, so no bound) reserves none.
func WebtoolsConcurrency(runnerConcurrency int) int {
	if runnerConcurrency <= 0 {
		return 0
	}
	return runnerConcurrency*ToolConcurrency + APIBurstLimit
}

// newFunction is function name from LambdaDir/name/bootstrap with its own
// role and log group; the role may write that log group alone. In a VPC
// (the private layout's runner) it runs in the private subnets with
// st.Sandbox.RunnerGroup.
func newFunction(st *Stack, name, arn string, sh shape, env map[string]string, inVpc bool) *function {
	stack, s := st.Stack, st.Settings
	id := strings.ToUpper(name[:1]) + name[1:]
	fnName := FunctionName(name)
	role := awsiam.NewRole(stack, jsii.String(id+"Role"), &awsiam.RoleProps{
		AssumedBy:   awsiam.NewServicePrincipal(jsii.String("lambda.amazonaws.com"), nil),
		Description: jsii.String("agentsfleet: the " + name + " function"),
	})
	logs := logGroup(stack, id+"Logs", "/aws/lambda/"+fnName, s)
	role.AddToPolicy(allow([]string{"logs:CreateLogStream", "logs:PutLogEvents"}, []string{*logs.LogGroupArn()}, nil))
	vars := map[string]*string{}
	for k, v := range env {
		vars[k] = jsii.String(v)
	}
	props := &awslambda.FunctionProps{
		FunctionName: jsii.String(fnName),
		Description:  jsii.String("agentsfleet " + name),
		Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
		Architecture: awslambda.Architecture_ARM_64(),
		Handler:      jsii.String("bootstrap"),
		Code:         awslambda.Code_FromAsset(jsii.String(filepath.Join(s.LambdaDir, name)), nil),
		MemorySize:   jsii.Number(sh.memoryMiB),
		Timeout:      awscdk.Duration_Seconds(jsii.Number(sh.timeoutSeconds)),
		Role:         role,
		LogGroup:     logs,
		Environment:  &vars,
	}
	if sh.reserved > 0 {
		props.ReservedConcurrentExecutions = jsii.Number(sh.reserved)
	}
	if inVpc {
		props.Vpc = st.Sandbox.Vpc
		props.VpcSubnets = &awsec2.SubnetSelection{SubnetType: awsec2.SubnetType_PRIVATE_WITH_EGRESS}
		props.SecurityGroups = &[]awsec2.ISecurityGroup{st.Sandbox.RunnerGroup}
		// Lambda makes and removes the function's network interfaces with
		// its role. These actions take no resource that is known before
		// Lambda makes the interface.
		role.AddToPolicy(allow([]string{"ec2:CreateNetworkInterface", "ec2:DescribeNetworkInterfaces", "ec2:DescribeSubnets",
			"ec2:DeleteNetworkInterface", "ec2:AssignPrivateIpAddresses", "ec2:UnassignPrivateIpAddresses"}, []string{"*"}, nil))
	}
	f := &function{role: role, name: fnName, arn: arn}
	f.fn = awslambda.NewFunction(stack, jsii.String(id), props)
	return f
}

// scheduleArnPattern is the ARN of every schedule in group.
func scheduleArnPattern(stack awscdk.Stack, group string) string {
	return *stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("scheduler"), Resource: jsii.String("schedule"),
		ResourceName: jsii.String(group + "/*")})
}

// fleetSecretArns are the secrets webtools may read: those whose names
// match Settings.FleetSecrets (first), and the search key's.
func fleetSecretArns(stack awscdk.Stack, s Settings) []string {
	arn := func(name string) string {
		return *stack.FormatArn(&awscdk.ArnComponents{Service: jsii.String("secretsmanager"), Resource: jsii.String("secret"),
			ResourceName: jsii.String(name), ArnFormat: awscdk.ArnFormat_COLON_RESOURCE_NAME})
	}
	out := []string{arn(s.FleetSecrets)}
	if k := s.SearchAPIKeySecret; k != "" {
		if strings.HasPrefix(k, "arn:") {
			out = append(out, k)
		} else {
			// A secret's ARN ends in a dash and six random characters.
			out = append(out, arn(k+"-??????"))
		}
	}
	return out
}
