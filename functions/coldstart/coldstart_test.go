package coldstart

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// The binaries, by name: the five functions, the baseline, and a binary
// that calls AWS at start (the test's own check).
var binaries = map[string]string{
	"minimal":  "./functions/coldstart/testdata/minimal",
	"eager":    "./functions/coldstart/testdata/eager",
	"api":      "./functions/api",
	"runner":   "./functions/runner",
	"schedule": "./functions/schedule",
	"slack":    "./functions/slack",
	"webtools": "./functions/webtools",
}

// functions are the binaries measured against the baseline.
var functions = []string{"api", "runner", "schedule", "slack", "webtools"}

// built is where the binaries are, once built (TestMain).
var built string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "coldstart-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := build(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	built = dir
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds every binary into dir as `make lambdas` does (the
// lambda.norpc tag, stripped), for this machine. The cgo setting is the
// toolchain's, as the tests' own builds, so that the build cache they
// filled serves this one: both the baseline and the functions are built
// alike, which is what the ratios need.
func build(dir string) error {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	errs := make(chan error, len(binaries))
	for name, pkg := range binaries {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-ldflags", "-s -w", "-o", filepath.Join(dir, name), pkg)
			cmd.Dir = root
			if out, err := cmd.CombinedOutput(); err != nil {
				errs <- fmt.Errorf("build %s: %v\n%s", name, err, out)
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

// settings are a deployment's settings for each function, as the stack
// gives them (infra/stack/functions.go), with every secret behind an ARN,
// so that a set-up that reads one at start is seen.
func settings(name string) map[string]string {
	const acct = "arn:aws:lambda:us-east-1:123456789012:function:"
	schedules := map[string]string{
		"AGENTSFLEET_SCHEDULE_GROUP":      "agentsfleet",
		"AGENTSFLEET_SCHEDULE_TARGET_ARN": acct + "agentsfleet-schedule",
		"AGENTSFLEET_SCHEDULE_ROLE_ARN":   "arn:aws:iam::123456789012:role/scheduler",
	}
	env := map[string]string{}
	switch name {
	case "api", "schedule":
		env = map[string]string{"AGENTSFLEET_FUNCTION_RUNNER": "agentsfleet-runner", "AGENTSFLEET_FUNCTION_WEBTOOLS": "agentsfleet-webtools"}
		maps.Copy(env, schedules)
	case "runner":
		env = map[string]string{
			"AGENTSFLEET_CHECKPOINT_BUCKET":       "agentsfleet-bucket",
			"AGENTSFLEET_FUNCTION_WEBTOOLS":       "agentsfleet-webtools",
			"AGENTSFLEET_FUNCTION_SLACK":          "agentsfleet-slack",
			"AGENTSFLEET_MODEL_PROVIDER":          "openai",
			"AGENTSFLEET_MODEL":                   "gpt-5",
			"AGENTSFLEET_MODEL_KEYS_ARN":          "arn:aws:secretsmanager:us-east-1:123456789012:secret:model-keys",
			"AGENTSFLEET_SANDBOX_CLUSTER":         "agentsfleet",
			"AGENTSFLEET_SANDBOX_TASK_DEFINITION": "agentsfleet-sandbox:1",
			"AGENTSFLEET_SANDBOX_SUBNETS":         "subnet-1,subnet-2",
			"AGENTSFLEET_SANDBOX_SECURITY_GROUPS": "sg-1",
			"AGENTSFLEET_SANDBOX_TOKEN_KEY_ARN":   "arn:aws:secretsmanager:us-east-1:123456789012:secret:sandbox-token-key",
			"AGENTSFLEET_SANDBOX_WARM":            "small=2",
		}
		maps.Copy(env, schedules)
	case "slack":
		env = map[string]string{
			"AGENTSFLEET_FUNCTION_RUNNER":          "agentsfleet-runner",
			"AGENTSFLEET_SLACK_SIGNING_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-signing",
			"AGENTSFLEET_SLACK_BOT_TOKEN_ARN":      "arn:aws:secretsmanager:us-east-1:123456789012:secret:slack-token",
		}
	case "webtools":
		env = map[string]string{
			"AGENTSFLEET_SEARCH_BACKEND":        "brave",
			"AGENTSFLEET_SEARCH_API_KEY_SECRET": "arn:aws:secretsmanager:us-east-1:123456789012:secret:search",
		}
	}
	if name != "minimal" {
		env["AGENTSFLEET_TABLE"] = "agentsfleet"
	}
	env["AWS_LAMBDA_FUNCTION_NAME"] = "agentsfleet-" + name
	return env
}

// start is one start of a binary.
type start struct {
	// ready is the time from exec to the first poll for an invocation.
	ready time.Duration
	// awsCalls are the requests the binary sent to AWS before it was ready
	// and in a moment after.
	awsCalls []string
	// answer is what the binary posted for the invocation invokeOnce gave
	// it: "response BODY" or "error BODY".
	answer string
}

// startOnce starts binary name under a fake Runtime API, with AWS's
// endpoint a recorder, waits until it polls for an invocation, and stops
// it.
func startOnce(t testing.TB, name string) start { return run(t, name, nil) }

// invokeOnce starts binary name as startOnce does, gives it one invocation
// of payload, and stops it once it has answered.
func invokeOnce(t testing.TB, name string, payload []byte) start { return run(t, name, payload) }

// run is startOnce, and invokeOnce when payload is not nil.
func run(t testing.TB, name string, payload []byte) start {
	t.Helper()
	var mu sync.Mutex
	var calls []string
	aws := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls = append(calls, r.Method+" "+r.Host+r.URL.Path+" "+r.Header.Get("X-Amz-Target"))
		mu.Unlock()
		http.Error(w, "not here", http.StatusServiceUnavailable)
	}))
	defer aws.Close()
	polled := make(chan time.Time, 1)
	answered := make(chan string, 1)
	var invoked sync.Once
	runtime := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		const invocation = "/2018-06-01/runtime/invocation/"
		switch {
		case r.URL.Path == invocation+"next":
			select {
			case polled <- time.Now():
			default:
			}
			give := false
			if payload != nil {
				invoked.Do(func() { give = true })
			}
			if give {
				w.Header().Set("Lambda-Runtime-Aws-Request-Id", "req-1")
				w.Header().Set("Lambda-Runtime-Deadline-Ms", fmt.Sprint(time.Now().Add(time.Minute).UnixMilli()))
				w.Header().Set("Lambda-Runtime-Invoked-Function-Arn", "arn:aws:lambda:us-east-1:123456789012:function:agentsfleet-"+name)
				w.Write(payload)
				return
			}
			<-r.Context().Done() // no invocation: the binary waits until stopped
		case r.Method == http.MethodPost && (r.URL.Path == invocation+"req-1/response" || r.URL.Path == invocation+"req-1/error"):
			b, _ := io.ReadAll(r.Body)
			w.WriteHeader(http.StatusAccepted)
			answered <- path.Base(r.URL.Path) + " " + string(b)
		default:
			http.Error(w, "unexpected "+r.URL.Path, http.StatusNotFound)
		}
	}))
	defer runtime.Close()

	home := t.TempDir()
	env := []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home,
		"AWS_LAMBDA_RUNTIME_API=" + strings.TrimPrefix(runtime.URL, "http://"),
		"AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=AKIDCOLDSTART", "AWS_SECRET_ACCESS_KEY=cold", "AWS_SESSION_TOKEN=start",
		"AWS_ENDPOINT_URL=" + aws.URL, "AWS_EC2_METADATA_DISABLED=true",
		"AWS_CONFIG_FILE=" + filepath.Join(home, "config"), "AWS_SHARED_CREDENTIALS_FILE=" + filepath.Join(home, "credentials"),
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=512", "AWS_LAMBDA_FUNCTION_VERSION=$LATEST",
	}
	for k, v := range settings(name) {
		env = append(env, k+"="+v)
	}
	var stderr strings.Builder
	cmd := exec.Command(filepath.Join(built, name))
	cmd.Env, cmd.Stderr, cmd.Stdout = env, &stderr, &stderr
	exited := make(chan error, 1)
	began := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { exited <- cmd.Wait() }()
	var s start
	select {
	case at := <-polled:
		s.ready = at.Sub(began)
	case err := <-exited:
		t.Fatalf("%s exited before it was ready (%v):\n%s", name, err, stderr.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("%s did not poll for an invocation within 30 s:\n%s", name, stderr.String())
	}
	if payload != nil {
		select {
		case s.answer = <-answered:
		case err := <-exited:
			t.Fatalf("%s exited before it answered (%v):\n%s", name, err, stderr.String())
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			t.Fatalf("%s did not answer its invocation within 30 s:\n%s", name, stderr.String())
		}
	}
	// A moment for anything started in the background at set-up to show.
	time.Sleep(20 * time.Millisecond)
	cmd.Process.Kill()
	<-exited
	mu.Lock()
	s.awsCalls = calls
	mu.Unlock()
	return s
}

