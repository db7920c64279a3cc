package stack

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsapigatewayv2integrations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsdynamodb"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsiam"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/aws-cdk-go/awscdk/v2/awss3"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsscheduler"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssecretsmanager"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

// Name is the stack's name.
const Name = "Agentsfleet"

// Functions are the functions of functions/ the stack deploys, each from
// LambdaDir/<name>/bootstrap.
var Functions = []string{"api", "runner", "schedule", "slack", "webtools"}

// Stack is the built stack and the parts its tests and outputs look at.
type Stack struct {
	awscdk.Stack
	Settings Settings
	Table    awsdynamodb.Table
	Bucket   awss3.Bucket
	API      awsapigatewayv2.HttpApi
	Sandbox  *Sandbox
	Secrets  Secrets
}

// Secrets are the deployment's own secrets. The stack creates them with
// placeholder values; the operator puts the real ones in (README,
// "Deploying").
type Secrets struct {
	// SlackSigningSecret and SlackBotToken are for the Slack function
	// alone, which reads them on its first request that needs them.
	SlackSigningSecret, SlackBotToken awssecretsmanager.Secret
	// ModelKeys is a JSON object with ANTHROPIC_API_KEY and OPENAI_API_KEY,
	// for the runner alone, which reads it on its first model call.
	ModelKeys awssecretsmanager.Secret
	// SandboxTokenKey is the key every sandbox's token is derived from
	// (shared/sandbox/token), for the runner alone, which reads it on its
	// first sandbox. Its generated value is the real one; rotating it
	// orphans the running sandboxes (their runs get new ones).
	SandboxTokenKey awssecretsmanager.Secret
}

// New builds the stack named Name in scope. It fails when a function's
// bootstrap binary is missing (run `make lambdas`).
func New(scope constructs.Construct, s Settings, props *awscdk.StackProps) (*Stack, error) {
	var missing []error
	for _, fn := range Functions {
		p := filepath.Join(s.LambdaDir, fn, "bootstrap")
		if _, err := os.Stat(p); err != nil {
			missing = append(missing, fmt.Errorf("function %s: %w (run `make lambdas` first)", fn, err))
		}
	}
	if err := errors.Join(missing...); err != nil {
		return nil, err
	}
	if props == nil {
		props = &awscdk.StackProps{}
	}
	if props.Description == nil {
		props.Description = jsii.String("agentsfleet: AI agents on AWS (network layout " + string(s.Network) + ")")
	}
	st := &Stack{Stack: awscdk.NewStack(scope, jsii.String(Name), props), Settings: s}
	st.Table = newTable(st.Stack, s)
	st.Bucket = newBucket(st.Stack, s)
	st.Secrets = newSecrets(st.Stack)
	group := awsscheduler.NewScheduleGroup(st.Stack, jsii.String("Schedules"), &awsscheduler.ScheduleGroupProps{
		ScheduleGroupName: jsii.String(Name + "-fleets"),
	})
	st.Sandbox = newSandbox(st.Stack, s)
	fns := newFunctions(st, group)
	st.API = newAPI(st.Stack, s, fns.api)
	addSlack(st, fns.slack)
	addSweeper(st, fns, group)

	out := func(id, value, desc string) {
		awscdk.NewCfnOutput(st.Stack, jsii.String(id), &awscdk.CfnOutputProps{Value: jsii.String(value), Description: jsii.String(desc)})
	}
	out("ApiUrl", *st.API.Url(), "the HTTP API: /v1/* (agentsfleet --api URL, webhooks at /v1/hooks/{fleet})")
	out("TableName", *st.Table.TableName(), "the DynamoDB table (AGENTSFLEET_TABLE)")
	out("BucketName", *st.Bucket.BucketName(), "checkpoints and the fleets' folders")
	out("ScheduleGroup", *group.ScheduleGroupName(), "the EventBridge Scheduler group of the fleets' schedules")
	out("SandboxCluster", *st.Sandbox.Cluster.ClusterName(), "the ECS cluster of the sandbox tasks")
	out("SlackSigningSecretArn", *st.Secrets.SlackSigningSecret.SecretArn(), "put the Slack app's signing secret here")
	out("SlackBotTokenArn", *st.Secrets.SlackBotToken.SecretArn(), "put the Slack app's bot token here")
	out("ModelKeysSecretArn", *st.Secrets.ModelKeys.SecretArn(), `{"ANTHROPIC_API_KEY": "…", "OPENAI_API_KEY": "…"} for modelProvider anthropic or openai`)
	return st, nil
}

