package stack_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentsfleet/agentsfleet/infra/stack"
	"github.com/agentsfleet/agentsfleet/sandboximage"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/pool"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// root is the repository root, two levels up from this package.
func root(t *testing.T) string {
	t.Helper()
	r, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// lambdaDir is `make lambdas`' output when it is there (make test builds
// it first), else a folder of placeholder bootstrap files: the stack reads
// only their bytes, for the asset hashes.
func lambdaDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(root(t), "build", "lambda")
	ok := true
	for _, fn := range stack.Functions {
		if _, err := os.Stat(filepath.Join(dir, fn, "bootstrap")); err != nil {
			ok = false
		}
	}
	if ok {
		return dir
	}
	dir = t.TempDir()
	for _, fn := range stack.Functions {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("placeholder "+fn), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// synth builds the stack from context (as `-c key=value` would give it)
// and returns its template, as the assertions package sees it and as JSON.
func synth(t *testing.T, ctx map[string]string) (assertions.Template, map[string]any) {
	t.Helper()
	c := map[string]any{
		// Assets are hashed, not copied: the template is the same.
		"aws:cdk:disable-asset-staging": true,
		"lambdaDir":                     lambdaDir(t),
	}
	for k, v := range ctx {
		c[k] = v
	}
	app := awscdk.NewApp(&awscdk.AppProps{Outdir: jsii.String(t.TempDir()), Context: &c})
	s, err := stack.FromContext(root(t), func(key string) any { return app.Node().TryGetContext(jsii.String(key)) })
	if err != nil {
		t.Fatal(err)
	}
	st, err := stack.New(app, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := assertions.Template_FromStack(st.Stack, nil)
	raw, err := json.Marshal(tmpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	return tmpl, m
}

// The templates are synthesized once per layout and shared by the tests
// (a synth costs seconds).
var templates = map[string]struct {
	tmpl assertions.Template
	json map[string]any
}{}

func layout(t *testing.T, name string) (assertions.Template, map[string]any) {
	t.Helper()
	if got, ok := templates[name]; ok {
		return got.tmpl, got.json
	}
	ctx := map[string]string{}
	switch name {
	case "public":
	case "private":
		ctx["network"] = "private"
	case "browser":
		ctx[stack.CtxSandboxBrowser] = "true"
		ctx[stack.CtxBrowserWarmPool] = "small=1"
	case "anthropic":
		ctx["modelProvider"] = "anthropic"
		ctx["warmPool"] = "small=2"
		ctx["sandboxEgress"] = "80,443"
		ctx["fleetSecrets"] = "prod/*"
		ctx["searchBackend"] = "brave"
		ctx["searchApiKeySecret"] = "search/brave"
		ctx["runnerConcurrency"] = "0"
		ctx["deletionProtection"] = "false"
	default:
		t.Fatalf("no layout %s", name)
	}
	tmpl, m := synth(t, ctx)
	templates[name] = struct {
		tmpl assertions.Template
		json map[string]any
	}{tmpl, m}
	return tmpl, m
}

var hashSuffix = regexp.MustCompile(`[0-9A-F]{8}$`)

// logical drops the hash CDK appends to a logical id.
func logical(id string) string {
	if len(id) > 8 {
		return hashSuffix.ReplaceAllString(id, "")
	}
	return id
}

// render writes a CloudFormation value as a string: pseudo parameters as
// ${Region} and ${Account}, references as ${Name} and ${Name.Attr} with
// CDK's hashes dropped, joins joined.
func render(v any) string {
	switch x := v.(type) {
	case string:
		return x
	case []any:
		var parts []string
		for _, e := range x {
			parts = append(parts, render(e))
		}
		sort.Strings(parts)
		return strings.Join(parts, " | ")
	case map[string]any:
		if ref, ok := x["Ref"].(string); ok {
			switch ref {
			case "AWS::Partition":
				return "aws"
			case "AWS::Region":
				return "${Region}"
			case "AWS::AccountId":
				return "${Account}"
			}
			return "${" + logical(ref) + "}"
		}
		if ga, ok := x["Fn::GetAtt"].([]any); ok {
			return "${" + logical(ga[0].(string)) + "." + ga[1].(string) + "}"
		}
		if j, ok := x["Fn::Join"].([]any); ok {
			var parts []string
			for _, e := range j[1].([]any) {
				parts = append(parts, render(e))
			}
			return strings.Join(parts, j[0].(string))
		}
		if s, ok := x["Fn::Sub"].(string); ok {
			return s
		}
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		var parts []string
		for _, k := range keys {
			parts = append(parts, k+"="+render(x[k]))
		}
		return "{" + strings.Join(parts, " ") + "}"
	}
	return fmt.Sprint(v)
}

func resources(m map[string]any, typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range m["Resources"].(map[string]any) {
		r := r.(map[string]any)
		if r["Type"] == typ {
			props, _ := r["Properties"].(map[string]any)
			out[logical(id)] = props
		}
	}
	return out
}

// statements lists every IAM statement of the template by role, rendered
// as "Effect actions on resources [if conditions]", sorted.
func statements(m map[string]any) map[string][]string {
	out := map[string][]string{}
	for _, p := range resources(m, "AWS::IAM::Policy") {
		doc := p["PolicyDocument"].(map[string]any)
		for _, role := range p["Roles"].([]any) {
			name := strings.Trim(render(role), "${}")
			for _, s := range doc["Statement"].([]any) {
				s := s.(map[string]any)
				line := s["Effect"].(string) + " " + render(s["Action"]) + " on " + render(s["Resource"])
				if c, ok := s["Condition"]; ok {
					line += " if " + render(c)
				}
				out[name] = append(out[name], line)
			}
		}
	}
	for k := range out {
		sort.Strings(out[k])
	}
	return out
}

const (
	arnPrefix = "arn:aws:"
	acct      = "${Region}:${Account}:"
)

func fnArn(fn string) string { return arnPrefix + "lambda:" + acct + "function:Agentsfleet-" + fn }

var (
	logsOf = func(id string) string {
		return "Allow logs:CreateLogStream | logs:PutLogEvents on ${" + id + "Logs.Arn}"
	}
	tableRW = "Allow dynamodb:ConditionCheckItem | dynamodb:DeleteItem | dynamodb:GetItem | dynamodb:PutItem | dynamodb:Query | dynamodb:UpdateItem on ${Table.Arn} | ${Table.Arn}/index/*"
	// The warm pool's items are the runner's alone (store.PoolKeyPrefix).
	noPool    = "Deny dynamodb:* on ${Table.Arn} | ${Table.Arn}/index/* if {ForAnyValue:StringLike={dynamodb:LeadingKeys=POOL#*}}"
	schedOps  = "Allow scheduler:CreateSchedule | scheduler:DeleteSchedule | scheduler:GetSchedule | scheduler:UpdateSchedule on " + arnPrefix + "scheduler:" + acct + "schedule/Agentsfleet-fleets/*"
	passSched = "Allow iam:PassRole on ${SchedulerRole.Arn} if {StringEquals={iam:PassedToService=scheduler.amazonaws.com}}"
	tasks     = arnPrefix + "ecs:" + acct + "task/${Cluster}/*"
	inCluster = "{ArnEquals={ecs:cluster=${Cluster.Arn}}}"
	eniOps    = "Allow ec2:AssignPrivateIpAddresses | ec2:CreateNetworkInterface | ec2:DeleteNetworkInterface | ec2:DescribeNetworkInterfaces | ec2:DescribeSubnets | ec2:UnassignPrivateIpAddresses on *"
	// The on-failure destination of the functions invoked asynchronously
	// (sweeper.go): each sends with its own role.
	sendFailed = "Allow sqs:GetQueueAttributes | sqs:GetQueueUrl | sqs:SendMessage on ${FailedInvocations.Arn}"
)

func runnerStatements(network string, bedrock, browser bool, fleetSecrets string) []string {
	runTask := "${SandboxTask}"
	if browser {
		runTask = "${SandboxBrowserTask} | ${SandboxTask}"
	}
	var keys string
	if !bedrock {
		keys = "Allow secretsmanager:GetSecretValue on ${ModelKeys}"
	}
	s := []string{
		logsOf("Runner"), tableRW, schedOps, passSched,
		"Allow secretsmanager:GetSecretValue on ${SandboxTokenKey}",
		// The setup step's secrets: the fleets', never Slack's.
		"Allow secretsmanager:GetSecretValue on " + fleetSecrets,
		"Deny secretsmanager:* on ${SlackBotToken} | ${SlackSigningSecret}",
		"Allow lambda:InvokeFunction on " + fnArn("runner") + " | " + fnArn("slack") + " | " + fnArn("webtools"),
		"Allow s3:GetObject | s3:PutObject on ${Bucket.Arn}/checkpoints/* | ${Bucket.Arn}/fleets/*",
		"Allow s3:ListBucket on ${Bucket.Arn}",
		sendFailed,
		"Allow ecs:RunTask on " + runTask + " if " + inCluster,
		"Allow ecs:DescribeTasks | ecs:StopTask on " + tasks + " if " + inCluster,
		"Allow ecs:TagResource on " + tasks + " if {StringEquals={ecs:CreateAction=RunTask}}",
		"Allow iam:PassRole on ${SandboxExecutionRole.Arn} if {StringEquals={iam:PassedToService=ecs-tasks.amazonaws.com}}",
	}
	if network == "public" {
		s = append(s, "Allow ec2:DescribeNetworkInterfaces on *")
	} else {
		s = append(s, eniOps)
	}
	if keys != "" {
		s = append(s, keys)
	}
	if bedrock {
		s = append(s, "Allow bedrock:InvokeModelWithResponseStream on arn:aws:bedrock:"+acct+"inference-profile/* | arn:aws:bedrock:*::foundation-model/*")
	}
	sort.Strings(s)
	return s
}

func expectedStatements(name string) map[string][]string {
	network := "public"
	if name == "private" {
		network = "private"
	}
	secrets := arnPrefix + "secretsmanager:" + acct + "secret:*"
	fleetSecrets := secrets
	if name == "anthropic" {
		fleetSecrets = arnPrefix + "secretsmanager:" + acct + "secret:prod/*"
		secrets = fleetSecrets + " | " + arnPrefix + "secretsmanager:" + acct + "secret:search/brave-??????"
	}
	want := map[string][]string{
		"ApiRole": {logsOf("Api"), tableRW, noPool, schedOps, passSched,
			"Allow lambda:InvokeFunction on " + fnArn("runner") + " | " + fnArn("webtools")},
		"ScheduleRole": {logsOf("Schedule"), tableRW, noPool, schedOps, passSched, sendFailed,
			"Allow lambda:InvokeFunction on " + fnArn("runner")},
		"WebtoolsRole": {logsOf("Webtools"),
			"Allow dynamodb:GetItem on ${Table.Arn} if {ForAllValues:StringLike={dynamodb:LeadingKeys=FLEET#* | RUN#*}}",
			"Allow dynamodb:PutItem | dynamodb:UpdateItem on ${Table.Arn} if {ForAllValues:StringLike={dynamodb:LeadingKeys=EGR#*}}",
			"Allow secretsmanager:GetSecretValue on " + secrets,
			"Deny secretsmanager:* on ${ModelKeys} | ${SandboxTokenKey} | ${SlackBotToken} | ${SlackSigningSecret}"},
		"SlackRole": {logsOf("Slack"), tableRW, noPool,
			"Allow lambda:InvokeFunction on " + fnArn("runner"),
			"Allow secretsmanager:GetSecretValue on ${SlackBotToken} | ${SlackSigningSecret}"},
		"RunnerRole":    runnerStatements(network, name != "anthropic", name == "browser", fleetSecrets),
		"SchedulerRole": {"Allow lambda:InvokeFunction on " + fnArn("schedule")},
		"SandboxExecutionRole": {
			"Allow ecr:BatchCheckLayerAvailability | ecr:BatchGetImage | ecr:GetDownloadUrlForLayer on arn:aws:ecr:" + acct + "repository/cdk-hnb659fds-container-assets-${AWS::AccountId}-${AWS::Region}",
			"Allow ecr:GetAuthorizationToken on *",
			logsOf("Sandbox"),
		},
	}
	for k := range want {
		sort.Strings(want[k])
	}
	return want
}

// TestStatements checks every IAM statement of every role, in each
// layout: nothing more is granted than listed here.
func TestStatements(t *testing.T) {
	for _, name := range []string{"public", "private", "anthropic", "browser"} {
		t.Run(name, func(t *testing.T) {
			_, m := layout(t, name)
			got, want := statements(m), expectedStatements(name)
			for role := range want {
				if !slices.Equal(got[role], want[role]) {
					t.Errorf("role %s:\ngot  %s\nwant %s", role, strings.Join(got[role], "\n     "), strings.Join(want[role], "\n     "))
				}
			}
			for role := range got {
				if _, ok := want[role]; !ok {
					t.Errorf("unexpected role with a policy: %s: %v", role, got[role])
				}
			}
			// No role has a managed policy (those name * resources).
			roles := resources(m, "AWS::IAM::Role")
			if len(roles) != 7 {
				t.Errorf("got %d roles, want 7 (five functions, Scheduler's, the sandbox execution role): %v", len(roles), keys(roles))
			}
			for id, r := range roles {
				if mp, ok := r["ManagedPolicyArns"]; ok {
					t.Errorf("role %s has managed policies %v", id, mp)
				}
			}
		})
	}
}

// TestStarResources checks that "*" appears only where IAM accepts no
// resource: ecr:GetAuthorizationToken, ec2:DescribeNetworkInterfaces (the
// public layout's runner) and Lambda's ENI actions (the private one's).
func TestStarResources(t *testing.T) {
	allowed := map[string]bool{
		"Allow ecr:GetAuthorizationToken on *":     true,
		"Allow ec2:DescribeNetworkInterfaces on *": true,
		eniOps: true,
	}
	for _, name := range []string{"public", "private", "anthropic"} {
		_, m := layout(t, name)
		for role, ss := range statements(m) {
			for _, s := range ss {
				if strings.HasSuffix(s, " on *") && !allowed[s] {
					t.Errorf("%s: role %s: %s", name, role, s)
				}
			}
		}
	}
}

// TestSecrets: webtools reads the fleets' secrets and nothing else, the
// slack function the Slack secrets and nothing else, the runner the
// sandboxes' token key and the model keys and nothing else (the model keys
// only when its provider needs a key); no function has a secret's value in
// its configuration.
func TestSecrets(t *testing.T) {
	for _, name := range []string{"public", "anthropic"} {
		_, m := layout(t, name)
		may := map[string][]string{"SlackRole": {"${SlackBotToken}", "${SlackSigningSecret}"}, "RunnerRole": {"${SandboxTokenKey}"}}
		if name == "anthropic" {
			may["RunnerRole"] = append(may["RunnerRole"], "${ModelKeys}")
		}
		for role, ss := range statements(m) {
			for _, s := range ss {
				if strings.Contains(s, "secretsmanager") && role != "WebtoolsRole" && may[role] == nil {
					t.Errorf("%s: role %s: %s", name, role, s)
				}
				for _, own := range []string{"${ModelKeys}", "${SandboxTokenKey}", "${SlackBotToken}", "${SlackSigningSecret}"} {
					if strings.HasPrefix(s, "Allow") && strings.Contains(s, own) && !slices.Contains(may[role], own) {
						t.Errorf("%s: role %s may read %s: %s", name, role, own, s)
					}
				}
			}
		}
		if got := len(resources(m, "AWS::SecretsManager::Secret")); got != 4 {
			t.Errorf("%s: got %d secrets, want 4", name, got)
		}
		for fn, p := range resources(m, "AWS::Lambda::Function") {
			if env := render(p["Environment"]); strings.Contains(env, "resolve:secretsmanager") {
				t.Errorf("%s: function %s has a secret's value in its environment: %s", name, fn, env)
			}
		}
		env := render(resources(m, "AWS::Lambda::Function")["Runner"]["Environment"])
		if !strings.Contains(env, "AGENTSFLEET_SANDBOX_TOKEN_KEY_ARN=${SandboxTokenKey}") {
			t.Errorf("%s: the runner's environment does not name the sandboxes' token key: %s", name, env)
		}
		if names := strings.Contains(env, "AGENTSFLEET_MODEL_KEYS_ARN=${ModelKeys}"); names != (name == "anthropic") {
			t.Errorf("%s: the runner's environment names the model keys' secret: %v, want %v: %s", name, names, name == "anthropic", env)
		}
	}
}

// TestPoolItemsRunnerOnly: every role that may use the table but the
// runner's is denied the warm pool's items (partition keys beginning with
// store.PoolKeyPrefix), whatever the action; the runner's is not. The key
// of the sandboxes' tokens is generated, 64 letters and digits.
func TestPoolItemsRunnerOnly(t *testing.T) {
	for _, name := range []string{"public", "private"} {
		_, m := layout(t, name)
		deny := "Deny dynamodb:* on ${Table.Arn} | ${Table.Arn}/index/* if {ForAnyValue:StringLike={dynamodb:LeadingKeys=" + store.PoolKeyPrefix + "*}}"
		users := 0
		for role, ss := range statements(m) {
			if !slices.Contains(ss, tableRW) {
				continue
			}
			users++
			if denied := slices.Contains(ss, deny); denied != (role != "RunnerRole") {
				t.Errorf("%s: role %s is denied the pool's items: %v, want %v", name, role, denied, role != "RunnerRole")
			}
		}
		if users != 4 {
			t.Errorf("%s: %d roles may use the table, want 4 (api, runner, schedule, slack)", name, users)
		}
		gen := render(resources(m, "AWS::SecretsManager::Secret")["SandboxTokenKey"]["GenerateSecretString"])
		if gen != "{ExcludePunctuation=true PasswordLength=64}" {
			t.Errorf("%s: the token key is generated as %s", name, gen)
		}
	}
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestResources checks the resource counts and key properties shared by
// the layouts.
func TestResources(t *testing.T) {
	tmpl, m := layout(t, "public")
	for typ, n := range map[string]float64{
		"AWS::DynamoDB::Table": 1, "AWS::S3::Bucket": 1, "AWS::Lambda::Function": 5, "AWS::ApiGatewayV2::Api": 1,
		"AWS::ApiGatewayV2::Route": 2, "AWS::Scheduler::ScheduleGroup": 1, "AWS::ECS::Cluster": 1,
		"AWS::ECS::TaskDefinition": 1, "AWS::SecretsManager::Secret": 4, "AWS::Logs::LogGroup": 7,
		"AWS::EC2::VPC": 1, "AWS::EC2::NatGateway": 0, "AWS::EC2::VPCEndpoint": 0, "AWS::EC2::SecurityGroup": 1,
		"AWS::Lambda::Permission": 2,
	} {
		tmpl.ResourceCountIs(jsii.String(typ), jsii.Number(n))
	}
	tmpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
		"BillingMode":                      "PAY_PER_REQUEST",
		"KeySchema":                        []any{map[string]any{"AttributeName": store.AttrPK, "KeyType": "HASH"}, map[string]any{"AttributeName": store.AttrSK, "KeyType": "RANGE"}},
		"TimeToLiveSpecification":          map[string]any{"AttributeName": store.AttrTTL, "Enabled": true},
		"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		"DeletionProtectionEnabled":        true,
		"GlobalSecondaryIndexes": []any{map[string]any{
			"IndexName":  store.IndexGSI1,
			"KeySchema":  []any{map[string]any{"AttributeName": store.AttrGSI1PK, "KeyType": "HASH"}, map[string]any{"AttributeName": store.AttrGSI1SK, "KeyType": "RANGE"}},
			"Projection": map[string]any{"ProjectionType": "INCLUDE", "NonKeyAttributes": store.GSI1Attributes},
		}, map[string]any{
			"IndexName":  store.IndexGSI2,
			"KeySchema":  []any{map[string]any{"AttributeName": store.AttrGSI2PK, "KeyType": "HASH"}, map[string]any{"AttributeName": store.AttrGSI2SK, "KeyType": "RANGE"}},
			"Projection": map[string]any{"ProjectionType": "KEYS_ONLY"},
		}},
	})
	tmpl.HasResource(jsii.String("AWS::DynamoDB::Table"), map[string]any{"DeletionPolicy": "Retain"})
	tmpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
		"LifecycleConfiguration": map[string]any{"Rules": []any{
			map[string]any{"Id": "expire-checkpoints", "Prefix": "checkpoints/", "ExpirationInDays": 30,
				"NoncurrentVersionExpiration": map[string]any{"NoncurrentDays": 1}, "Status": "Enabled"},
			map[string]any{"Id": "remove-checkpoint-delete-markers", "Prefix": "checkpoints/", "ExpiredObjectDeleteMarker": true, "Status": "Enabled"},
			map[string]any{"Id": "expire-replaced-folders", "Prefix": "fleets/",
				"NoncurrentVersionExpiration": map[string]any{"NoncurrentDays": stack.FolderVersionDays}, "Status": "Enabled"},
			assertions.Match_ObjectLike(&map[string]any{"AbortIncompleteMultipartUpload": map[string]any{"DaysAfterInitiation": 1}}),
		}},
		"VersioningConfiguration":        map[string]any{"Status": "Enabled"},
		"PublicAccessBlockConfiguration": map[string]any{"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true},
	})
	// The API's access log: its own log group, with the retention.
	stage := resources(m, "AWS::ApiGatewayV2::Stage")["HttpApiDefaultStage"]
	if got, want := render(stage["AccessLogSettings"]), "{DestinationArn=${ApiAccessLogs.Arn} Format="+stack.AccessLogFormat+"}"; got != want {
		t.Errorf("API stage access log settings %s, want %s", got, want)
	}
	tmpl.HasResourceProperties(jsii.String("AWS::Logs::LogGroup"), map[string]any{"LogGroupName": "/agentsfleet/Agentsfleet/api-access", "RetentionInDays": 30})
	// Every route is throttled at the stage, and no route's own settings
	// lift it.
	tmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Stage"), map[string]any{
		"StageName":            "$default",
		"DefaultRouteSettings": map[string]any{"ThrottlingRateLimit": stack.APIRateLimit, "ThrottlingBurstLimit": stack.APIBurstLimit},
	})
	if stages := resources(m, "AWS::ApiGatewayV2::Stage"); len(stages) != 1 || stage["RouteSettings"] != nil {
		t.Errorf("API stages %v, want the one default stage, without per-route settings", keys(stages))
	}
	tmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{"RouteKey": "ANY /v1/{proxy+}"})
	tmpl.HasResourceProperties(jsii.String("AWS::ApiGatewayV2::Route"), map[string]any{"RouteKey": "POST /slack/{proxy+}"})
	for _, out := range []string{"ApiUrl", "SlackEventsUrl", "SlackInteractivityUrl"} {
		tmpl.HasOutput(jsii.String(out), map[string]any{})
	}

	// Every function: provided.al2023 on arm64 from its bootstrap, its own
	// log group with the retention, sized as chosen.
	sizes := map[string][3]float64{"Api": {512, 29, 0}, "Runner": {1024, 900, 20}, "Schedule": {256, 30, 0}, "Slack": {256, 30, 0}, "Webtools": {512, 60, 260}}
	fns := resources(m, "AWS::Lambda::Function")
	for id, want := range sizes {
		p := fns[id]
		if p == nil {
			t.Fatalf("no function %s in %v", id, keys(fns))
		}
		if p["Runtime"] != "provided.al2023" || render(p["Architectures"]) != "arm64" || p["Handler"] != "bootstrap" {
			t.Errorf("%s: runtime %v, architectures %v, handler %v", id, p["Runtime"], p["Architectures"], p["Handler"])
		}
		if p["MemorySize"] != want[0] || p["Timeout"] != want[1] {
			t.Errorf("%s: memory %v timeout %v, want %v %v", id, p["MemorySize"], p["Timeout"], want[0], want[1])
		}
		rc, _ := p["ReservedConcurrentExecutions"].(float64)
		if rc != want[2] {
			t.Errorf("%s: reserved concurrency %v, want %v", id, rc, want[2])
		}
		if got := render(p["LoggingConfig"]); got != "{LogGroup=${"+id+"Logs}}" {
			t.Errorf("%s: logging %s", id, got)
		}
		if _, inVpc := p["VpcConfig"]; inVpc {
			t.Errorf("%s is in a VPC in the public layout", id)
		}
	}
	for id, lg := range resources(m, "AWS::Logs::LogGroup") {
		if lg["RetentionInDays"] != float64(30) {
			t.Errorf("log group %s: retention %v", id, lg["RetentionInDays"])
		}
	}
	env := func(fn string) map[string]string {
		out := map[string]string{}
		e, _ := fns[fn]["Environment"].(map[string]any)
		vars, _ := e["Variables"].(map[string]any)
		for k, v := range vars {
			out[k] = render(v)
		}
		return out
	}
	sched := map[string]string{
		"AGENTSFLEET_SCHEDULE_GROUP":      "Agentsfleet-fleets",
		"AGENTSFLEET_SCHEDULE_TARGET_ARN": fnArn("schedule"),
		"AGENTSFLEET_SCHEDULE_ROLE_ARN":   "${SchedulerRole.Arn}",
	}
	with := func(m map[string]string) map[string]string {
		for k, v := range sched {
			m[k] = v
		}
		return m
	}
	wantEnv := map[string]map[string]string{
		"Api": with(map[string]string{"AGENTSFLEET_TABLE": "${Table}", "AGENTSFLEET_FUNCTION_RUNNER": "Agentsfleet-runner",
			"AGENTSFLEET_FUNCTION_WEBTOOLS": "Agentsfleet-webtools"}),
		"Schedule": with(map[string]string{"AGENTSFLEET_TABLE": "${Table}", "AGENTSFLEET_FUNCTION_RUNNER": "Agentsfleet-runner"}),
		"Webtools": {"AGENTSFLEET_TABLE": "${Table}"},
		"Slack": {"AGENTSFLEET_TABLE": "${Table}", "AGENTSFLEET_FUNCTION_RUNNER": "Agentsfleet-runner",
			"AGENTSFLEET_SLACK_SIGNING_SECRET_ARN": "${SlackSigningSecret}", "AGENTSFLEET_SLACK_BOT_TOKEN_ARN": "${SlackBotToken}"},
		"Runner": with(map[string]string{
			"AGENTSFLEET_TABLE": "${Table}", "AGENTSFLEET_CHECKPOINT_BUCKET": "${Bucket}",
			"AGENTSFLEET_FUNCTION_WEBTOOLS": "Agentsfleet-webtools", "AGENTSFLEET_FUNCTION_SLACK": "Agentsfleet-slack",
			"AGENTSFLEET_MODEL_PROVIDER":  "bedrock",
			"AGENTSFLEET_SANDBOX_CLUSTER": "${Cluster}", "AGENTSFLEET_SANDBOX_TASK_DEFINITION": "${SandboxTask}", "AGENTSFLEET_SANDBOX_TOKEN_KEY_ARN": "${SandboxTokenKey}",
			"AGENTSFLEET_SANDBOX_SUBNETS":         "${VpcpublicSubnet1Subnet},${VpcpublicSubnet2Subnet}",
			"AGENTSFLEET_SANDBOX_SECURITY_GROUPS": "${SandboxGroup.GroupId}", "AGENTSFLEET_SANDBOX_PUBLIC_IP": "true",
			"AGENTSFLEET_RUN_TOOL_CONCURRENCY": "8",
		}),
	}
	for fn, want := range wantEnv {
		got := env(fn)
		if len(got) != len(want) {
			t.Errorf("%s: environment %v, want %v", fn, got, want)
		}
		for k, v := range want {
			if got[k] != v {
				t.Errorf("%s: %s=%q, want %q", fn, k, got[k], v)
			}
		}
	}
}