// TestNoAWSCallBeforeTheFirstRequest starts each function with a
// deployment's settings: it must reach its first poll for an invocation
// having made no AWS request (secrets, clients that read them and the
// like are made on the first request that needs them).
func TestNoAWSCallBeforeTheFirstRequest(t *testing.T) {
	for _, name := range append([]string{"minimal"}, functions...) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if s := startOnce(t, name); len(s.awsCalls) > 0 {
				t.Errorf("%s made %d AWS requests before its first invocation: %q", name, len(s.awsCalls), s.awsCalls)
			}
		})
	}
}

// TestEachBinaryServesItsHandler gives each function's bootstrap one
// invocation that its handler refuses in words of its own, before any AWS
// call, so that the answer shows which handler main registered: the one
// the local stack registers (Runner.Handle, slack.Function.Invoke,
// Keeper.Handle, web.Service.Invoke, API.HandleGateway). The runner once
// registered a handler of its own that read {"run_id"} alone and ran a
// child agent's invocation as the run's own agent.
func TestEachBinaryServesItsHandler(t *testing.T) {
	for name, want := range map[string]struct{ payload, answer string }{
		"runner":   {`{"child_id": "child_1"}`, `error {"errorMessage":"runner: the payload must be {\"run_id\": \"…\"} or {\"run_id\": \"…\", \"child_id\": \"…\"}`},
		"slack":    {`{"op": "line"}`, "error " + `{"errorMessage":"the payload is neither an API Gateway request nor a thread.Request`},
		"schedule": {`{"fleet": "f"}`, "error " + `{"errorMessage":"schedule payload {\"fleet\": \"f\"}: want fleet and schedule_id"`},
		"webtools": {`{"tool": "nope"}`, `response {"output":"unknown web tool \"nope\"`},
		"api":      {`{"rawPath": "/v1/nope", "requestContext": {"http": {"method": "GET"}}}`, `response {"statusCode":404,"headers":{"Content-Type":"application/json"}`},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := invokeOnce(t, name, []byte(want.payload))
			if !strings.HasPrefix(s.answer, want.answer) {
				t.Errorf("%s answered %s\nwant it to begin %s", name, s.answer, want.answer)
			}
			if len(s.awsCalls) > 0 {
				t.Errorf("%s made AWS requests: %q", name, s.awsCalls)
			}
		})
	}
}