// newTable is shared/store's table (store.CreateTableInput): on-demand, the
// key schema, GSI1 with its projection and the sweep's GSI2 (keys only),
// TTL on store.AttrTTL,
// point-in-time recovery, and deletion protection as set. It is retained
// when the stack is deleted.
func newTable(stack awscdk.Stack, s Settings) awsdynamodb.Table {
	str := awsdynamodb.AttributeType_STRING
	t := awsdynamodb.NewTable(stack, jsii.String("Table"), &awsdynamodb.TableProps{
		PartitionKey:        &awsdynamodb.Attribute{Name: jsii.String(store.AttrPK), Type: str},
		SortKey:             &awsdynamodb.Attribute{Name: jsii.String(store.AttrSK), Type: str},
		BillingMode:         awsdynamodb.BillingMode_PAY_PER_REQUEST,
		TimeToLiveAttribute: jsii.String(store.AttrTTL),
		PointInTimeRecoverySpecification: &awsdynamodb.PointInTimeRecoverySpecification{
			PointInTimeRecoveryEnabled: jsii.Bool(true),
		},
		DeletionProtection: jsii.Bool(s.DeletionProtection),
		Encryption:         awsdynamodb.TableEncryption_AWS_MANAGED,
		RemovalPolicy:      awscdk.RemovalPolicy_RETAIN,
	})
	t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:        jsii.String(store.IndexGSI1),
		PartitionKey:     &awsdynamodb.Attribute{Name: jsii.String(store.AttrGSI1PK), Type: str},
		SortKey:          &awsdynamodb.Attribute{Name: jsii.String(store.AttrGSI1SK), Type: str},
		ProjectionType:   awsdynamodb.ProjectionType_INCLUDE,
		NonKeyAttributes: jsii.Strings(store.GSI1Attributes...),
	})
	t.AddGlobalSecondaryIndex(&awsdynamodb.GlobalSecondaryIndexProps{
		IndexName:      jsii.String(store.IndexGSI2),
		PartitionKey:   &awsdynamodb.Attribute{Name: jsii.String(store.AttrGSI2PK), Type: str},
		SortKey:        &awsdynamodb.Attribute{Name: jsii.String(store.AttrGSI2SK), Type: awsdynamodb.AttributeType_NUMBER},
		ProjectionType: awsdynamodb.ProjectionType_KEYS_ONLY,
	})
	return t
}

// Bucket prefixes, as shared/runner writes them.
const (
	// CheckpointPrefix holds checkpoints too large for an item; they
	// expire after Settings.CheckpointDays.
	CheckpointPrefix = "checkpoints/"
	// FleetsPrefix holds the fleets' folders (runner.FolderKey), kept.
	FleetsPrefix = "fleets/"
)

// FolderVersionDays is how long a fleet's folder, once replaced, can
// still be restored from the bucket's versions.
const FolderVersionDays = 30