// TestSandboxTask: Fargate on arm64 from the sandbox image, no task role,
// the execution role alone, no user, sandboxd's port and health check.
func TestSandboxTask(t *testing.T) {
	tmpl, m := layout(t, "public")
	tmpl.HasResourceProperties(jsii.String("AWS::ECS::TaskDefinition"), map[string]any{
		"RequiresCompatibilities": []any{"FARGATE"},
		"NetworkMode":             "awsvpc",
		"RuntimePlatform":         map[string]any{"CpuArchitecture": "ARM64", "OperatingSystemFamily": "LINUX"},
		"Cpu":                     "512",
		"Memory":                  "1024",
		"EphemeralStorage":        map[string]any{"SizeInGiB": 21},
		"ContainerDefinitions": []any{assertions.Match_ObjectLike(&map[string]any{
			"Name":         "sandbox",
			"PortMappings": []any{map[string]any{"ContainerPort": 8080, "Protocol": "tcp"}},
			"HealthCheck":  assertions.Match_ObjectLike(&map[string]any{"Command": []any{"CMD", "/usr/local/bin/sandboxd", "health", "--addr", "127.0.0.1:8080", "--tls"}}),
		})},
	})
	for id, td := range resources(m, "AWS::ECS::TaskDefinition") {
		if _, ok := td["TaskRoleArn"]; ok {
			t.Errorf("%s has a task role: %v", id, td["TaskRoleArn"])
		}
		if got := render(td["ExecutionRoleArn"]); got != "${SandboxExecutionRole.Arn}" {
			t.Errorf("%s: execution role %s", id, got)
		}
		for _, c := range td["ContainerDefinitions"].([]any) {
			c := c.(map[string]any)
			for _, k := range []string{"User", "Command", "EntryPoint", "Environment", "Secrets"} {
				if v, ok := c[k]; ok {
					t.Errorf("container %v sets %s: %v", c["Name"], k, v)
				}
			}
		}
	}
	_, anth := layout(t, "anthropic")
	if got := render(resources(anth, "AWS::Lambda::Function")["Runner"]["Environment"]); !strings.Contains(got, "AGENTSFLEET_SANDBOX_WARM=small=2") {
		t.Errorf("warm pool not in the runner's environment: %s", got)
	}
}