// TestAnEagerBinaryIsSeen makes sure the check above can fail: a binary
// that reads a secret before lambda.Start is seen doing it.
func TestAnEagerBinaryIsSeen(t *testing.T) {
	t.Parallel()
	s := startOnce(t, "eager")
	if len(s.awsCalls) != 1 || !strings.Contains(s.awsCalls[0], "secretsmanager.GetSecretValue") {
		t.Errorf("eager's AWS requests = %q, want its one GetSecretValue", s.awsCalls)
	}
}

// TestNoTemplatePackages: no function links text/template (html/template
// imports it), which can call any exported method by name, so that the
// linker keeps every exported method of every type held in an interface:
// with it the runner's binary was 106 MB instead of 44, most of it AWS SDK
// operations it never calls.
func TestNoTemplatePackages(t *testing.T) {
	t.Parallel()
	var pkgs []string
	for _, name := range functions {
		pkgs = append(pkgs, binaries[name])
	}
	cmd := exec.Command("go", append([]string{"list", "-tags", "lambda.norpc", "-deps", "-f", "{{.ImportPath}}"}, pkgs...)...)
	cmd.Dir = filepath.Join("..", "..")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if pkg == "text/template" || pkg == "html/template" {
			t.Errorf("a function links %s; find which with: go list -tags lambda.norpc -deps -f '{{.ImportPath}} {{.Imports}}' ./functions/... | grep template", pkg)
		}
	}
}

// readyQuantiles starts name n times and returns the median and the
// fastest start-to-ready times.
func readyQuantiles(b *testing.B, name string, n int) (median, fastest time.Duration) {
	var ds []time.Duration
	for range n {
		ds = append(ds, startOnce(b, name).ready)
	}
	slices.Sort(ds)
	return ds[len(ds)/2], ds[0]
}

// BenchmarkColdStart measures each function's start-to-ready time (exec
// to its first poll of the Runtime API) against the minimal aws-lambda-go
// binary's, in the same run: the median of 15 starts each, with the page
// cache warm (Lambda's download and unpacking of the zip are not here).
// The ratio is function/minimal; the difference is what the function's
// own set-up and its packages' initialisation cost.
func BenchmarkColdStart(b *testing.B) {
	const starts = 15
	base, _ := readyQuantiles(b, "minimal", starts)
	b.ReportMetric(float64(base.Microseconds())/1000, "minimal-ms")
	for _, name := range functions {
		med, fastest := readyQuantiles(b, name, starts)
		size := int64(0)
		if fi, err := os.Stat(filepath.Join(built, name)); err == nil {
			size = fi.Size()
		}
		b.ReportMetric(float64(med.Microseconds())/1000, name+"-ms")
		b.ReportMetric(float64(med)/float64(base), name+"/minimal")
		b.Logf("%-8s ready in %6.1f ms (fastest %6.1f) against minimal %5.1f ms: %.2f×; binary %.1f MB",
			name, float64(med.Microseconds())/1000, float64(fastest.Microseconds())/1000, float64(base.Microseconds())/1000,
			float64(med)/float64(base), float64(size)/1e6)
	}
}