// newBucket is the checkpoint bucket: private, TLS only, checkpoints
// expiring, the fleets' folders under FleetsPrefix spared. The runner
// reads and writes it and presigns the sandbox's URLs; the sandbox has no
// access of its own. It is retained when the stack is deleted.
//
// It is versioned because a run replaces its fleet's folder with
// whatever the sandbox uploads: a run gone wrong (a prompt injection, a
// careless rm) can empty the fleet's memory, and the folder's earlier
// versions are the way back for FolderVersionDays. A replaced or expired
// checkpoint is worth nothing, so its old version goes after a day.
func newBucket(stack awscdk.Stack, s Settings) awss3.Bucket {
	return awss3.NewBucket(stack, jsii.String("Bucket"), &awss3.BucketProps{
		BlockPublicAccess: awss3.BlockPublicAccess_BLOCK_ALL(),
		Encryption:        awss3.BucketEncryption_S3_MANAGED,
		EnforceSSL:        jsii.Bool(true),
		ObjectOwnership:   awss3.ObjectOwnership_BUCKET_OWNER_ENFORCED,
		RemovalPolicy:     awscdk.RemovalPolicy_RETAIN,
		Versioned:         jsii.Bool(true),
		LifecycleRules: &[]*awss3.LifecycleRule{
			{
				Id:                          jsii.String("expire-checkpoints"),
				Prefix:                      jsii.String(CheckpointPrefix),
				Expiration:                  awscdk.Duration_Days(jsii.Number(s.CheckpointDays)),
				NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(1)),
			},
			{
				// What the expiry above leaves of a checkpoint once its
				// old version is gone.
				Id:                        jsii.String("remove-checkpoint-delete-markers"),
				Prefix:                    jsii.String(CheckpointPrefix),
				ExpiredObjectDeleteMarker: jsii.Bool(true),
			},
			{
				Id:                          jsii.String("expire-replaced-folders"),
				Prefix:                      jsii.String(FleetsPrefix),
				NoncurrentVersionExpiration: awscdk.Duration_Days(jsii.Number(FolderVersionDays)),
			},
			{
				// A folder upload that broke off bills until it is aborted.
				Id:                                  jsii.String("abort-incomplete-uploads"),
				AbortIncompleteMultipartUploadAfter: awscdk.Duration_Days(jsii.Number(1)),
			},
		},
	})
}

// newSecrets creates the deployment's secrets with generated placeholder
// values: the operator replaces them (a generated value is never a real
// credential, so a forgotten one fails loudly).
func newSecrets(stack awscdk.Stack) Secrets {
	mk := func(id, desc string, gen *awssecretsmanager.SecretStringGenerator) awssecretsmanager.Secret {
		return awssecretsmanager.NewSecret(stack, jsii.String(id), &awssecretsmanager.SecretProps{
			SecretName:           jsii.String(Name + "/" + id),
			Description:          jsii.String(desc),
			GenerateSecretString: gen,
		})
	}
	return Secrets{
		SlackSigningSecret: mk("SlackSigningSecret", "agentsfleet: the Slack app's signing secret (only the Slack function reads it)", nil),
		SlackBotToken:      mk("SlackBotToken", "agentsfleet: the Slack app's bot token (only the Slack function reads it)", nil),
		ModelKeys: mk("ModelKeys", "agentsfleet: the model providers' API keys (only the runner reads them)",
			&awssecretsmanager.SecretStringGenerator{
				SecretStringTemplate: jsii.String(`{"ANTHROPIC_API_KEY":"","OPENAI_API_KEY":""}`),
				GenerateStringKey:    jsii.String("placeholder"),
			}),
		SandboxTokenKey: mk("SandboxTokenKey", "agentsfleet: the key of the sandboxes' tokens (only the runner reads it)",
			&awssecretsmanager.SecretStringGenerator{PasswordLength: jsii.Number(64), ExcludePunctuation: jsii.Bool(true)}),
	}
}

// AccessLogFormat is the HTTP API's access log line: who called which
// path, when, and what came back. It holds no header, query string or
// body, so neither a key nor a webhook's payload reaches the log.
const AccessLogFormat = `{"requestId":"$context.requestId","ip":"$context.identity.sourceIp",` +
	`"userAgent":"$context.identity.userAgent","requestTime":"$context.requestTime","method":"$context.httpMethod",` +
	`"path":"$context.path","status":"$context.status","responseLength":"$context.responseLength",` +
	`"integrationError":"$context.integrationErrorMessage"}`

// The HTTP API stage's throttle, for every route (/v1/*, the webhooks and
// /slack/*) together: requests a second on average and at once. A flood of
// requests, signed or not, is answered 429 by API Gateway before it costs
// a Lambda invocation or a table read; a team's use of the API, Slack's
// event deliveries and its retries stay far below it.
const (
	APIRateLimit  = 50
	APIBurstLimit = 100
)

