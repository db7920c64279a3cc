// Package deployment is agentsfleet deployed on one machine, from its
// synthesized CloudFormation template: every Lambda function of the
// template runs as its real bootstrap (built as `make lambdas` builds it,
// for this machine) under a Lambda Runtime API the harness serves, with
// exactly the environment the template gives it, its Refs and GetAtts
// resolved to resources the harness makes in moto (the table, bucket,
// secrets, schedule group, queues, ECS cluster and task definitions). Lambda
// Invoke between functions (RequestResponse and Event, with the template's
// retries and on-failure destination) reaches those processes by function
// name; HTTP requests reach the functions by the template's API Gateway
// routes as payload format 2.0 events; the sandbox tasks the runner starts
// in moto's ECS get the real sandboxd, started with the command of their
// task definition's image (the stage of the Dockerfile its asset builds).
// Every AWS request a function makes is recorded, so that a test can check
// it against the function's IAM statements in the template.
//
// No handler runs in the harness' process. It is a test harness: it trusts
// the template and the binaries it is given, and listens on loopback only.
package deployment

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
)

// Options say what to deploy and where.
type Options struct {
	// Template is the synthesized template (cdk.out/Agentsfleet.template.json);
	// the functions' bootstraps are the assets beside it.
	Template string
	// Endpoint is moto's URL.
	Endpoint string
	// Sandboxd is the sandboxd binary the sandbox tasks run.
	Sandboxd string
	// Secrets are the values of the template's secrets, by logical id or
	// by the last part of their name (Agentsfleet/ModelKeys: ModelKeys); a
	// secret without one gets what its GenerateSecretString says.
	Secrets map[string]string
	// Env adds settings to functions, by short name (api, runner, …),
	// beyond the template's: the SDKs' own endpoints (OPENAI_BASE_URL) and
	// the test escape hatch, which no deployment has.
	Env map[string]map[string]string
	// TaskEnv adds settings to every sandbox task's sandboxd, beyond its
	// image's and its task definition's: the test escape hatch, which no
	// deployment gives its tasks.
	TaskEnv map[string]string
	// Browser is this machine's Chromium, run where a task definition's
	// command has sandboxd serve --browser (the browser image's own
	// Chromium). Empty keeps the image's path, which must then exist here.
	Browser string
	// Dir holds the tasks' folders.
	Dir string
	// RetryDelay is the wait before an asynchronous invocation's first
	// retry (twice it before the second). Zero means a second.
	RetryDelay time.Duration
	// Concurrency caps each function's containers when the template
	// reserves none. Zero means 8.
	Concurrency int
	// Log, when not nil, gets every function's and sandbox's output, each
	// line marked with where it came from.
	Log io.Writer
}

// Deployment is the stack running on this machine. Close stops it.
type Deployment struct {
	opts            Options
	t               *template
	vs              *values
	region, account string
	aws             aws.Config
	moto            *http.Client
	dir             string

	functions map[string]*function // by logical id
	byName    map[string]*function // by FunctionName
	secrets   map[string]string    // name → ARN
	queues    map[string]string    // queue URL → ARN
	policies  map[string][]statement
	hashKeys  map[string]string            // table ARN, or table ARN/index/NAME → its partition key's attribute
	own       map[string][2]string         // the template's own schedules: group and name, by logical id
	sandboxes map[string]*sandboxContainer // by task definition ARN
	gateway   *gateway
	tasks     *tasks

	closed    chan struct{}
	closeOnce sync.Once
	wg        sync.WaitGroup
	logMu     sync.Mutex
}

// sandboxContainer is a task definition's sandboxd container, as its image
// runs it.
type sandboxContainer struct {
	id      string // the task definition's logical id
	name    string
	command []string // its image's CMD (or the container's Command), after its ENTRYPOINT's sandboxd
	env     []string // its image's ENV, then the container's environment
	taskDef string   // the task definition's ARN
	family  string
	roles   []string // the roles RunTask passes to ECS
}

