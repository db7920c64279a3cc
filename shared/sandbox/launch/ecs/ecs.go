package ecs

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/agentsfleet/agentsfleet/sandboximage"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/token"
)

const (
	// DefaultContainer is Config.Container when empty.
	DefaultContainer = "sandbox"
	// DefaultStartTimeout is Config.StartTimeout when zero: a Fargate cold
	// start takes 30 to 60 seconds, more when the image is pulled anew.
	DefaultStartTimeout = 3 * time.Minute
	// DefaultPollInterval is Config.PollInterval when zero.
	DefaultPollInterval = 2 * time.Second
	// StartedBy is the startedBy of every task the Launcher starts.
	StartedBy = "agentsfleet"
	// TagRunID is the tag of a run's task: the run's id.
	TagRunID = "agentsfleet:run-id"
	// TagWarm is the tag of a warm task (value "true"), started for a pool.
	TagWarm = "agentsfleet:warm"
	// TokenEnv is the container's variable that gives sandboxd its token.
	TokenEnv = "SANDBOXD_TOKEN"
	// ReasonRunEnded is the StopTask reason of Release and Stop.
	ReasonRunEnded = "agentsfleet: run ended"
	// ReasonUnhealthy is the StopTask reason of a task that started but
	// never became healthy.
	ReasonUnhealthy = "agentsfleet: the sandbox did not become healthy"
)

// ECS is what the Launcher needs of the Amazon ECS API (*ecs.Client).
type ECS interface {
	RunTask(ctx context.Context, in *awsecs.RunTaskInput, opts ...func(*awsecs.Options)) (*awsecs.RunTaskOutput, error)
	DescribeTasks(ctx context.Context, in *awsecs.DescribeTasksInput, opts ...func(*awsecs.Options)) (*awsecs.DescribeTasksOutput, error)
	StopTask(ctx context.Context, in *awsecs.StopTaskInput, opts ...func(*awsecs.Options)) (*awsecs.StopTaskOutput, error)
}

// EC2 is what the Launcher needs of the Amazon EC2 API (*ec2.Client): the
// public IP of a task's network interface.
type EC2 interface {
	DescribeNetworkInterfaces(ctx context.Context, in *ec2.DescribeNetworkInterfacesInput, opts ...func(*ec2.Options)) (*ec2.DescribeNetworkInterfacesOutput, error)
}

var (
	_ ECS = (*awsecs.Client)(nil)
	_ EC2 = (*ec2.Client)(nil)
)

// Config configures a Launcher.
type Config struct {
	// ECS is the ECS API. Required.
	ECS ECS
	// EC2 is the EC2 API, required with the public layout (Private false).
	EC2 EC2
	// Cluster is the ECS cluster's name or ARN. Required.
	Cluster string
	// TaskDefinition is the sandbox image's task definition: family,
	// family:revision or ARN. Required.
	TaskDefinition string
	// BrowserTaskDefinition is the browser image's task definition
	// (sandboximage.BrowserTarget), used for the sandboxes of runs whose
	// Definition allows a display tool (launch.Spec.Browser). Empty means
	// the deployment has no sandboxes with a browser (Browser is false).
	BrowserTaskDefinition string
	// Subnets and SecurityGroups place the tasks (awsvpc). Required. The
	// security groups should open Port alone, to the runner.
	Subnets, SecurityGroups []string
	// Private selects the private layout of DESIGN §2: no public IP, the
	// runner reaches the task's private IP from inside the VPC. False is
	// the public layout: a public IP, reached from outside any VPC.
	Private bool
	// Container is the sandboxd container's name in the task definition.
	// Empty means DefaultContainer.
	Container string
	// Port is sandboxd's port. Zero means sandboximage.Port.
	Port int
	// Key returns the key the tasks' tokens are derived from (package
	// shared/sandbox/token), with a nonce of each task's: the key of every
	// runner of the deployment, read from where only the runner may read
	// it (FromEnv: a Secrets Manager secret, on first use). Nil means a
	// random key of this Launcher alone: another process cannot connect
	// to its tasks.
	Key func(ctx context.Context) (token.Key, error)
	// StartTimeout bounds starting one task, from RunTask until sandboxd
	// answers its health check. Zero means DefaultStartTimeout.
	StartTimeout time.Duration
	// PollInterval is the wait between two DescribeTasks or two health
	// checks while a task starts. Zero means DefaultPollInterval.
	PollInterval time.Duration
	// Resolve, when not nil, maps a RUNNING task and the address found for
	// it (public or private IP, per the layout) to sandboxd's URL, instead
	// of https://addr:Port: tests map a task to a sandboxd on loopback.
	Resolve func(ctx context.Context, task types.Task, addr string) (string, error)
}