// TestBrowserSandbox: without sandboxBrowser the stack has the plain
// sandbox alone and the runner no browser setting (its Definitions with a
// display tool are refused, naming it); with it, a second task definition
// of the same shape from the browser image (the Dockerfile's browser
// target, a distinct asset) with Chromium's memory added, which the
// runner is told of and may run, and its own warm pool.
func TestBrowserSandbox(t *testing.T) {
	for _, name := range []string{"public", "private"} {
		tmpl, m := layout(t, name)
		tmpl.ResourceCountIs(jsii.String("AWS::ECS::TaskDefinition"), jsii.Number(1))
		env := render(resources(m, "AWS::Lambda::Function")["Runner"]["Environment"])
		for _, k := range []string{ecs.EnvBrowserTaskDefinition, pool.BrowserTargetsEnv} {
			if strings.Contains(env, k) {
				t.Errorf("%s layout: the runner has %s without %s: %s", name, k, stack.CtxSandboxBrowser, env)
			}
		}
	}

	tmpl, m := layout(t, "browser")
	tmpl.ResourceCountIs(jsii.String("AWS::ECS::TaskDefinition"), jsii.Number(2))
	tds := resources(m, "AWS::ECS::TaskDefinition")
	plain, browser := tds["SandboxTask"], tds["SandboxBrowserTask"]
	if browser == nil {
		t.Fatalf("no SandboxBrowserTask among %v", keys(tds))
	}
	if got, want := browser["Memory"], strconv.Itoa(fleet.SizeSmall.MemoryMiB()+sandboximage.BrowserMemoryMiB); got != want || browser["Cpu"] != plain["Cpu"] {
		t.Errorf("the browser task: cpu %v, memory %v; want the plain one's cpu %v and memory %s", browser["Cpu"], got, plain["Cpu"], want)
	}
	if browser["Family"] != "Agentsfleet-sandbox-browser" || plain["Family"] != "Agentsfleet-sandbox" {
		t.Errorf("families %v and %v", plain["Family"], browser["Family"])
	}
	for _, k := range []string{"RequiresCompatibilities", "NetworkMode", "RuntimePlatform", "EphemeralStorage", "ExecutionRoleArn"} {
		if render(browser[k]) != render(plain[k]) {
			t.Errorf("the browser task's %s = %s, the plain one's %s", k, render(browser[k]), render(plain[k]))
		}
	}
	if _, ok := browser["TaskRoleArn"]; ok {
		t.Errorf("the browser task has a task role: %v", browser["TaskRoleArn"])
	}
	container := func(td map[string]any) map[string]any { return td["ContainerDefinitions"].([]any)[0].(map[string]any) }
	pc, bc := container(plain), container(browser)
	if render(pc["Image"]) == render(bc["Image"]) {
		t.Errorf("both tasks run the image %s; want the browser target's own asset", render(pc["Image"]))
	}
	for _, k := range []string{"Name", "PortMappings", "HealthCheck", "Essential"} {
		if render(pc[k]) != render(bc[k]) {
			t.Errorf("the browser container's %s = %s, the plain one's %s", k, render(bc[k]), render(pc[k]))
		}
	}
	env := render(resources(m, "AWS::Lambda::Function")["Runner"]["Environment"])
	for _, want := range []string{ecs.EnvBrowserTaskDefinition + "=${SandboxBrowserTask}", ecs.EnvTaskDefinition + "=${SandboxTask}", pool.BrowserTargetsEnv + "=small=1"} {
		if !strings.Contains(env, want) {
			t.Errorf("the runner's environment lacks %s: %s", want, env)
		}
	}
}