// newAPI is the HTTP API: /v1/* to the api function. /slack/* is the Slack
// function's (addSlack). The integration's invoke permission names this
// API's routes alone. Its default stage writes an access log
// (AccessLogFormat) to a log group of its own, with the retention, and
// throttles every route (APIRateLimit, APIBurstLimit).
func newAPI(stack awscdk.Stack, s Settings, api *function) awsapigatewayv2.HttpApi {
	h := awsapigatewayv2.NewHttpApi(stack, jsii.String("HttpApi"), &awsapigatewayv2.HttpApiProps{
		ApiName:     jsii.String(Name),
		Description: jsii.String("agentsfleet's HTTP API"),
	})
	logs := logGroup(stack, "ApiAccessLogs", "/agentsfleet/"+Name+"/api-access", s)
	stage := h.DefaultStage().Node().DefaultChild().(awsapigatewayv2.CfnStage)
	stage.SetAccessLogSettings(&awsapigatewayv2.CfnStage_AccessLogSettingsProperty{
		DestinationArn: logs.LogGroupArn(),
		Format:         jsii.String(AccessLogFormat),
	})
	stage.SetDefaultRouteSettings(&awsapigatewayv2.CfnStage_RouteSettingsProperty{
		ThrottlingRateLimit:  jsii.Number(APIRateLimit),
		ThrottlingBurstLimit: jsii.Number(APIBurstLimit),
	})
	h.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String("/v1/{proxy+}"),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_ANY},
		Integration: awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Api"), api.fn, nil),
	})
	return h
}

// addSlack routes /slack/* to the slack function (functions/slack: the
// Slack app's request URLs) and outputs the two URLs the app's manifest
// needs.
func addSlack(st *Stack, slack *function) {
	st.API.AddRoutes(&awsapigatewayv2.AddRoutesOptions{
		Path:        jsii.String("/slack/{proxy+}"),
		Methods:     &[]awsapigatewayv2.HttpMethod{awsapigatewayv2.HttpMethod_POST},
		Integration: awsapigatewayv2integrations.NewHttpLambdaIntegration(jsii.String("Slack"), slack.fn, nil),
	})
	for id, path := range map[string]string{"SlackEventsUrl": "slack/events", "SlackInteractivityUrl": "slack/interactivity"} {
		awscdk.NewCfnOutput(st.Stack, jsii.String(id), &awscdk.CfnOutputProps{
			Value:       awscdk.Fn_Join(jsii.String(""), &[]*string{st.API.Url(), jsii.String(path)}),
			Description: jsii.String("the Slack app's request URL for " + path),
		})
	}
}

// logGroup is a log group with the deployment's retention, removed with
// the stack.
func logGroup(stack awscdk.Stack, id, name string, s Settings) awslogs.LogGroup {
	return awslogs.NewLogGroup(stack, jsii.String(id), &awslogs.LogGroupProps{
		LogGroupName:  jsii.String(name),
		Retention:     retention(s.LogRetentionDays),
		RemovalPolicy: awscdk.RemovalPolicy_DESTROY,
	})
}

// retention maps days to CDK's names for them (FromContext checked days).
func retention(days int) awslogs.RetentionDays {
	return map[int]awslogs.RetentionDays{
		1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
		7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
		60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
		150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
		400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS, 731: awslogs.RetentionDays_TWO_YEARS,
		1096: awslogs.RetentionDays_THREE_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
		2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS, 3288: awslogs.RetentionDays_NINE_YEARS,
		3653: awslogs.RetentionDays_TEN_YEARS,
	}[days]
}

// allow is an Allow statement of actions on resources, with conditions
// (nil for none).
func allow(actions, resources []string, conditions map[string]any) awsiam.PolicyStatement {
	p := &awsiam.PolicyStatementProps{
		Effect:    awsiam.Effect_ALLOW,
		Actions:   jsii.Strings(actions...),
		Resources: jsii.Strings(resources...),
	}
	if conditions != nil {
		p.Conditions = &conditions
	}
	return awsiam.NewPolicyStatement(p)
}