// Launcher runs a Fargate task for each run, and generic warm tasks for a
// pool. It implements launch.Launcher and launch.Starter and is safe for
// concurrent use: runs start and stop their tasks independently, and calls
// for one run are taken one at a time.
type Launcher struct {
	cfg  Config
	runs launch.Slots[started] // each run's task
}

// started is a task whose sandboxd answered.
type started struct {
	arn, url, nonce string
	sb              *launch.Sandbox
}

var (
	_ launch.Launcher = (*Launcher)(nil)
	_ launch.Starter  = (*Launcher)(nil)
	_ launch.Browsers = (*Launcher)(nil)
)

// New returns a Launcher for cfg, checking that the required settings are
// there (the error names the first one missing).
func New(cfg Config) (*Launcher, error) {
	switch {
	case cfg.ECS == nil:
		return nil, errors.New("ecs: Config.ECS is required")
	case cfg.EC2 == nil && !cfg.Private:
		return nil, errors.New("ecs: Config.EC2 is required with the public layout: it finds a task's public IP")
	case cfg.Cluster == "":
		return nil, errors.New("ecs: Config.Cluster is required")
	case cfg.TaskDefinition == "":
		return nil, errors.New("ecs: Config.TaskDefinition is required")
	case len(cfg.Subnets) == 0:
		return nil, errors.New("ecs: Config.Subnets is required")
	case len(cfg.SecurityGroups) == 0:
		return nil, errors.New("ecs: Config.SecurityGroups is required")
	case cfg.Port < 0 || cfg.Port > 65535:
		return nil, fmt.Errorf("ecs: Config.Port %d is not a port", cfg.Port)
	case cfg.StartTimeout < 0 || cfg.PollInterval < 0:
		return nil, errors.New("ecs: Config.StartTimeout and PollInterval cannot be negative")
	}
	if cfg.Container == "" {
		cfg.Container = DefaultContainer
	}
	if cfg.Port == 0 {
		cfg.Port = sandboximage.Port
	}
	if cfg.Key == nil {
		k, err := token.RandomKey()
		if err != nil {
			return nil, fmt.Errorf("ecs: %w", err)
		}
		cfg.Key = func(context.Context) (token.Key, error) { return k, nil }
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = DefaultStartTimeout
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	return &Launcher{cfg: cfg}, nil
}

// Browser says the Launcher can start sandboxes with a browser: it has a
// BrowserTaskDefinition.
func (l *Launcher) Browser() bool { return l.cfg.BrowserTaskDefinition != "" }

// Acquire returns the run's sandbox, starting a task when the run has none:
// the same task comes back while it answers its health check; one that
// does not is stopped and replaced (its exec_command sessions are gone with
// it). The sandbox's ID is the task's ARN, its client's call timeout
// client.CallTimeoutFor(spec.ToolTimeout). The task's CPU and memory are
// spec.Size's (task overrides), the task definition's when it is empty.
// spec.Browser starts it from BrowserTaskDefinition, with
// sandboximage.BrowserMemoryMiB more memory than the size's; without one
// the error wraps launch.ErrNoBrowser too. An error wraps launch.ErrStart and
// names the task and the reason when a task was started; it wraps ctx's
// error too when ctx ended first.
func (l *Launcher) Acquire(ctx context.Context, spec launch.Spec) (*launch.Sandbox, error) {
	if spec.RunID == "" {
		return nil, fmt.Errorf("%w: the run has no id", launch.ErrStart)
	}
	var sb *launch.Sandbox
	var err error
	l.runs.Hold(spec.RunID, func(cur *started) *started {
		cur, sb, err = l.acquire(ctx, cur, spec)
		return cur
	})
	return sb, err
}

func (l *Launcher) acquire(ctx context.Context, t *started, spec launch.Spec) (*started, *launch.Sandbox, error) {
	if t != nil {
		err := t.sb.Client.Health(ctx)
		if err == nil {
			return t, t.sb, nil
		}
		if ctx.Err() != nil {
			return t, nil, fmt.Errorf("%w: run %s: %w", launch.ErrStart, spec.RunID, ctx.Err())
		}
		stopCtx, cancel := cleanup(ctx)
		_ = l.stop(stopCtx, t.arn, ReasonUnhealthy) // best effort: it no longer answers
		cancel()
	}
	t, err := l.start(ctx, types.Tag{Key: aws.String(TagRunID), Value: aws.String(spec.RunID)}, launch.KindOf(spec), client.CallTimeoutFor(spec.ToolTimeout))
	if err != nil {
		return nil, nil, fmt.Errorf("run %s: %w", spec.RunID, err)
	}
	return t, t.sb, nil
}

// Release stops the run's task (StopTask, reason ReasonRunEnded) and
// forgets it. Releasing a run without a task, or whose task is already
// gone, is not an error; a StopTask that fails is, naming the task.
func (l *Launcher) Release(ctx context.Context, runID string) error {
	var err error
	l.runs.Take(runID, func(t *started) { err = l.stop(ctx, t.arn, ReasonRunEnded) })
	return err
}

// TaskARN returns the ARN of the run's task, or "" when it has none.
func (l *Launcher) TaskARN(runID string) string {
	arn := ""
	l.runs.Peek(runID, func(t *started) {
		if t != nil {
			arn = t.arn
		}
	})
	return arn
}

// Start starts a generic warm task (tag TagWarm) of kind and returns once
// its sandboxd is healthy, with the size's CPU and memory, from the
// browser task definition when kind.Browser; its errors are Acquire's.
func (l *Launcher) Start(ctx context.Context, kind launch.Kind) (launch.Warm, error) {
	t, err := l.start(ctx, types.Tag{Key: aws.String(TagWarm), Value: aws.String("true")}, kind, 0)
	if err != nil {
		return launch.Warm{}, err
	}
	return launch.Warm{ID: t.arn, Size: kind.Size, Browser: kind.Browser, URL: t.url, Nonce: t.nonce, Started: time.Now()}, nil
}

// Connect returns a pinned client for w, with the token derived from
// w.Nonce, after checking its health; an error (client.ErrUnavailable,
// which pin.ErrWrongKey may come with; token.ErrNoNonce for a record
// without a nonce) means w is dead, not the sandbox it claims to be, or
// not one whose token this Launcher's key makes, and should be discarded.
func (l *Launcher) Connect(ctx context.Context, w launch.Warm) (*launch.Sandbox, error) {
	tok, err := l.token(ctx, w.Nonce)
	if err != nil {
		return nil, fmt.Errorf("ecs: warm task %s: %w", w.ID, err)
	}
	c, err := client.Pinned(client.Config{URL: w.URL, Token: tok})
	if err != nil {
		return nil, fmt.Errorf("ecs: warm task %s: %w", w.ID, err)
	}
	if err := c.Health(ctx); err != nil {
		return nil, fmt.Errorf("ecs: warm task %s: %w", w.ID, err)
	}
	return &launch.Sandbox{ID: w.ID, Client: c}, nil
}

// Stop stops w's task (reason ReasonRunEnded); one already gone is not an
// error.
func (l *Launcher) Stop(ctx context.Context, w launch.Warm) error {
	return l.stop(ctx, w.ID, ReasonRunEnded)
}

// start runs a task of kind tagged tag and waits until its sandboxd
// answers. A task that was started but failed to become healthy is stopped.
func (l *Launcher) start(ctx context.Context, tag types.Tag, kind launch.Kind, callTimeout time.Duration) (*started, error) {
	taskDef := l.cfg.TaskDefinition
	if kind.Browser {
		if taskDef = l.cfg.BrowserTaskDefinition; taskDef == "" {
			return nil, fmt.Errorf("%w: %w: no browser task definition (%s)", launch.ErrStart, launch.ErrNoBrowser, EnvBrowserTaskDefinition)
		}
	}
	overrides := &types.TaskOverride{}
	switch size := kind.Size; {
	case size == "":
	case size.Valid():
		// Fargate takes the task's size from the overrides, within the
		// task definition's limits; each sandbox size is a valid pair,
		// and so is it with a browser's memory added.
		mem := size.MemoryMiB()
		if kind.Browser {
			mem += sandboximage.BrowserMemoryMiB
		}
		overrides.Cpu = aws.String(strconv.Itoa(size.CPU()))
		overrides.Memory = aws.String(strconv.Itoa(mem))
	default:
		return nil, fmt.Errorf("%w: %q is not a sandbox size", launch.ErrStart, size)
	}
	nonce, err := token.NewNonce()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", launch.ErrStart, err)
	}
	tok, err := l.token(ctx, nonce)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", launch.ErrStart, err)
	}
	assign := types.AssignPublicIpEnabled
	if l.cfg.Private {
		assign = types.AssignPublicIpDisabled
	}
	overrides.ContainerOverrides = []types.ContainerOverride{{
		Name:        aws.String(l.cfg.Container),
		Environment: []types.KeyValuePair{{Name: aws.String(TokenEnv), Value: aws.String(tok)}},
	}}
	out, err := l.cfg.ECS.RunTask(ctx, &awsecs.RunTaskInput{
		Cluster:        aws.String(l.cfg.Cluster),
		TaskDefinition: aws.String(taskDef),
		LaunchType:     types.LaunchTypeFargate,
		Count:          aws.Int32(1),
		StartedBy:      aws.String(StartedBy),
		Tags:           []types.Tag{tag},
		NetworkConfiguration: &types.NetworkConfiguration{AwsvpcConfiguration: &types.AwsVpcConfiguration{
			Subnets:        l.cfg.Subnets,
			SecurityGroups: l.cfg.SecurityGroups,
			AssignPublicIp: assign,
		}},
		// The token goes in the container's environment, where sandboxd
		// reads it (and erases it from its own). Whoever may call
		// ecs:DescribeTasks reads it there, in the task's overrides: the
		// stack grants that to the runner alone (see the package comment).
		Overrides: overrides,
	})
	if err != nil {
		return nil, fmt.Errorf("%w: ecs RunTask: %w", launch.ErrStart, err)
	}
	if len(out.Failures) > 0 || len(out.Tasks) == 0 {
		var why []string
		for _, f := range out.Failures {
			s := aws.ToString(f.Reason)
			if d := aws.ToString(f.Detail); d != "" {
				s += " (" + d + ")"
			}
			if a := aws.ToString(f.Arn); a != "" {
				s = a + ": " + s
			}
			why = append(why, s)
		}
		if len(why) == 0 {
			why = append(why, "no task and no failure in the answer")
		}
		// A task RunTask started anyway would bill: stop it.
		stopCtx, cancel := cleanup(ctx)
		defer cancel()
		for _, t := range out.Tasks {
			_ = l.stop(stopCtx, aws.ToString(t.TaskArn), ReasonUnhealthy)
		}
		return nil, fmt.Errorf("%w: ecs RunTask failed: %s", launch.ErrStart, strings.Join(why, "; "))
	}
	arn := aws.ToString(out.Tasks[0].TaskArn)
	t, err := l.await(ctx, arn, nonce, tok, callTimeout)
	if err != nil {
		// Stop it whatever went wrong, ctx's end included, so that
		// nothing is left billing.
		stopCtx, cancel := cleanup(ctx)
		defer cancel()
		if serr := l.stop(stopCtx, arn, ReasonUnhealthy); serr != nil {
			return nil, fmt.Errorf("%w: task %s: %w (and stopping it failed: %v)", launch.ErrStart, arn, err, serr)
		}
		return nil, fmt.Errorf("%w: task %s: %w", launch.ErrStart, arn, err)
	}
	return t, nil
}