// groupRules renders a security group's rules.
func groupRules(m map[string]any, id, key string) string {
	v, ok := resources(m, "AWS::EC2::SecurityGroup")[id][key]
	if !ok {
		return ""
	}
	return render(v)
}

// TestLayouts: the public layout has no NAT gateway and no endpoint, the
// runner in no VPC and sandboxd's port open to the internet; the private
// one has the runner in the VPC's private subnets, a NAT gateway, the free
// gateway endpoints, and sandboxd's port open to the runner alone.
func TestLayouts(t *testing.T) {
	_, pub := layout(t, "public")
	in := groupRules(pub, "SandboxGroup", "SecurityGroupIngress")
	if in != "{CidrIp=0.0.0.0/0 Description=sandboxd (TLS, per-task token) FromPort=8080 IpProtocol=tcp ToPort=8080}" {
		t.Errorf("public ingress: %s", in)
	}
	if out := groupRules(pub, "SandboxGroup", "SecurityGroupEgress"); out != "{CidrIp=0.0.0.0/0 Description=egress policy: tcp 443 FromPort=443 IpProtocol=tcp ToPort=443}" {
		t.Errorf("public egress: %s", out)
	}
	if n := len(resources(pub, "AWS::EC2::Subnet")); n != 2 {
		t.Errorf("public layout: %d subnets, want 2 public", n)
	}

	tmpl, priv := layout(t, "private")
	tmpl.ResourceCountIs(jsii.String("AWS::EC2::NatGateway"), jsii.Number(1))
	tmpl.ResourceCountIs(jsii.String("AWS::EC2::VPCEndpoint"), jsii.Number(2))
	tmpl.ResourcePropertiesCountIs(jsii.String("AWS::EC2::VPCEndpoint"), map[string]any{"VpcEndpointType": "Interface"}, jsii.Number(0))
	tmpl.ResourceCountIs(jsii.String("AWS::EC2::SecurityGroup"), jsii.Number(2))
	fns := resources(priv, "AWS::Lambda::Function")
	for id, p := range fns {
		_, inVpc := p["VpcConfig"]
		if inVpc != (id == "Runner") {
			t.Errorf("private layout: %s in the VPC: %v", id, inVpc)
		}
	}
	if got := render(fns["Runner"]["VpcConfig"]); got != "{SecurityGroupIds=${RunnerGroup.GroupId} SubnetIds=${VpcprivateSubnet1Subnet} | ${VpcprivateSubnet2Subnet}}" {
		t.Errorf("runner VPC config: %s", got)
	}
	env := render(fns["Runner"]["Environment"])
	for _, want := range []string{"AGENTSFLEET_SANDBOX_PUBLIC_IP=false", "AGENTSFLEET_SANDBOX_SUBNETS=${VpcprivateSubnet1Subnet},${VpcprivateSubnet2Subnet}"} {
		if !strings.Contains(env, want) {
			t.Errorf("runner environment lacks %s: %s", want, env)
		}
	}
	ingress := resources(priv, "AWS::EC2::SecurityGroupIngress")
	if len(ingress) != 1 || groupRules(priv, "SandboxGroup", "SecurityGroupIngress") != "" {
		t.Fatalf("private ingress: %v, inline %s", ingress, groupRules(priv, "SandboxGroup", "SecurityGroupIngress"))
	}
	for _, r := range ingress {
		if got := render(r); got != "{Description=sandboxd from the runner FromPort=8080 GroupId=${SandboxGroup.GroupId} IpProtocol=tcp SourceSecurityGroupId=${RunnerGroup.GroupId} ToPort=8080}" {
			t.Errorf("private ingress: %s", got)
		}
	}

	_, anth := layout(t, "anthropic")
	if out := groupRules(anth, "SandboxGroup", "SecurityGroupEgress"); !strings.Contains(out, "FromPort=80 ") || !strings.Contains(out, "FromPort=443 ") {
		t.Errorf("egress 80,443: %s", out)
	}
	tbl := resources(anth, "AWS::DynamoDB::Table")["Table"]
	if tbl["DeletionProtectionEnabled"] != false {
		t.Errorf("deletionProtection=false: %v", tbl["DeletionProtectionEnabled"])
	}
	if rc, ok := resources(anth, "AWS::Lambda::Function")["Runner"]["ReservedConcurrentExecutions"]; ok {
		t.Errorf("runnerConcurrency=0: reserved %v", rc)
	}
	// Without the runner's reservation nothing bounds what webtools is
	// asked at once: it reserves none, as a throttled call fails a tool call.
	if rc, ok := resources(anth, "AWS::Lambda::Function")["Webtools"]["ReservedConcurrentExecutions"]; ok {
		t.Errorf("runnerConcurrency=0: webtools reserved %v, want none", rc)
	}
}

