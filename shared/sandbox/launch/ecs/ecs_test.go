//go:build linux

package ecs_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ec2"
	ec2types "github.com/aws/aws-sdk-go-v2/service/ec2/types"
	awsecs "github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/ecs/types"

	"github.com/agentsfleet/agentsfleet/sandboximage"
	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/client"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/confine"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/pin"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/sandboxtest"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/server"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/token"
)

func TestMain(m *testing.M) { awstest.Main(m) }

// manualTransitions makes moto's tasks keep their status until StopTask.
// By default moto moves a task one status further (RUNNING, DEACTIVATING,
// STOPPING, DEPROVISIONING, STOPPED) at each DescribeTasks, so that how
// often the launcher polls would decide the test; with "manual" progression
// after a million describes, a task stays RUNNING (moto starts it there)
// until StopTask sets it STOPPED. The setting is the moto server's, shared
// by every test of this binary.
var manualTransitions sync.Once

func setManualTransitions(t *testing.T) {
	t.Helper()
	var err error
	manualTransitions.Do(func() {
		body := `{"model_name":"ecs::task","transition":{"progression":"manual","times":1000000}}`
		var resp *http.Response
		resp, err = http.Post(awstest.Endpoint(t)+"/moto-api/state-manager/set-transition", "application/json", strings.NewReader(body))
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode/100 != 2 {
				err = errors.New("set-transition: " + resp.Status)
			}
		}
	})
	if err != nil {
		t.Fatal(err)
	}
}

// fixture is a cluster, a task definition, a subnet and a security group in
// moto, and the stand-ins for the sandbox containers the tasks get.
type fixture struct {
	ecs     *awsecs.Client
	ec2     *ec2.Client
	cluster string
	taskDef string
	subnet  string
	sg      string

	mu     sync.Mutex
	stands map[string]*standIn // by task ARN
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	setManualTransitions(t)
	cfg := awstest.Config(t)
	f := &fixture{ecs: awsecs.NewFromConfig(cfg), ec2: ec2.NewFromConfig(cfg), stands: map[string]*standIn{}}
	ctx := context.Background()
	f.cluster = awstest.UniqueName(t, "sandboxes")
	if _, err := f.ecs.CreateCluster(ctx, &awsecs.CreateClusterInput{ClusterName: aws.String(f.cluster)}); err != nil {
		t.Fatal(err)
	}
	f.taskDef = f.register(t, "sandbox")
	vpcs, err := f.ec2.DescribeVpcs(ctx, &ec2.DescribeVpcsInput{Filters: []ec2types.Filter{{Name: aws.String("isDefault"), Values: []string{"true"}}}})
	if err != nil || len(vpcs.Vpcs) == 0 {
		t.Fatalf("default VPC: %v, %v", vpcs, err)
	}
	vpc := aws.ToString(vpcs.Vpcs[0].VpcId)
	subnets, err := f.ec2.DescribeSubnets(ctx, &ec2.DescribeSubnetsInput{Filters: []ec2types.Filter{{Name: aws.String("vpc-id"), Values: []string{vpc}}}})
	if err != nil || len(subnets.Subnets) == 0 {
		t.Fatalf("default subnets: %v, %v", subnets, err)
	}
	f.subnet = aws.ToString(subnets.Subnets[0].SubnetId)
	sg, err := f.ec2.CreateSecurityGroup(ctx, &ec2.CreateSecurityGroupInput{
		GroupName: aws.String(awstest.UniqueName(t, "sandbox")), Description: aws.String("sandboxd"), VpcId: aws.String(vpc),
	})
	if err != nil {
		t.Fatal(err)
	}
	f.sg = aws.ToString(sg.GroupId)
	return f
}