// Start makes the template's resources in moto and starts its functions'
// endpoints and HTTP API; containers start on their first invocation.
func Start(ctx context.Context, o Options) (_ *Deployment, err error) {
	if o.RetryDelay <= 0 {
		o.RetryDelay = time.Second
	}
	if o.Concurrency <= 0 {
		o.Concurrency = 8
	}
	t, err := readTemplate(o.Template)
	if err != nil {
		return nil, err
	}
	d := &Deployment{opts: o, t: t, region: "us-east-1", account: "123456789012",
		functions: map[string]*function{}, sandboxes: map[string]*sandboxContainer{}, byName: map[string]*function{}, secrets: map[string]string{},
		queues: map[string]string{}, policies: map[string][]statement{}, hashKeys: map[string]string{}, own: map[string][2]string{}, closed: make(chan struct{}),
		moto: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}}
	d.vs = &values{region: d.region, account: d.account, refs: map[string]string{}, attrs: map[string]string{}}
	d.tasks = newTasks(d)
	if d.dir = o.Dir; d.dir == "" {
		if d.dir, err = os.MkdirTemp("", "deployment-"); err != nil {
			return nil, err
		}
	}
	defer func() {
		if err != nil {
			d.Close()
		}
	}()
	d.aws, err = config.LoadDefaultConfig(ctx, config.WithRegion(d.region),
		config.WithCredentialsProvider(credentials.NewStaticCredentialsProvider("harness", "harness", "")),
		config.WithBaseEndpoint(o.Endpoint), config.WithRetryMaxAttempts(3),
		config.WithHTTPClient(awshttp.NewBuildableClient().WithTransportOptions(func(t *http.Transport) { t.DisableKeepAlives = true })))
	if err != nil {
		return nil, err
	}
	if err := d.setTransitions(ctx); err != nil {
		return nil, err
	}
	// Resources in the order their references need them.
	for _, step := range []func(context.Context) error{d.makeNamed, d.makeNetwork, d.makeTable, d.makeBuckets, d.makeSecrets,
		d.makeQueues, d.makeScheduleGroups, d.makeCluster, d.makeTaskDefinitions, d.makeFunctions, d.makeSchedules,
		d.readPolicies, d.readEventConfigs, d.makeGateway} {
		if err := step(ctx); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// setTransitions keeps moto's ECS tasks RUNNING until StopTask (by
// default moto moves a task one status on at each DescribeTasks).
func (d *Deployment) setTransitions(ctx context.Context) error {
	body := `{"model_name":"ecs::task","transition":{"progression":"manual","times":1000000}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, d.opts.Endpoint+"/moto-api/state-manager/set-transition", strings.NewReader(body))
	resp, err := d.moto.Do(req)
	if err != nil {
		return fmt.Errorf("moto set-transition: %w", err)
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return fmt.Errorf("moto set-transition: %s", resp.Status)
	}
	return nil
}

func (d *Deployment) arn(service, resource string) string {
	return "arn:aws:" + service + ":" + d.region + ":" + d.account + ":" + resource
}

// physicalName is what CloudFormation names a resource without a name of
// its own: the stack, the logical id and a suffix.
func physicalName(id string, lower bool) string {
	var b [6]byte
	rand.Read(b[:])
	name := fmt.Sprintf("Agentsfleet-%s-%X", id, b)
	if len(name) > 60 {
		name = name[:60]
	}
	if lower {
		name = strings.ToLower(name)
	}
	return name
}

// nameProp resolves resource id's name property, or makes a physical name.
func (d *Deployment) nameProp(id, prop string, lower bool) (string, error) {
	if _, ok := d.t.Resources[id].Properties[prop]; !ok {
		return physicalName(id, lower), nil
	}
	var name string
	err := d.vs.prop(d.t, id, prop, &name)
	return name, err
}

// makeNamed gives the resources that need nothing made in moto their Ref
// and attributes: roles, log groups, the HTTP API's integrations, and a
// placeholder for the rest of the network.
func (d *Deployment) makeNamed(context.Context) error {
	for id, r := range d.t.Resources {
		switch r.Type {
		case "AWS::IAM::Role":
			name, err := d.nameProp(id, "RoleName", false)
			if err != nil {
				return err
			}
			d.vs.refs[id] = name
			d.vs.attrs[id+".Arn"] = "arn:aws:iam::" + d.account + ":role/" + name
		case "AWS::Logs::LogGroup":
			name, err := d.nameProp(id, "LogGroupName", false)
			if err != nil {
				return err
			}
			d.vs.refs[id] = name
			d.vs.attrs[id+".Arn"] = d.arn("logs", "log-group:"+name+":*")
		case "AWS::ApiGatewayV2::Api":
			d.vs.refs[id] = strings.ToLower(id[:min(10, len(id))])
			d.vs.attrs[id+".ApiEndpoint"] = "https://" + d.vs.refs[id] + ".execute-api." + d.region + ".amazonaws.com"
		case "AWS::ApiGatewayV2::Integration", "AWS::ApiGatewayV2::Route", "AWS::ApiGatewayV2::Stage",
			"AWS::EC2::RouteTable", "AWS::EC2::Route", "AWS::EC2::SubnetRouteTableAssociation", "AWS::EC2::InternetGateway",
			"AWS::EC2::VPCGatewayAttachment", "AWS::EC2::NatGateway", "AWS::EC2::EIP", "AWS::EC2::SecurityGroupIngress",
			"AWS::EC2::SecurityGroupEgress", "AWS::Lambda::Permission", "AWS::Lambda::EventInvokeConfig",
			"AWS::IAM::Policy", "AWS::S3::BucketPolicy", "AWS::SQS::QueuePolicy":
			// Not modelled: what names them is never a function's setting.
			d.vs.refs[id] = id
		}
	}
	return nil
}

// makeNetwork maps the template's VPC, subnets and security groups to
// moto's default VPC, its subnets and security groups made in it.
func (d *Deployment) makeNetwork(ctx context.Context) error {
	c := ec2.NewFromConfig(d.aws)
	vpcs, err := c.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("isDefault"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) == 0 {
		return fmt.Errorf("moto's default VPC: %v", err)
	}
	vpc := aws.ToString(vpcs.Vpcs[0].VpcId)
	subnets, err := c.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}})
	if err != nil || len(subnets.Subnets) == 0 {
		return fmt.Errorf("moto's default subnets: %v", err)
	}
	for _, id := range d.t.ofType("AWS::EC2::VPC") {
		d.vs.refs[id] = vpc
		d.vs.attrs[id+".VpcId"] = vpc
		d.vs.attrs[id+".CidrBlock"] = aws.ToString(vpcs.Vpcs[0].CidrBlock)
	}
	for i, id := range d.t.ofType("AWS::EC2::Subnet") {
		s := subnets.Subnets[i%len(subnets.Subnets)]
		d.vs.refs[id] = aws.ToString(s.SubnetId)
		d.vs.attrs[id+".SubnetId"] = aws.ToString(s.SubnetId)
	}
	for _, id := range d.t.ofType("AWS::EC2::SecurityGroup") {
		sg, err := c.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{GroupName: aws.String(physicalName(id, false)),
			Description: aws.String(id), VpcId: aws.String(vpc)})
		if err != nil {
			return fmt.Errorf("security group %s: %w", id, err)
		}
		d.vs.refs[id] = aws.ToString(sg.GroupId)
		d.vs.attrs[id+".GroupId"] = aws.ToString(sg.GroupId)
	}
	return nil
}

// makeTable creates each table with the template's key schema, indexes
// and time to live: the store must work with the table the stack makes.
func (d *Deployment) makeTable(ctx context.Context) error {
	c := dynamodb.NewFromConfig(d.aws)
	for _, id := range d.t.ofType("AWS::DynamoDB::Table") {
		p, err := d.vs.props(d.t, id)
		if err != nil {
			return err
		}
		name, err := d.nameProp(id, "TableName", false)
		if err != nil {
			return err
		}
		p["TableName"] = name
		in := map[string]any{}
		for _, k := range []string{"TableName", "KeySchema", "AttributeDefinitions", "GlobalSecondaryIndexes", "LocalSecondaryIndexes",
			"BillingMode", "ProvisionedThroughput", "StreamSpecification"} {
			if v, ok := p[k]; ok {
				in[k] = v
			}
		}
		var input dynamodb.CreateTableInput
		if err := remarshal(in, &input); err != nil {
			return fmt.Errorf("table %s: %w", id, err)
		}
		if _, err := c.CreateTable(ctx, &input); err != nil {
			return fmt.Errorf("create table %s: %w", id, err)
		}
		if ttl, ok := p["TimeToLiveSpecification"]; ok {
			var spec struct{ AttributeName string }
			remarshal(ttl, &spec)
			if spec.AttributeName != "" {
				var tin dynamodb.UpdateTimeToLiveInput
				remarshal(map[string]any{"TableName": name, "TimeToLiveSpecification": map[string]any{"AttributeName": spec.AttributeName, "Enabled": true}}, &tin)
				if _, err := c.UpdateTimeToLive(ctx, &tin); err != nil {
					return fmt.Errorf("table %s time to live: %w", id, err)
				}
			}
		}
		d.vs.refs[id] = name
		d.vs.attrs[id+".Arn"] = d.arn("dynamodb", "table/"+name)
		hash := func(ks []types.KeySchemaElement) string {
			for _, k := range ks {
				if k.KeyType == types.KeyTypeHash {
					return aws.ToString(k.AttributeName)
				}
			}
			return ""
		}
		d.hashKeys[d.arn("dynamodb", "table/"+name)] = hash(input.KeySchema)
		for _, g := range input.GlobalSecondaryIndexes {
			d.hashKeys[d.arn("dynamodb", "table/"+name+"/index/"+aws.ToString(g.IndexName))] = hash(g.KeySchema)
		}
		d.vs.attrs[id+".StreamArn"] = d.arn("dynamodb", "table/"+name+"/stream/1")
	}
	return nil
}

func (d *Deployment) makeBuckets(ctx context.Context) error {
	c := s3.NewFromConfig(d.aws, func(o *s3.Options) { o.UsePathStyle = true })
	for _, id := range d.t.ofType("AWS::S3::Bucket") {
		name, err := d.nameProp(id, "BucketName", true)
		if err != nil {
			return err
		}
		if _, err := c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(name)}); err != nil {
			return fmt.Errorf("create bucket %s: %w", id, err)
		}
		d.vs.refs[id] = name
		d.vs.attrs[id+".Arn"] = "arn:aws:s3:::" + name
		d.vs.attrs[id+".DomainName"] = name + ".s3.amazonaws.com"
		d.vs.attrs[id+".RegionalDomainName"] = name + ".s3." + d.region + ".amazonaws.com"
	}
	return nil
}

func (d *Deployment) makeSecrets(ctx context.Context) error {
	c := secretsmanager.NewFromConfig(d.aws)
	for _, id := range d.t.ofType("AWS::SecretsManager::Secret") {
		name, err := d.nameProp(id, "Name", false)
		if err != nil {
			return err
		}
		value, ok := d.opts.Secrets[id]
		if !ok {
			value, ok = d.opts.Secrets[name[strings.LastIndex(name, "/")+1:]]
		}
		if !ok {
			var gen struct {
				SecretStringTemplate string
				GenerateStringKey    string
			}
			if _, has := d.t.Resources[id].Properties["GenerateSecretString"]; has {
				d.vs.prop(d.t, id, "GenerateSecretString", &gen)
			}
			var b [16]byte
			rand.Read(b[:])
			value = fmt.Sprintf("%x", b)
			if gen.SecretStringTemplate != "" && gen.GenerateStringKey != "" {
				var m map[string]any
				json.Unmarshal([]byte(gen.SecretStringTemplate), &m)
				m[gen.GenerateStringKey] = value
				v, _ := json.Marshal(m)
				value = string(v)
			}
		}
		out, err := c.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
		if err != nil {
			return fmt.Errorf("create secret %s: %w", id, err)
		}
		d.vs.refs[id] = aws.ToString(out.ARN)
		d.vs.attrs[id+".Id"] = aws.ToString(out.ARN)
		d.secrets[name] = aws.ToString(out.ARN)
	}
	return nil
}

func (d *Deployment) makeQueues(ctx context.Context) error {
	c := sqs.NewFromConfig(d.aws)
	for _, id := range d.t.ofType("AWS::SQS::Queue") {
		name, err := d.nameProp(id, "QueueName", false)
		if err != nil {
			return err
		}
		out, err := c.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name)})
		if err != nil {
			return fmt.Errorf("create queue %s: %w", id, err)
		}
		arn := d.arn("sqs", name)
		d.vs.refs[id] = aws.ToString(out.QueueUrl)
		d.vs.attrs[id+".Arn"] = arn
		d.vs.attrs[id+".QueueName"] = name
		d.vs.attrs[id+".QueueUrl"] = aws.ToString(out.QueueUrl)
		d.queues[aws.ToString(out.QueueUrl)] = arn
	}
	return nil
}

func (d *Deployment) makeScheduleGroups(ctx context.Context) error {
	c := scheduler.NewFromConfig(d.aws)
	for _, id := range d.t.ofType("AWS::Scheduler::ScheduleGroup") {
		name, err := d.nameProp(id, "Name", false)
		if err != nil {
			return err
		}
		if _, err := c.CreateScheduleGroup(ctx, &scheduler.CreateScheduleGroupInput{Name: aws.String(name)}); err != nil {
			return fmt.Errorf("create schedule group %s: %w", id, err)
		}
		d.vs.refs[id] = name
		d.vs.attrs[id+".Arn"] = d.arn("scheduler", "schedule-group/"+name)
	}
	return nil
}

func (d *Deployment) makeCluster(ctx context.Context) error {
	c := ecs.NewFromConfig(d.aws)
	for _, id := range d.t.ofType("AWS::ECS::Cluster") {
		name, err := d.nameProp(id, "ClusterName", false)
		if err != nil {
			return err
		}
		if _, err := c.CreateCluster(ctx, &ecs.CreateClusterInput{ClusterName: aws.String(name)}); err != nil {
			return fmt.Errorf("create cluster %s: %w", id, err)
		}
		d.vs.refs[id] = name
		d.vs.attrs[id+".Arn"] = d.arn("ecs", "cluster/"+name)
	}
	return nil
}

// makeFunctions names the functions (their Refs and ARNs) and reads what
// each is given: its bootstrap (the asset beside the template), its
// environment, memory, timeout and role. Their endpoints start here;
// their containers on their first invocation.
func (d *Deployment) makeFunctions(ctx context.Context) error {
	ids := d.t.ofType("AWS::Lambda::Function")
	for _, id := range ids {
		name, err := d.nameProp(id, "FunctionName", false)
		if err != nil {
			return err
		}
		d.vs.refs[id] = name
		d.vs.attrs[id+".Arn"] = d.arn("lambda", "function:"+name)
	}
	for _, id := range ids {
		asset, err := d.functionAsset(id)
		if err != nil {
			return err
		}
		f := &function{d: d, id: id, name: d.vs.refs[id], arn: d.vs.attrs[id+".Arn"], work: make(chan *invocation),
			containers: map[*container]bool{}, limit: d.opts.Concurrency, timeout: 3 * time.Second, memoryMiB: 128,
			bootstrap: filepath.Join(filepath.Dir(d.opts.Template), asset, "bootstrap")}
		if _, err := os.Stat(f.bootstrap); err != nil {
			return fmt.Errorf("function %s: its bootstrap: %w", id, err)
		}
		var props struct {
			Timeout, MemorySize, ReservedConcurrentExecutions int
			Role                                              string
			Environment                                       struct{ Variables map[string]string }
		}
		p, err := d.vs.props(d.t, id)
		if err != nil {
			return err
		}
		if err := remarshal(p, &props); err != nil {
			return fmt.Errorf("function %s: %w", id, err)
		}
		if props.Timeout > 0 {
			f.timeout = time.Duration(props.Timeout) * time.Second
		}
		if props.MemorySize > 0 {
			f.memoryMiB = props.MemorySize
		}
		if props.ReservedConcurrentExecutions > 0 {
			f.limit = min(props.ReservedConcurrentExecutions, d.opts.Concurrency)
		}
		f.role = d.roleID(props.Role)
		if f.aws, err = d.newEndpoint(f.Short()); err != nil {
			return err
		}
		f.env = d.lambdaEnv(f, props.Environment.Variables)
		d.functions[id] = f
		d.byName[f.name] = f
	}
	if len(d.functions) == 0 {
		return fmt.Errorf("the template has no functions")
	}
	return nil
}

// functionAsset is the folder beside the template that holds function
// id's code: the file asset its Code.S3Key names (HASH.zip), found in the
// assets manifest.
func (d *Deployment) functionAsset(id string) (string, error) {
	var code struct{ S3Key string }
	if err := json.Unmarshal(d.t.Resources[id].Properties["Code"], &code); err != nil || !strings.HasSuffix(code.S3Key, ".zip") {
		return "", fmt.Errorf("function %s: its Code is not a file asset (S3Key HASH.zip): %s", id, d.t.Resources[id].Properties["Code"])
	}
	hash := strings.TrimSuffix(code.S3Key, ".zip")
	var manifest struct {
		Files map[string]struct {
			Source struct{ Path, Packaging string }
		}
	}
	b, err := os.ReadFile(filepath.Join(filepath.Dir(d.opts.Template), "Agentsfleet.assets.json"))
	if err != nil {
		return "", fmt.Errorf("the assets manifest: %w", err)
	}
	if err := json.Unmarshal(b, &manifest); err != nil {
		return "", fmt.Errorf("the assets manifest: %w", err)
	}
	f, ok := manifest.Files[hash]
	if !ok || f.Source.Path == "" {
		return "", fmt.Errorf("function %s: no asset %s in the assets manifest", id, hash)
	}
	return f.Source.Path, nil
}

// roleID is the logical id of the role whose ARN is arn.
func (d *Deployment) roleID(arn string) string {
	for k, v := range d.vs.attrs {
		if v == arn && strings.HasSuffix(k, ".Arn") {
			return strings.TrimSuffix(k, ".Arn")
		}
	}
	return ""
}

// Short is the function's name in agentsfleet (api, runner, …): its
// FunctionName after the stack's prefix.
func (f *function) Short() string { return f.name[strings.LastIndex(f.name, "-")+1:] }

// lambdaEnv is what Lambda gives a process: the template's variables,
// Lambda's own, credentials of the function's own, and its endpoint.
func (d *Deployment) lambdaEnv(f *function, vars map[string]string) []string {
	env := map[string]string{
		"AWS_LAMBDA_FUNCTION_NAME":        f.name,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": fmt.Sprint(f.memoryMiB),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "/aws/lambda/" + f.name,
		"AWS_LAMBDA_LOG_STREAM_NAME":      "harness",
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_REGION":                      d.region,
		"AWS_DEFAULT_REGION":              d.region,
		"AWS_EXECUTION_ENV":               "AWS_Lambda_provided.al2023",
		"AWS_ACCESS_KEY_ID":               "ASIA" + strings.ToUpper(f.Short()),
		"AWS_SECRET_ACCESS_KEY":           "harness-" + f.Short(),
		"AWS_SESSION_TOKEN":               "harness-session-" + f.Short(),
		"AWS_ENDPOINT_URL":                f.aws.url,
		"AWS_EC2_METADATA_DISABLED":       "true",
		"AWS_CONFIG_FILE":                 filepath.Join(d.dir, "no-aws-config"),
		"AWS_SHARED_CREDENTIALS_FILE":     filepath.Join(d.dir, "no-aws-credentials"),
		"LAMBDA_TASK_ROOT":                filepath.Dir(f.bootstrap),
		"LAMBDA_RUNTIME_DIR":              filepath.Dir(f.bootstrap),
		"_HANDLER":                        "bootstrap",
		"TZ":                              ":UTC",
		"LANG":                            "en_US.UTF-8",
		"PATH":                            "/usr/local/bin:/usr/bin/:/bin:/opt/bin",
	}
	for k, v := range vars {
		env[k] = v
	}
	for k, v := range d.opts.Env[f.Short()] {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

// Environment is the template's environment of the function short, as the
// harness resolved it (without Lambda's own variables).
func (d *Deployment) Environment(short string) (map[string]string, error) {
	f := d.function(short)
	if f == nil {
		return nil, fmt.Errorf("no function %s", short)
	}
	var props struct {
		Environment struct{ Variables map[string]string }
	}
	p, err := d.vs.props(d.t, f.id)
	if err != nil {
		return nil, err
	}
	remarshal(p, &props)
	return props.Environment.Variables, nil
}

// makeTaskDefinitions registers each sandbox task definition in moto as
// the template has it, and reads how its image runs sandboxd: the
// ENTRYPOINT, CMD and ENV of the stage of the Dockerfile its image asset
// builds (the asset beside the template that the container's image names).
func (d *Deployment) makeTaskDefinitions(ctx context.Context) error {
	ids := d.t.ofType("AWS::ECS::TaskDefinition")
	if len(ids) == 0 {
		return fmt.Errorf("the template has no task definition: want the sandbox's")
	}
	images, err := d.imageAssets()
	if err != nil {
		return err
	}
	for _, id := range ids {
		if err := d.makeTaskDefinition(ctx, id, images); err != nil {
			return err
		}
	}
	return nil
}

// imageAsset is a docker image asset of the assets manifest: the folder
// beside the template holding its build context, its Dockerfile there, and
// the stage it builds ("" for the last).
type imageAsset struct {
	dir, dockerfile, target string
}

// imageAssets are the docker image assets of the manifests beside the
// template, by their hash (the tag the template's image URIs name).
func (d *Deployment) imageAssets() (map[string]imageAsset, error) {
	dir := filepath.Dir(d.opts.Template)
	manifests, _ := filepath.Glob(filepath.Join(dir, "*.assets.json"))
	out := map[string]imageAsset{}
	for _, m := range manifests {
		b, err := os.ReadFile(m)
		if err != nil {
			return nil, err
		}
		var a struct {
			DockerImages map[string]struct {
				Source struct{ Directory, DockerFile, DockerBuildTarget string }
			}
		}
		if err := json.Unmarshal(b, &a); err != nil {
			return nil, fmt.Errorf("%s: %w", m, err)
		}
		for hash, img := range a.DockerImages {
			f := img.Source.DockerFile
			if f == "" {
				f = "Dockerfile"
			}
			out[hash] = imageAsset{dir: filepath.Join(dir, img.Source.Directory), dockerfile: f, target: img.Source.DockerBuildTarget}
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("no docker image asset beside %s", d.opts.Template)
	}
	return out, nil
}

// makeTaskDefinition registers task definition id and reads its sandboxd
// container; images are the assets its image may come from.
func (d *Deployment) makeTaskDefinition(ctx context.Context, id string, images map[string]imageAsset) error {
	p, err := d.vs.props(d.t, id)
	if err != nil {
		return err
	}
	in := map[string]any{}
	for _, k := range []string{"Family", "ContainerDefinitions", "Cpu", "Memory", "NetworkMode", "RequiresCompatibilities",
		"ExecutionRoleArn", "TaskRoleArn", "RuntimePlatform", "EphemeralStorage"} {
		if v, ok := p[k]; ok {
			in[k] = v
		}
	}
	var input ecs.RegisterTaskDefinitionInput
	if err := remarshal(in, &input); err != nil {
		return fmt.Errorf("task definition %s: %w", id, err)
	}
	if len(input.ContainerDefinitions) != 1 {
		return fmt.Errorf("task definition %s has %d containers, want sandboxd's alone", id, len(input.ContainerDefinitions))
	}
	// moto's RunTask fails (500) on a container without memory of its
	// own, which Fargate does not need: give it the task's, in moto only.
	var taskMemory int32
	fmt.Sscan(aws.ToString(input.Memory), &taskMemory)
	for i := range input.ContainerDefinitions {
		if input.ContainerDefinitions[i].Memory == nil && taskMemory > 0 {
			input.ContainerDefinitions[i].Memory = aws.Int32(taskMemory)
		}
	}
	cd := input.ContainerDefinitions[0]
	// The image URI is the assets' repository, tagged with the asset's hash.
	image := aws.ToString(cd.Image)
	asset, ok := images[image[strings.LastIndex(image, ":")+1:]]
	if !ok {
		return fmt.Errorf("task definition %s: its image %s is none of the docker image assets beside the template", id, image)
	}
	b, err := os.ReadFile(filepath.Join(asset.dir, asset.dockerfile))
	if err != nil {
		return fmt.Errorf("task definition %s: its image's Dockerfile: %w", id, err)
	}
	img, err := stageConfig(string(b), asset.target)
	if err != nil {
		return fmt.Errorf("task definition %s: its image's Dockerfile %s: %w", id, asset.dockerfile, err)
	}
	out, err := ecs.NewFromConfig(d.aws).RegisterTaskDefinition(ctx, &input)
	if err != nil {
		return fmt.Errorf("register task definition %s: %w", id, err)
	}
	arn := aws.ToString(out.TaskDefinition.TaskDefinitionArn)
	d.vs.refs[id] = arn
	sb := &sandboxContainer{id: id, name: aws.ToString(cd.Name), taskDef: arn, family: aws.ToString(out.TaskDefinition.Family)}
	for _, r := range []string{aws.ToString(input.ExecutionRoleArn), aws.ToString(input.TaskRoleArn)} {
		if r != "" {
			sb.roles = append(sb.roles, r)
		}
	}
	// The image's ENV first: the task definition's environment wins.
	for _, e := range img.env {
		if !strings.HasPrefix(e, "HOME=") { // the harness gives each task a HOME of its own
			sb.env = append(sb.env, e)
		}
	}
	for _, e := range cd.Environment {
		sb.env = append(sb.env, aws.ToString(e.Name)+"="+aws.ToString(e.Value))
	}
	cmd := img.cmd
	if len(cd.Command) > 0 {
		cmd = cd.Command
	}
	entry := img.entrypoint
	if len(cd.EntryPoint) > 0 {
		entry = cd.EntryPoint
	}
	if len(entry) == 0 || filepath.Base(entry[len(entry)-1]) != "sandboxd" || len(cmd) == 0 {
		return fmt.Errorf("task definition %s: its image's ENTRYPOINT %q and CMD %q do not run sandboxd", id, entry, cmd)
	}
	sb.command = cmd
	d.sandboxes[arn] = sb
	return nil
}

// sandboxOf is the sandbox task definition td names (its ARN, family:revision
// or family), or nil.
func (d *Deployment) sandboxOf(td string) *sandboxContainer {
	for arn, sb := range d.sandboxes {
		if td == arn || td == sb.family || strings.HasSuffix(arn, "/"+td) {
			return sb
		}
	}
	return nil
}

// makeSchedules creates the template's own schedules (the sweeper's) in
// moto, as Scheduler would hold them; Fire fires one.
func (d *Deployment) makeSchedules(ctx context.Context) error {
	c := scheduler.NewFromConfig(d.aws)
	for _, id := range d.t.ofType("AWS::Scheduler::Schedule") {
		p, err := d.vs.props(d.t, id)
		if err != nil {
			return err
		}
		name, err := d.nameProp(id, "Name", false)
		if err != nil {
			return err
		}
		p["Name"] = name
		var in scheduler.CreateScheduleInput
		if err := remarshal(p, &in); err != nil {
			return fmt.Errorf("schedule %s: %w", id, err)
		}
		if _, err := c.CreateSchedule(ctx, &in); err != nil {
			return fmt.Errorf("create schedule %s: %w", id, err)
		}
		group := aws.ToString(in.GroupName)
		if group == "" {
			group = "default"
		}
		d.own[id] = [2]string{group, name}
		d.vs.refs[id] = name
		d.vs.attrs[id+".Arn"] = d.arn("scheduler", "schedule/"+group+"/"+name)
	}
	return nil
}

// readPolicies gathers each role's statements: its inline policies and
// the AWS::IAM::Policy resources attached to it.
func (d *Deployment) readPolicies(context.Context) error {
	type doc struct{ Statement []statement }
	for _, id := range d.t.ofType("AWS::IAM::Policy") {
		var p struct {
			PolicyDocument doc
			Roles          []string
		}
		var doc0 any
		if err := d.vs.prop(d.t, id, "PolicyDocument", &doc0); err != nil {
			return err
		}
		remarshal(doc0, &p.PolicyDocument)
		d.vs.prop(d.t, id, "Roles", &p.Roles)
		for _, role := range p.Roles {
			for rid, ref := range d.vs.refs {
				if ref == role && d.t.Resources[rid].Type == "AWS::IAM::Role" {
					d.policies[rid] = append(d.policies[rid], p.PolicyDocument.Statement...)
				}
			}
		}
	}
	for _, id := range d.t.ofType("AWS::IAM::Role") {
		if _, ok := d.t.Resources[id].Properties["Policies"]; !ok {
			continue
		}
		var ps []struct{ PolicyDocument doc }
		if err := d.vs.prop(d.t, id, "Policies", &ps); err != nil {
			return err
		}
		for _, p := range ps {
			d.policies[id] = append(d.policies[id], p.PolicyDocument.Statement...)
		}
	}
	return nil
}

// readEventConfigs reads each function's asynchronous invocation config:
// Lambda's defaults (two retries, no destination) where it has none.
func (d *Deployment) readEventConfigs(context.Context) error {
	for _, f := range d.functions {
		f.retries = 2
	}
	for _, id := range d.t.ofType("AWS::Lambda::EventInvokeConfig") {
		var c struct {
			FunctionName         string
			MaximumRetryAttempts *int
			DestinationConfig    struct {
				OnFailure struct{ Destination string }
			}
		}
		p, err := d.vs.props(d.t, id)
		if err != nil {
			return err
		}
		remarshal(p, &c)
		f := d.byName[c.FunctionName]
		if f == nil {
			return fmt.Errorf("event invoke config %s names function %q, which the template lacks", id, c.FunctionName)
		}
		if c.MaximumRetryAttempts != nil {
			f.retries = *c.MaximumRetryAttempts
		}
		f.onFailure = c.DestinationConfig.OnFailure.Destination
	}
	return nil
}

// makeGateway reads the HTTP API's routes and their Lambda integrations.
func (d *Deployment) makeGateway(context.Context) error {
	apis := d.t.ofType("AWS::ApiGatewayV2::Api")
	if len(apis) != 1 {
		return fmt.Errorf("the template has %d HTTP APIs, want one", len(apis))
	}
	g := &gateway{d: d, apiID: d.vs.refs[apis[0]]}
	for _, id := range d.t.ofType("AWS::ApiGatewayV2::Route") {
		var rt struct{ RouteKey, Target string }
		p, err := d.vs.props(d.t, id)
		if err != nil {
			return err
		}
		remarshal(p, &rt)
		integration := strings.TrimPrefix(rt.Target, "integrations/")
		var in struct {
			IntegrationType, IntegrationUri, PayloadFormatVersion string
		}
		ip, err := d.vs.props(d.t, integration)
		if err != nil {
			return fmt.Errorf("route %s: its integration: %w", rt.RouteKey, err)
		}
		remarshal(ip, &in)
		if in.IntegrationType != "AWS_PROXY" || in.PayloadFormatVersion != "2.0" {
			return fmt.Errorf("route %s: integration %s %s, want AWS_PROXY with payload format 2.0", rt.RouteKey, in.IntegrationType, in.PayloadFormatVersion)
		}
		var fn *function
		for _, f := range d.functions {
			if f.arn == in.IntegrationUri {
				fn = f
			}
		}
		if fn == nil {
			return fmt.Errorf("route %s integrates %q, which is not one of the functions", rt.RouteKey, in.IntegrationUri)
		}
		r := route{key: rt.RouteKey, fn: fn}
		if rt.RouteKey != "$default" {
			method, p, ok := strings.Cut(rt.RouteKey, " ")
			if !ok {
				return fmt.Errorf("route key %q is not METHOD /path", rt.RouteKey)
			}
			r.method, r.segments = method, strings.Split(strings.Trim(p, "/"), "/")
		} else {
			r.method = "ANY"
		}
		g.routes = append(g.routes, r)
	}
	if len(g.routes) == 0 {
		return fmt.Errorf("the HTTP API has no routes")
	}
	d.gateway = g
	return g.start()
}

func remarshal(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

func randRead(b []byte) (int, error) { return rand.Read(b) }

func (d *Deployment) logf(format string, a ...any) {
	if d.opts.Log == nil {
		return
	}
	d.logMu.Lock()
	fmt.Fprintf(d.opts.Log, "harness| "+format+"\n", a...)
	d.logMu.Unlock()
}

// Close stops every container, sandbox and listener.
func (d *Deployment) Close() {
	d.closeOnce.Do(func() {
		close(d.closed)
		for _, f := range d.functions {
			f.Kill("the deployment closed", true)
			f.aws.srv.Close()
		}
		d.tasks.close()
		if d.gateway != nil && d.gateway.srv != nil {
			d.gateway.srv.Close()
		}
		d.wg.Wait()
		if d.opts.Dir == "" {
			os.RemoveAll(d.dir)
		}
	})
}