// TestFromContext checks the settings' refusals.
func TestFromContext(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ key, value, want string }{
		{"network", "hybrid", "want public"},
		{"sandboxEgress", "https", "want all, or TCP ports"},
		{"logRetentionDays", "31", "CloudWatch Logs keeps"},
		{"ephemeralStorageGiB", "20", "from 21 to 200"},
		{"warmPool", "huge=2", "huge"},
		{"modelProvider", "gemini", "want bedrock"},
		{"deletionProtection", "maybe", "true or false"},
		{"sandboxBrowser", "yes please", "true or false"},
		{"browserWarmPool", "small=1", "sandboxBrowser is not true"},
		{"modelPrices", "claude=3", "AGENTSFLEET_MODEL_PRICES"},
		{"computePrices", "fargate_vcpu_hour=free", "AGENTSFLEET_COMPUTE_PRICES"},
	} {
		_, err := stack.FromContext("/r", func(k string) any {
			if k == tc.key {
				return tc.value
			}
			return nil
		})
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s=%s: got %v, want an error with %q", tc.key, tc.value, err, tc.want)
		}
	}
	_, err := stack.FromContext("/r", func(k string) any {
		return map[string]any{"sandboxBrowser": "true", "browserWarmPool": "small=x"}[k]
	})
	if err == nil || !strings.Contains(err.Error(), "browserWarmPool") || !strings.Contains(err.Error(), pool.BrowserTargetsEnv) {
		t.Errorf("browserWarmPool=small=x: %v, want an error naming the context key and the setting", err)
	}
	if s, err := stack.FromContext("/r", func(k string) any {
		return map[string]any{"sandboxBrowser": true, "browserWarmPool": "medium=2"}[k]
	}); err != nil || !s.SandboxBrowser || s.BrowserWarmPool != "medium=2" {
		t.Errorf("sandboxBrowser=true, browserWarmPool=medium=2: %+v, %v", s, err)
	}
	if s, err := stack.FromContext("/r", func(string) any { return nil }); err != nil || s.SandboxBrowser {
		t.Errorf("by default: SandboxBrowser %v, %v; want false", s.SandboxBrowser, err)
	}
	s, err := stack.FromContext("/r", func(k string) any {
		return map[string]any{"network": "private", "sandboxEgress": "all", "deletionProtection": false, "logRetentionDays": float64(90)}[k]
	})
	if err != nil || s.Network != stack.Private || !s.SandboxEgressAll || s.DeletionProtection || s.LogRetentionDays != 90 || s.LambdaDir != "/r/build/lambda" {
		t.Errorf("got %+v, %v", s, err)
	}
}