// register registers a task definition of the sandbox's shape in a
// family named after family and returns its ARN.
func (f *fixture) register(t *testing.T, family string) string {
	t.Helper()
	ctx := context.Background()
	td, err := f.ecs.RegisterTaskDefinition(ctx, &awsecs.RegisterTaskDefinitionInput{
		Family:                  aws.String(awstest.UniqueName(t, family)),
		RequiresCompatibilities: []types.Compatibility{types.CompatibilityFargate},
		NetworkMode:             types.NetworkModeAwsvpc,
		Cpu:                     aws.String("256"),
		Memory:                  aws.String("512"),
		RuntimePlatform:         &types.RuntimePlatform{CpuArchitecture: types.CPUArchitectureArm64, OperatingSystemFamily: types.OSFamilyLinux},
		ContainerDefinitions: []types.ContainerDefinition{{
			Name:         aws.String(ecs.DefaultContainer),
			Image:        aws.String("agentsfleet/sandbox:test"),
			Memory:       aws.Int32(512),
			Essential:    aws.Bool(true),
			PortMappings: []types.PortMapping{{ContainerPort: aws.Int32(8080)}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return aws.ToString(td.TaskDefinition.TaskDefinitionArn)
}

// config is a launcher config over the fixture whose Resolve calls resolve.
func (f *fixture) config(resolve func(ctx context.Context, task types.Task, addr string) (string, error)) ecs.Config {
	return ecs.Config{
		ECS: f.ecs, EC2: f.ec2, Private: true,
		Cluster: f.cluster, TaskDefinition: f.taskDef, Subnets: []string{f.subnet}, SecurityGroups: []string{f.sg},
		StartTimeout: 5 * time.Second, PollInterval: 10 * time.Millisecond,
		Resolve: resolve,
	}
}

// standInResolve returns a Resolve that checks the address the launcher
// found against the task's ENI (private IP, or want when not empty), reads
// the token the launcher gave the task from its overrides (DescribeTasks
// returns them), and starts a sandboxd on loopback standing in for the
// container, serving TLS of that token, or of certToken when not empty.
func (f *fixture) standInResolve(t *testing.T, want, certToken string) func(context.Context, types.Task, string) (string, error) {
	return func(_ context.Context, task types.Task, addr string) (string, error) {
		wantAddr := want
		if wantAddr == "" {
			wantAddr = privateIP(task)
		}
		if addr != wantAddr || addr == "" {
			t.Errorf("the launcher found address %q for task %s, want %q", addr, aws.ToString(task.TaskArn), wantAddr)
		}
		token := overrideToken(t, task)
		cert := certToken
		if cert == "" {
			cert = token
		}
		s := startStandIn(t, token, cert)
		f.mu.Lock()
		f.stands[aws.ToString(task.TaskArn)] = s
		f.mu.Unlock()
		return s.url, nil
	}
}

func (f *fixture) standIn(arn string) *standIn {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stands[arn]
}

func privateIP(task types.Task) string {
	for _, a := range task.Attachments {
		for _, d := range a.Details {
			if aws.ToString(d.Name) == "privateIPv4Address" {
				return aws.ToString(d.Value)
			}
		}
	}
	return ""
}

func overrideToken(t *testing.T, task types.Task) string {
	t.Helper()
	if task.Overrides != nil {
		for _, c := range task.Overrides.ContainerOverrides {
			if aws.ToString(c.Name) != ecs.DefaultContainer {
				continue
			}
			for _, e := range c.Environment {
				if aws.ToString(e.Name) == ecs.TokenEnv {
					return aws.ToString(e.Value)
				}
			}
		}
	}
	t.Errorf("task %s has no %s override: %+v", aws.ToString(task.TaskArn), ecs.TokenEnv, task.Overrides)
	return ""
}

// describe returns the task arn as moto has it, with its tags.
func (f *fixture) describe(t *testing.T, arn string) types.Task {
	t.Helper()
	out, err := f.ecs.DescribeTasks(context.Background(), &awsecs.DescribeTasksInput{
		Cluster: aws.String(f.cluster), Tasks: []string{arn}, Include: []types.TaskField{types.TaskFieldTags},
	})
	if err != nil || len(out.Tasks) != 1 {
		t.Fatalf("DescribeTasks(%s) = %+v, %v", arn, out, err)
	}
	return out.Tasks[0]
}

func (f *fixture) wantStopped(t *testing.T, arn, reason string) {
	t.Helper()
	task := f.describe(t, arn)
	if got := aws.ToString(task.LastStatus); got != "STOPPED" {
		t.Errorf("task %s is %s, want STOPPED", arn, got)
	}
	if got := aws.ToString(task.StoppedReason); reason != "" && got != reason {
		t.Errorf("task %s stopped with reason %q, want %q", arn, got, reason)
	}
}

func (f *fixture) tasks(t *testing.T) []string {
	t.Helper()
	out, err := f.ecs.ListTasks(context.Background(), &awsecs.ListTasksInput{Cluster: aws.String(f.cluster)})
	if err != nil {
		t.Fatal(err)
	}
	return out.TaskArns
}

func tag(task types.Task, key string) string {
	for _, tg := range task.Tags {
		if aws.ToString(tg.Key) == key {
			return aws.ToString(tg.Value)
		}
	}
	return ""
}

// standIn is a sandboxd on loopback: server.New over server.Tools, served
// with pin.ServerTLS.
type standIn struct {
	url  string
	work string
	ts   *httptest.Server
}

func startStandIn(t *testing.T, token, certToken string) *standIn {
	t.Helper()
	work := filepath.Join(sandboxtest.Base(t), "work")
	sandboxtest.Mkdir(t, work)
	if err := confine.PrepareRoots([]string{work}, 0, 0); err != nil {
		t.Fatal(err)
	}
	roots, err := sandbox.New(sandbox.Dirs{Workdir: work})
	if err != nil {
		t.Fatal(err)
	}
	tools := server.Tools(server.Config{Roots: roots, Timeout: time.Minute})
	srv, err := server.New(server.Options{Token: token, Tools: tools, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		t.Fatal(err)
	}
	tlsConfig, err := pin.ServerTLS(certToken)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewUnstartedServer(srv)
	ts.TLS = tlsConfig
	ts.Config.ErrorLog = log.New(io.Discard, "", 0) // refused handshakes
	ts.StartTLS()
	t.Cleanup(func() {
		ts.Close()
		for _, tl := range tools {
			if c, ok := tl.(io.Closer); ok {
				c.Close()
			}
		}
	})
	return &standIn{url: ts.URL, work: work, ts: ts}
}

// deadURL is a loopback URL nothing answers on.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "https://" + addr
}

// testKey is a fresh token key.
func testKey(t *testing.T) token.Key {
	t.Helper()
	k, err := token.RandomKey()
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// randomToken is the token of a random key and nonce: no task's.
func randomToken(t *testing.T) string {
	t.Helper()
	n, err := token.NewNonce()
	if err != nil {
		t.Fatal(err)
	}
	tok, err := testKey(t).Token(n)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func newLauncher(t *testing.T, cfg ecs.Config) *ecs.Launcher {
	t.Helper()
	l, err := ecs.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func read(t *testing.T, c *client.Client, path string) string {
	t.Helper()
	res, err := c.Call(context.Background(), "read", json.RawMessage(`{"path":"`+path+`"}`), "")
	if err != nil || res.IsError {
		t.Fatalf("read %s = %+v, %v", path, res, err)
	}
	return res.Output
}

// TestRun: a run from RunTask to StopTask, in both layouts: the task is
// started as asked, the pinned client reads a file of the stand-in, a
// second Acquire gets the same task, and Release stops it.
func TestRun(t *testing.T) {
	t.Parallel()
	for _, layout := range []string{"private", "public"} {
		t.Run(layout, func(t *testing.T) {
			t.Parallel()
			f := newFixture(t)
			cfg := f.config(f.standInResolve(t, "", ""))
			var eips *eipEC2
			if layout == "public" {
				eips = &eipEC2{c: f.ec2}
				cfg.Private, cfg.EC2 = false, eips
				cfg.Resolve = func(ctx context.Context, task types.Task, addr string) (string, error) {
					return f.standInResolve(t, eips.publicIP(), "")(ctx, task, addr)
				}
			}
			l := newLauncher(t, cfg)
			ctx := context.Background()
			sb, err := l.Acquire(ctx, launch.Spec{RunID: "run-1", Fleet: "f", Workdir: "/work", Size: fleet.SizeMedium})
			if err != nil {
				t.Fatalf("Acquire = %v", err)
			}
			if l.TaskARN("run-1") != sb.ID || !strings.Contains(sb.ID, ":task/") {
				t.Errorf("sandbox ID %q, TaskARN %q; want the task's ARN in both", sb.ID, l.TaskARN("run-1"))
			}
			task := f.describe(t, sb.ID)
			if got := tag(task, ecs.TagRunID); got != "run-1" {
				t.Errorf("tag %s = %q, want run-1", ecs.TagRunID, got)
			}
			if got := aws.ToString(task.StartedBy); got != ecs.StartedBy {
				t.Errorf("startedBy = %q, want %q", got, ecs.StartedBy)
			}
			if task.Overrides == nil || aws.ToString(task.Overrides.Cpu) != "1024" || aws.ToString(task.Overrides.Memory) != "2048" {
				t.Errorf("overrides %+v; want the medium size's cpu 1024 and memory 2048", task.Overrides)
			}
			if tok := overrideToken(t, task); len(tok) != 64 {
				t.Errorf("the token has %d characters, want 64 (32 bytes in hex)", len(tok))
			}
			s := f.standIn(sb.ID)
			sandboxtest.Write(t, filepath.Join(s.work, "a.txt"), "from the task\n")
			if got, want := read(t, sb.Client, "a.txt"), "1\tfrom the task"; got != want {
				t.Errorf("read = %q, want %q", got, want)
			}
			again, err := l.Acquire(ctx, launch.Spec{RunID: "run-1", Fleet: "f"})
			if err != nil || again != sb {
				t.Errorf("second Acquire = %v, %v; want the same sandbox", again, err)
			}
			if got := len(f.tasks(t)); got != 1 {
				t.Errorf("%d tasks in the cluster, want 1", got)
			}
			if err := l.Release(ctx, "run-1"); err != nil {
				t.Fatalf("Release = %v", err)
			}
			f.wantStopped(t, sb.ID, ecs.ReasonRunEnded)
			if err := l.Release(ctx, "run-1"); err != nil {
				t.Errorf("second Release = %v, want nil", err)
			}
			if l.TaskARN("run-1") != "" {
				t.Errorf("the launcher still has a task for the released run")
			}
		})
	}
}

// eipEC2 stands in for Fargate's AssignPublicIp, which moto does not do:
// before it describes a network interface, it allocates an Elastic IP in
// moto and associates it with that interface.
type eipEC2 struct {
	c *ec2.Client

	mu sync.Mutex
	ip string
}

func (e *eipEC2) publicIP() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.ip
}

func (e *eipEC2) DescribeNetworkInterfaces(ctx context.Context, in *ec2.DescribeNetworkInterfacesInput, opts ...func(*ec2.Options)) (*ec2.DescribeNetworkInterfacesOutput, error) {
	c := e.c
	alloc, err := c.AllocateAddress(ctx, &ec2.AllocateAddressInput{Domain: ec2types.DomainTypeVpc})
	if err != nil {
		return nil, err
	}
	if _, err := c.AssociateAddress(ctx, &ec2.AssociateAddressInput{AllocationId: alloc.AllocationId, NetworkInterfaceId: aws.String(in.NetworkInterfaceIds[0])}); err != nil {
		return nil, err
	}
	e.mu.Lock()
	e.ip = aws.ToString(alloc.PublicIp)
	e.mu.Unlock()
	return c.DescribeNetworkInterfaces(ctx, in, opts...)
}

// TestStoppedBeforeHealthy: a task that stops before its sandboxd answers
// (here stopped through moto's StopTask, as ECS stops a task whose image it
// cannot pull) is ErrStart naming the task and the reason, and stays
// stopped; a task that never answers is stopped at the start timeout.
func TestStoppedBeforeHealthy(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	const reason = "CannotPullContainerError: pull image manifest has been retried 5 time(s)"
	var arn string
	l := newLauncher(t, f.config(func(ctx context.Context, task types.Task, _ string) (string, error) {
		arn = aws.ToString(task.TaskArn)
		if _, err := f.ecs.StopTask(ctx, &awsecs.StopTaskInput{Cluster: aws.String(f.cluster), Task: task.TaskArn, Reason: aws.String(reason)}); err != nil {
			t.Error(err)
		}
		return deadURL(t), nil
	}))
	_, err := l.Acquire(context.Background(), launch.Spec{RunID: "run-stops", Fleet: "f"})
	if !errors.Is(err, launch.ErrStart) || arn == "" || !strings.Contains(err.Error(), arn) || !strings.Contains(err.Error(), reason) {
		t.Fatalf("Acquire = %v; want ErrStart naming task %s and %q", err, arn, reason)
	}
	t.Log(err)
	f.wantStopped(t, arn, "")
	if l.TaskARN("run-stops") != "" {
		t.Errorf("the launcher kept the task that failed")
	}

	cfg := f.config(func(_ context.Context, task types.Task, _ string) (string, error) {
		arn = aws.ToString(task.TaskArn)
		return deadURL(t), nil
	})
	cfg.StartTimeout = 300 * time.Millisecond
	l = newLauncher(t, cfg)
	_, err = l.Acquire(context.Background(), launch.Spec{RunID: "run-silent", Fleet: "f"})
	if !errors.Is(err, launch.ErrStart) || !strings.Contains(err.Error(), arn) || !strings.Contains(err.Error(), "start timeout") {
		t.Fatalf("Acquire = %v; want ErrStart naming task %s and the start timeout", err, arn)
	}
	t.Log(err)
	f.wantStopped(t, arn, ecs.ReasonUnhealthy)
}

// TestWrongKey: a host at the task's address serving a certificate of
// another token is refused before the token is sent, and the task stopped.
func TestWrongKey(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLauncher(t, f.config(f.standInResolve(t, "", randomToken(t))))
	_, err := l.Acquire(context.Background(), launch.Spec{RunID: "run-impostor", Fleet: "f"})
	if !errors.Is(err, launch.ErrStart) || !errors.Is(err, client.ErrUnavailable) || !errors.Is(err, pin.ErrWrongKey) {
		t.Fatalf("Acquire = %v; want ErrStart, client.ErrUnavailable and pin.ErrWrongKey", err)
	}
	t.Log(err)
	arns := f.tasks(t)
	if len(arns) != 1 || !strings.Contains(err.Error(), arns[0]) {
		t.Fatalf("tasks %v; want one, named in %v", arns, err)
	}
	f.wantStopped(t, arns[0], ecs.ReasonUnhealthy)
}

// TestRunTaskRefused: a RunTask the ECS API refuses is ErrStart with the
// reason, and leaves no task.
func TestRunTaskRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config(f.standInResolve(t, "", ""))
	cfg.TaskDefinition = "no-such-family-" + f.cluster
	_, err := newLauncher(t, cfg).Acquire(context.Background(), launch.Spec{RunID: "run-x", Fleet: "f"})
	if !errors.Is(err, launch.ErrStart) || !strings.Contains(err.Error(), "RunTask") {
		t.Fatalf("Acquire = %v; want ErrStart from RunTask", err)
	}
	t.Log(err)
	if arns := f.tasks(t); len(arns) != 0 {
		t.Errorf("tasks %v, want none", arns)
	}
}

// TestStarter: Start, Connect and Stop of a warm task, as a pool uses them.
func TestStarter(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config(f.standInResolve(t, "", ""))
	key := testKey(t)
	cfg.Key = func(context.Context) (token.Key, error) { return key, nil }
	var st launch.Starter = newLauncher(t, cfg)
	ctx := context.Background()
	w, err := st.Start(ctx, launch.Kind{Size: fleet.DefaultSandboxSize})
	if err != nil {
		t.Fatalf("Start = %v", err)
	}
	if !strings.Contains(w.ID, ":task/") || w.Size != fleet.DefaultSandboxSize || len(w.Nonce) != 32 || w.Started.IsZero() {
		t.Errorf("Start = %+v; want a task ARN, the size, a 32-character nonce and the start time", w)
	}
	task := f.describe(t, w.ID)
	if got := tag(task, ecs.TagWarm); got != "true" {
		t.Errorf("tag %s = %q, want true", ecs.TagWarm, got)
	}
	wToken, err := key.Token(w.Nonce)
	if err != nil {
		t.Fatal(err)
	}
	if got := overrideToken(t, task); got != wToken || strings.Contains(got, w.Nonce) {
		t.Errorf("the task's token is not the key's token of the Warm's nonce")
	}
	sb, err := st.Connect(ctx, w)
	if err != nil || sb.ID != w.ID {
		t.Fatalf("Connect = %v, %v; want the task's sandbox", sb, err)
	}
	sandboxtest.Write(t, filepath.Join(f.standIn(w.ID).work, "w.txt"), "warm\n")
	if got, want := read(t, sb.Client, "w.txt"), "1\twarm"; got != want {
		t.Errorf("read = %q, want %q", got, want)
	}
	if err := st.Stop(ctx, w); err != nil {
		t.Fatalf("Stop = %v", err)
	}
	f.wantStopped(t, w.ID, ecs.ReasonRunEnded)
	if err := st.Stop(ctx, w); err != nil {
		t.Errorf("second Stop = %v, want nil", err)
	}
	unknown := w
	unknown.ID = w.ID[:strings.LastIndex(w.ID, "/")+1] + "00000000-0000-0000-0000-000000000000"
	if err := st.Stop(ctx, unknown); err != nil {
		t.Errorf("Stop of a task ECS does not know = %v, want nil", err)
	}
	f.standIn(w.ID).ts.Close()
	if _, err := st.Connect(ctx, w); !errors.Is(err, client.ErrUnavailable) {
		t.Errorf("Connect to a dead sandbox = %v, want client.ErrUnavailable", err)
	}
	impostor := w
	if impostor.Nonce, err = token.NewNonce(); err != nil {
		t.Fatal(err)
	}
	impostor.URL = startStandIn(t, wToken, wToken).url
	if _, err := st.Connect(ctx, impostor); !errors.Is(err, pin.ErrWrongKey) {
		t.Errorf("Connect with another nonce = %v, want pin.ErrWrongKey", err)
	}
	// A record without a nonce (one written before nonces) is discarded.
	old := w
	old.Nonce, old.URL = "", impostor.URL
	if _, err := st.Connect(ctx, old); !errors.Is(err, token.ErrNoNonce) {
		t.Errorf("Connect without a nonce = %v, want token.ErrNoNonce", err)
	}
	// Another launcher of another key makes another token of the nonce.
	if _, err := newLauncher(t, f.config(nil)).Connect(ctx, launch.Warm{ID: w.ID, URL: impostor.URL, Nonce: w.Nonce}); !errors.Is(err, pin.ErrWrongKey) {
		t.Errorf("Connect by a launcher of another key = %v, want pin.ErrWrongKey", err)
	}
}

// TestNew: each required setting is named when missing.
func TestNew(t *testing.T) {
	t.Parallel()
	ok := ecs.Config{ECS: &awsecs.Client{}, EC2: &ec2.Client{}, Cluster: "c", TaskDefinition: "td", Subnets: []string{"s"}, SecurityGroups: []string{"g"}}
	if _, err := ecs.New(ok); err != nil {
		t.Fatalf("New(%+v) = %v", ok, err)
	}
	for _, tt := range []struct {
		name string
		edit func(*ecs.Config)
	}{
		{"ECS", func(c *ecs.Config) { c.ECS = nil }},
		{"EC2", func(c *ecs.Config) { c.EC2 = nil }},
		{"Cluster", func(c *ecs.Config) { c.Cluster = "" }},
		{"TaskDefinition", func(c *ecs.Config) { c.TaskDefinition = "" }},
		{"Subnets", func(c *ecs.Config) { c.Subnets = nil }},
		{"SecurityGroups", func(c *ecs.Config) { c.SecurityGroups = nil }},
	} {
		cfg := ok
		tt.edit(&cfg)
		if _, err := ecs.New(cfg); err == nil || !strings.Contains(err.Error(), tt.name) {
			t.Errorf("New without %s = %v; want an error naming it", tt.name, err)
		}
	}
	private := ok
	private.EC2, private.Private = nil, true
	if _, err := ecs.New(private); err != nil {
		t.Errorf("New of the private layout without EC2 = %v, want nil", err)
	}
}

var _ ecs.EC2 = (*eipEC2)(nil)

// TestDeadTaskReplaced: a run whose task stopped answering gets a new task
// at its next Acquire, and the old one is stopped.
func TestDeadTaskReplaced(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLauncher(t, f.config(f.standInResolve(t, "", "")))
	ctx := context.Background()
	first, err := l.Acquire(ctx, launch.Spec{RunID: "run-r", Fleet: "f"})
	if err != nil {
		t.Fatal(err)
	}
	f.standIn(first.ID).ts.Close()
	second, err := l.Acquire(ctx, launch.Spec{RunID: "run-r", Fleet: "f"})
	if err != nil || second.ID == first.ID {
		t.Fatalf("Acquire after the task died = %v, %v; want a new task", second, err)
	}
	f.wantStopped(t, first.ID, ecs.ReasonUnhealthy)
	if err := l.Release(ctx, "run-r"); err != nil {
		t.Fatal(err)
	}
	f.wantStopped(t, second.ID, ecs.ReasonRunEnded)
}

// noCapacity is ECS without Fargate capacity: its RunTask answers with a
// failure, as ECS does when the region has none to give; the rest is moto's.
type noCapacity struct{ *awsecs.Client }

func (noCapacity) RunTask(context.Context, *awsecs.RunTaskInput, ...func(*awsecs.Options)) (*awsecs.RunTaskOutput, error) {
	return &awsecs.RunTaskOutput{Failures: []types.Failure{{Reason: aws.String("RESOURCE:FARGATE"), Detail: aws.String("capacity is unavailable at this time")}}}, nil
}

// TestNoCapacity: RunTask's failures are ErrStart with their reasons, and
// an unknown size is refused before anything starts.
func TestNoCapacity(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	cfg := f.config(f.standInResolve(t, "", ""))
	cfg.ECS = noCapacity{f.ecs}
	_, err := newLauncher(t, cfg).Acquire(context.Background(), launch.Spec{RunID: "run-c", Fleet: "f"})
	if !errors.Is(err, launch.ErrStart) || !strings.Contains(err.Error(), "RESOURCE:FARGATE") || !strings.Contains(err.Error(), "capacity is unavailable") {
		t.Fatalf("Acquire = %v; want ErrStart with the RunTask failure", err)
	}
	_, err = newLauncher(t, f.config(f.standInResolve(t, "", ""))).Start(context.Background(), launch.Kind{Size: "huge"})
	if !errors.Is(err, launch.ErrStart) || !strings.Contains(err.Error(), `"huge"`) {
		t.Fatalf("Start(huge) = %v; want ErrStart naming the size", err)
	}
	if arns := f.tasks(t); len(arns) != 0 {
		t.Errorf("tasks %v, want none", arns)
	}
}

// TestCanceled: a start whose ctx ends stops its task and says why.
func TestCanceled(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var arn string
	l := newLauncher(t, f.config(func(_ context.Context, task types.Task, _ string) (string, error) {
		arn = aws.ToString(task.TaskArn)
		cancel()
		return deadURL(t), nil
	}))
	_, err := l.Acquire(ctx, launch.Spec{RunID: "run-cancel", Fleet: "f"})
	if !errors.Is(err, launch.ErrStart) || !errors.Is(err, context.Canceled) || arn == "" || !strings.Contains(err.Error(), arn) {
		t.Fatalf("Acquire = %v; want ErrStart and context.Canceled naming task %s", err, arn)
	}
	t.Log(err)
	f.wantStopped(t, arn, ecs.ReasonUnhealthy)
}

// TestConcurrentRuns: runs acquiring at once get a task each, and their
// Releases stop them all.
func TestConcurrentRuns(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	l := newLauncher(t, f.config(f.standInResolve(t, "", "")))
	ctx := context.Background()
	const n = 5
	ids := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			sb, err := l.Acquire(ctx, launch.Spec{RunID: "run-" + string(rune('a'+i)), Fleet: "f"})
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = sb.ID
		})
	}
	wg.Wait()
	if t.Failed() {
		return
	}
	seen := map[string]bool{}
	for _, id := range ids {
		seen[id] = true
	}
	if len(seen) != n || len(f.tasks(t)) != n {
		t.Fatalf("tasks %v (cluster has %d); want %d distinct", ids, len(f.tasks(t)), n)
	}
	for i := range n {
		if err := l.Release(ctx, "run-"+string(rune('a'+i))); err != nil {
			t.Error(err)
		}
	}
	for _, id := range ids {
		f.wantStopped(t, id, ecs.ReasonRunEnded)
	}
}

// TestBrowserTasks: a run that needs a browser, and a warm sandbox of the
// browser kind, run from the browser task definition with the size's CPU
// and its memory plus Chromium's; a plain run from the plain one; and a
// launcher without a browser task definition starts nothing for a browser
// run, saying which setting it lacks.
func TestBrowserTasks(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := context.Background()
	cfg := f.config(f.standInResolve(t, "", ""))
	cfg.BrowserTaskDefinition = f.register(t, "sandbox-browser")
	l := newLauncher(t, cfg)
	if !l.Browser() || !launch.CanBrowse(l) {
		t.Fatal("Browser() = false with a browser task definition")
	}
	for _, tt := range []struct {
		spec    launch.Spec
		taskDef string
		memory  string
	}{
		{launch.Spec{RunID: "browser-run", Fleet: "f", Size: fleet.SizeMedium, Browser: true}, cfg.BrowserTaskDefinition, strconv.Itoa(2048 + sandboximage.BrowserMemoryMiB)},
		{launch.Spec{RunID: "plain-run", Fleet: "f", Size: fleet.SizeMedium}, cfg.TaskDefinition, "2048"},
	} {
		sb, err := l.Acquire(ctx, tt.spec)
		if err != nil {
			t.Fatalf("Acquire(%+v) = %v", tt.spec, err)
		}
		task := f.describe(t, sb.ID)
		if got := aws.ToString(task.TaskDefinitionArn); got != tt.taskDef {
			t.Errorf("run %s: task definition %s, want %s", tt.spec.RunID, got, tt.taskDef)
		}
		if task.Overrides == nil || aws.ToString(task.Overrides.Cpu) != "1024" || aws.ToString(task.Overrides.Memory) != tt.memory {
			t.Errorf("run %s: overrides %+v; want cpu 1024 and memory %s", tt.spec.RunID, task.Overrides, tt.memory)
		}
		if err := l.Release(ctx, tt.spec.RunID); err != nil {
			t.Fatalf("Release = %v", err)
		}
	}
	w, err := l.Start(ctx, launch.Kind{Size: fleet.SizeSmall, Browser: true})
	if err != nil {
		t.Fatalf("Start of a browser sandbox = %v", err)
	}
	if !w.Browser || w.Size != fleet.SizeSmall {
		t.Errorf("Start = %+v; want a small sandbox with a browser", w)
	}
	if task := f.describe(t, w.ID); aws.ToString(task.TaskDefinitionArn) != cfg.BrowserTaskDefinition ||
		task.Overrides == nil || aws.ToString(task.Overrides.Memory) != strconv.Itoa(1024+sandboximage.BrowserMemoryMiB) {
		t.Errorf("the warm browser task: %s, overrides %+v; want the browser task definition and the small size's memory plus Chromium's",
			aws.ToString(task.TaskDefinitionArn), task.Overrides)
	}
	if err := l.Stop(ctx, w); err != nil {
		t.Fatalf("Stop = %v", err)
	}

	plain := newLauncher(t, f.config(f.standInResolve(t, "", "")))
	if plain.Browser() {
		t.Error("Browser() = true without a browser task definition")
	}
	before := len(f.tasks(t))
	_, err = plain.Acquire(ctx, launch.Spec{RunID: "no-browser", Fleet: "f", Browser: true})
	if !errors.Is(err, launch.ErrStart) || !errors.Is(err, launch.ErrNoBrowser) || !strings.Contains(err.Error(), ecs.EnvBrowserTaskDefinition) {
		t.Errorf("Acquire of a browser sandbox without its task definition = %v; want ErrStart, ErrNoBrowser and the setting's name", err)
	}
	if after := len(f.tasks(t)); after != before {
		t.Errorf("%d tasks after the refused start, want %d", after, before)
	}
}