// token is the token of the task whose nonce is nonce.
func (l *Launcher) token(ctx context.Context, nonce string) (string, error) {
	k, err := l.cfg.Key(ctx)
	if err != nil {
		return "", fmt.Errorf("the sandbox token key: %w", err)
	}
	return k.Token(nonce)
}

// cleanup is the context of a StopTask that must happen even when ctx
// ended (that may be why the task is stopped), bounded all the same.
func cleanup(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), 30*time.Second)
}

// errTimeout is the cause of the start timeout.
var errTimeout = errors.New("the start timeout passed")

// await polls the task until it is RUNNING, then its sandboxd until it is
// healthy, watching that the task has not stopped.
func (l *Launcher) await(ctx context.Context, arn, nonce, token string, callTimeout time.Duration) (*started, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, l.cfg.StartTimeout, errTimeout)
	defer cancel()
	var (
		c      *client.Client
		url    string
		status = "PROVISIONING"
		last   error // the last failed health check
	)
	for {
		task, err := l.describe(ctx, arn)
		if err != nil {
			return nil, l.ended(ctx, status, last, err)
		}
		status = aws.ToString(task.LastStatus)
		if why := stopped(task); why != "" {
			return nil, errors.New(why)
		}
		if c == nil && status == "RUNNING" {
			if url, err = l.url(ctx, task); err != nil {
				return nil, l.ended(ctx, status, last, err)
			}
			if c, err = client.Pinned(client.Config{URL: url, Token: token, CallTimeout: callTimeout}); err != nil {
				return nil, err
			}
		}
		if c != nil {
			if last = c.Health(ctx); last == nil {
				return &started{arn: arn, url: url, nonce: nonce, sb: &launch.Sandbox{ID: arn, Client: c}}, nil
			}
			if errors.Is(last, pin.ErrWrongKey) {
				return nil, fmt.Errorf("sandboxd at %s is not the task's: %w", url, last)
			}
		}
		select {
		case <-ctx.Done():
			return nil, l.ended(ctx, status, last, nil)
		case <-time.After(l.cfg.PollInterval):
		}
	}
}