// TestEachFunctionLinksItsOwn: a function links its own builder alone
// (shared/deploy/<name>fn), and only the runner links the model
// providers' SDKs and the ECS and EC2 clients of its sandboxes: a package
// linked is a package initialised at every cold start. (When the five
// builders were one package, every function linked all of them: the api,
// schedule and slack functions were 35 MB instead of 13.) The functions
// that start runs (api, slack, schedule) link neither the agent loop, the
// model's vocabulary, the web tools' HTML stack nor the local clock: they
// start runs through shared/run/start and read run events from shared/run.
func TestEachFunctionLinksItsOwn(t *testing.T) {
	t.Parallel()
	runnerOnly := []string{
		"github.com/agentsfleet/agentsfleet/shared/model/provider",
		"github.com/aws/aws-sdk-go-v2/service/bedrockruntime",
		"github.com/aws/aws-sdk-go-v2/service/ecs",
		"github.com/aws/aws-sdk-go-v2/service/ec2",
		"github.com/openai/openai-go/v3",
		"github.com/anthropics/anthropic-sdk-go/v2",
	}
	notDoors := []string{
		"github.com/agentsfleet/agentsfleet/shared/runner",
		"github.com/agentsfleet/agentsfleet/shared/model",
		"github.com/agentsfleet/agentsfleet/shared/web",
		"github.com/agentsfleet/agentsfleet/shared/schedule/clock",
		"golang.org/x/net/html",
		"codeberg.org/readeck/go-readability/v2",
	}
	for _, name := range functions {
		cmd := exec.Command("go", "list", "-tags", "lambda.norpc", "-deps", "-f", "{{.ImportPath}}", binaries[name])
		cmd.Dir = filepath.Join("..", "..")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go list %s: %v\n%s", name, err, out)
		}
		deps := strings.Fields(string(out))
		for _, pkg := range deps {
			if builder, ok := strings.CutPrefix(pkg, "github.com/agentsfleet/agentsfleet/shared/deploy/"); ok && strings.HasSuffix(builder, "fn") && builder != name+"fn" {
				t.Errorf("the %s function links %s, another function's builder", name, pkg)
			}
		}
		if name == "runner" {
			continue
		}
		for _, pkg := range runnerOnly {
			if slices.Contains(deps, pkg) {
				t.Errorf("the %s function links %s, which only the runner needs", name, pkg)
			}
		}
		if name == "webtools" {
			continue
		}
		for _, pkg := range notDoors {
			if slices.Contains(deps, pkg) {
				t.Errorf("the %s function links %s, which a function starting runs must not", name, pkg)
			}
		}
	}
}

// maxInitAllocs is the most allocations one package's initialisation may
// make in a function. The largest today are the SDK's generated schemas
// of the services a function calls (ECS's, some 5,000); the JSON Schema
// validator's drafts, compiled in its init upstream, were 21,000 and 7 ms
// of every cold start (see third_party/jsonschema).
const maxInitAllocs = 10_000

// TestNoHeavyPackageInit: no package linked into a function does much at
// initialisation, which every cold start pays whether or not a request
// needs it. It reads the runtime's own account (GODEBUG=inittrace=1),
// which counts allocations, not time.
func TestNoHeavyPackageInit(t *testing.T) {
	t.Parallel()
	for _, name := range functions {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		cmd := exec.CommandContext(ctx, filepath.Join(built, name))
		// Outside Lambda the binary stops once initialised: it finds no
		// runtime API to ask for work.
		cmd.Env = []string{"GODEBUG=inittrace=1", "HOME=" + t.TempDir()}
		out, _ := cmd.CombinedOutput()
		cancel()
		seen := 0
		for line := range strings.Lines(string(out)) {
			// init PKG @T ms, C ms clock, B bytes, A allocs
			f := strings.Fields(line)
			if len(f) != 11 || f[0] != "init" || f[10] != "allocs" {
				continue
			}
			seen++
			allocs, err := strconv.Atoi(f[9])
			if err != nil {
				t.Fatalf("%s: inittrace line %q: %v", name, line, err)
			}
			if allocs > maxInitAllocs {
				t.Errorf("the %s function's package %s makes %d allocations at initialisation (at most %d): make it do that work on first use", name, f[1], allocs, maxInitAllocs)
			}
		}
		if seen == 0 {
			t.Fatalf("%s printed no inittrace lines:\n%s", name, out)
		}
	}
}