// TestWebtoolsReservation: the webtools function reserves what its callers
// can ask of it at once — the runner's reservation times the tool calls of
// one answer that run at once (which the stack gives the runner), plus the
// API's burst for the api function's scrubs — so that it never throttles
// a deployment's own runs; it follows runnerConcurrency.
func TestWebtoolsReservation(t *testing.T) {
	_, m := synth(t, map[string]string{stack.CtxRunnerConcurrency: "5"})
	fns := resources(m, "AWS::Lambda::Function")
	want := float64(5*stack.ToolConcurrency + stack.APIBurstLimit)
	if rc := fns["Webtools"]["ReservedConcurrentExecutions"]; rc != want {
		t.Errorf("runnerConcurrency=5: webtools reserved %v, want %v", rc, want)
	}
	if rc := fns["Runner"]["ReservedConcurrentExecutions"]; rc != float64(5) {
		t.Errorf("runnerConcurrency=5: runner reserved %v, want 5", rc)
	}
	env, _ := fns["Runner"]["Environment"].(map[string]any)
	vars, _ := env["Variables"].(map[string]any)
	if got := vars[runner.EnvToolConcurrency]; got != strconv.Itoa(stack.ToolConcurrency) {
		t.Errorf("the runner's %s = %v, want %d, the figure webtools' reservation is sized by", runner.EnvToolConcurrency, got, stack.ToolConcurrency)
	}
}