// ended is the error of a wait that ended in status: the start timeout or
// ctx's end, with the last health check's error, or err.
func (l *Launcher) ended(ctx context.Context, status string, health, err error) error {
	if ctx.Err() == nil {
		return err
	}
	what := fmt.Errorf("task %s after %s", status, l.cfg.StartTimeout)
	if cause := context.Cause(ctx); errors.Is(cause, errTimeout) {
		if health != nil {
			return fmt.Errorf("%w (%v): %w", cause, what, health)
		}
		return fmt.Errorf("%w (%v)", cause, what)
	}
	return fmt.Errorf("task %s: %w", status, ctx.Err())
}

// describe returns the task arn.
func (l *Launcher) describe(ctx context.Context, arn string) (types.Task, error) {
	out, err := l.cfg.ECS.DescribeTasks(ctx, &awsecs.DescribeTasksInput{Cluster: aws.String(l.cfg.Cluster), Tasks: []string{arn}})
	if err != nil {
		return types.Task{}, fmt.Errorf("ecs DescribeTasks: %w", err)
	}
	for _, t := range out.Tasks {
		if aws.ToString(t.TaskArn) == arn {
			return t, nil
		}
	}
	for _, f := range out.Failures {
		return types.Task{}, fmt.Errorf("ecs DescribeTasks: %s", aws.ToString(f.Reason))
	}
	return types.Task{}, errors.New("ecs DescribeTasks: the task is not in the answer")
}

// stopped says why task stopped ("" while it has not): its stopped reason
// and its containers' reasons and exit codes.
func stopped(task types.Task) string {
	if aws.ToString(task.LastStatus) != "STOPPED" && aws.ToString(task.DesiredStatus) != "STOPPED" {
		return ""
	}
	why := "the task stopped"
	if r := aws.ToString(task.StoppedReason); r != "" {
		why += ": " + r
	} else if task.StopCode != "" {
		why += ": " + string(task.StopCode)
	}
	for _, c := range task.Containers {
		var parts []string
		if r := aws.ToString(c.Reason); r != "" {
			parts = append(parts, r)
		}
		if c.ExitCode != nil {
			parts = append(parts, "exit code "+strconv.Itoa(int(*c.ExitCode)))
		}
		if len(parts) > 0 {
			why += "; container " + aws.ToString(c.Name) + ": " + strings.Join(parts, ", ")
		}
	}
	return why
}

// url is the task's sandboxd URL: https://ADDR:PORT with the ENI's public
// IP (public layout) or private IPv4 address, or what Config.Resolve makes
// of that address.
func (l *Launcher) url(ctx context.Context, task types.Task) (string, error) {
	var eni, private string
	for _, a := range task.Attachments {
		if aws.ToString(a.Type) != "ElasticNetworkInterface" {
			continue
		}
		for _, d := range a.Details {
			switch aws.ToString(d.Name) {
			case "networkInterfaceId":
				eni = aws.ToString(d.Value)
			case "privateIPv4Address":
				private = aws.ToString(d.Value)
			}
		}
	}
	addr := private
	if !l.cfg.Private {
		if eni == "" {
			return "", errors.New("the task has no network interface")
		}
		out, err := l.cfg.EC2.DescribeNetworkInterfaces(ctx, &ec2.DescribeNetworkInterfacesInput{NetworkInterfaceIds: []string{eni}})
		if err != nil {
			return "", fmt.Errorf("ec2 DescribeNetworkInterfaces %s: %w", eni, err)
		}
		addr = ""
		for _, ni := range out.NetworkInterfaces {
			if ni.Association != nil && aws.ToString(ni.Association.PublicIp) != "" {
				addr = aws.ToString(ni.Association.PublicIp)
			}
		}
		if addr == "" {
			return "", fmt.Errorf("network interface %s has no public IP (is the subnet public, and AssignPublicIp allowed?)", eni)
		}
	}
	if addr == "" {
		return "", errors.New("the task has no private IPv4 address")
	}
	if l.cfg.Resolve != nil {
		return l.cfg.Resolve(ctx, task, addr)
	}
	return "https://" + net.JoinHostPort(addr, strconv.Itoa(l.cfg.Port)), nil
}

// stop stops the task arn. A task already stopped, or that ECS no longer
// knows, is not an error.
func (l *Launcher) stop(ctx context.Context, arn, reason string) error {
	_, err := l.cfg.ECS.StopTask(ctx, &awsecs.StopTaskInput{Cluster: aws.String(l.cfg.Cluster), Task: aws.String(arn), Reason: aws.String(reason)})
	if err == nil {
		return nil
	}
	// Is it gone? Then there is nothing to stop.
	out, derr := l.cfg.ECS.DescribeTasks(ctx, &awsecs.DescribeTasksInput{Cluster: aws.String(l.cfg.Cluster), Tasks: []string{arn}})
	if derr == nil {
		gone := len(out.Tasks) == 0
		for _, t := range out.Tasks {
			if aws.ToString(t.LastStatus) == "STOPPED" {
				gone = true
			}
		}
		if gone {
			return nil
		}
	}
	return fmt.Errorf("ecs: stop task %s: %w", arn, err)
}
