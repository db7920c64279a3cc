package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/e2e/deployment"
	"github.com/agentsfleet/agentsfleet/shared/api/webhook"
	afdeploy "github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/emulator"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web/egress"
)

var (
	lambdasOnce sync.Once
	lambdasErr  error
	synthMu     sync.Mutex
	synths      = map[string]*synthesis{}
)

// synthesis is one synthesized template, made once for the package's tests.
type synthesis struct {
	once     sync.Once
	template string
	err      error
}

// synthesized is the stack as `make synth` writes it by default (see
// synthesize).
func synthesized(t testing.TB) string { return synthesize(t, "cdk.out") }

// synthesize builds every function's bootstrap as `make lambdas` does,
// but for this machine's architecture (once for every template), and
// synthesizes the stack over them as `make synth` does into bin's folder
// out, with the OpenAI-compatible provider (so that a local fake answers
// for the model) and the CDK context values context ("key=value"), once
// for the package's tests.
func synthesize(t testing.TB, out string, context ...string) string {
	t.Helper()
	lambdas := filepath.Join(bin, "lambda")
	lambdasOnce.Do(func() {
		for _, fn := range afdeploy.Functions {
			cmd := exec.Command("go", "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags", "-s -w",
				"-o", filepath.Join(lambdas, fn, "bootstrap"), "./functions/"+fn)
			cmd.Dir, cmd.Env = root, append(os.Environ(), "CGO_ENABLED=0")
			if out, err := cmd.CombinedOutput(); err != nil {
				lambdasErr = fmt.Errorf("build %s: %v\n%s", fn, err, out)
				return
			}
		}
	})
	if lambdasErr != nil {
		t.Fatal(lambdasErr)
	}
	synthMu.Lock()
	s := synths[out]
	if s == nil {
		s = &synthesis{}
		synths[out] = s
	}
	synthMu.Unlock()
	s.once.Do(func() {
		dir := filepath.Join(bin, out)
		args := []string{"run", ".", "-c", "lambdaDir=" + lambdas, "-c", "modelProvider=openai", "-c", "model=e2e-model"}
		for _, c := range context {
			args = append(args, "-c", c)
		}
		cmd := exec.Command("go", args...)
		cmd.Dir = filepath.Join(root, "infra")
		cmd.Env = append(os.Environ(), "CDK_OUTDIR="+dir, "JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION=20")
		if b, err := cmd.CombinedOutput(); err != nil {
			s.err = fmt.Errorf("synthesize the stack (%s): %v\n%s", strings.Join(context, " "), err, b)
			return
		}
		s.template = filepath.Join(dir, "Agentsfleet.template.json")
	})
	if s.err != nil {
		t.Fatal(s.err)
	}
	return s.template
}

// deployed is the stack on this machine, with the fakes of what lies
// outside it.
type deployed struct {
	*deployment.Deployment
	dir   string // the sandbox tasks' folders: task-*/work is a task's workdir
	moto  string // moto's endpoint, for what a test reads there itself
	key   string
	log   *syncBuffer
	model *modelFake
	slack *slackFake
}

// deploy starts moto and the deployment of the default synthesized
// template (see deployTemplate).
func deploy(t testing.TB, outside *httptest.Server, extra map[string]map[string]string, convs ...conversation) *deployed {
	t.Helper()
	return deployTemplate(t, synthesized(t), outside, extra, convs...)
}

// deployTemplate starts moto and the deployment of template tmpl, with the
// model, Slack and the web behind local fakes: the only settings added to
// the template's are the SDKs' own endpoints and the test escape hatch
// (the outside server, for webtools' fetches, the runner's callbacks and
// the sandboxes' browser), which no deployment sets. The sandbox tasks'
// browser is this machine's Chromium, when it has one.
func deployTemplate(t testing.TB, tmpl string, outside *httptest.Server, extra map[string]map[string]string, convs ...conversation) *deployed {
	t.Helper()
	moto, err := emulator.Start(context.Background(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(moto.Stop)
	dp := &deployed{log: &syncBuffer{}, model: newModelFake(t, convs...), slack: newSlackFake(t, botToken)}
	allow := strings.TrimPrefix(outside.URL, "http://")
	env := map[string]map[string]string{
		"runner":   {"OPENAI_BASE_URL": dp.model.URL + "/v1", "AGENTSFLEET_TEST_ALLOW_ADDR": allow},
		"webtools": {"AGENTSFLEET_TEST_ALLOW_ADDR": allow},
		"api":      {"AGENTSFLEET_TEST_ALLOW_ADDR": allow},
		"slack":    {"AGENTSFLEET_SLACK_API_URL": dp.slack.URL + "/api/"},
	}
	for fn, vars := range extra {
		if env[fn] == nil {
			env[fn] = map[string]string{}
		}
		for k, v := range vars {
			env[fn][k] = v
		}
	}
	chromium, _ := sandbox.FindChromium() // none: a task of the browser image fails to start, saying so
	// The sandboxes' folders: their commands' user must reach them.
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		os.Chmod(d, 0o755)
	}
	d, err := deployment.Start(context.Background(), deployment.Options{
		Template: tmpl, Endpoint: moto.Endpoint, Sandboxd: filepath.Join(bin, "sandboxd"), Dir: dir,
		Secrets: map[string]string{"SlackSigningSecret": signing, "SlackBotToken": botToken,
			"ModelKeys": `{"OPENAI_API_KEY":"sk-e2e-deployed","ANTHROPIC_API_KEY":""}`},
		Env:        env,
		TaskEnv:    map[string]string{egress.AllowEnv: allow},
		Browser:    chromium,
		RetryDelay: 500 * time.Millisecond,
		Log:        dp.log,
	})
	if err != nil {
		t.Fatal(err)
	}
	dp.Deployment, dp.dir, dp.moto = d, dir, moto.Endpoint
	t.Cleanup(func() {
		d.Close()
		if t.Failed() {
			t.Logf("the deployment's output:\n%s", dp.log)
		}
	})
	apiEnv, err := d.Environment("api")
	if err != nil {
		t.Fatal(err)
	}
	// The first API key, as an operator writes it: agentsfleet table key.
	cmd := exec.Command(filepath.Join(bin, "agentsfleet"), "table", "key", "--name", apiEnv["AGENTSFLEET_TABLE"], "e2e-admin")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "AWS_ENDPOINT_URL=" + moto.Endpoint,
		"AWS_REGION=" + emulator.Region, "AWS_ACCESS_KEY_ID=operator", "AWS_SECRET_ACCESS_KEY=operator"}
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("agentsfleet table key: %v\n%s", err, out)
	}
	// "key ID (name; scopes):", the key on a line of its own, a warning.
	if lines := strings.Split(string(out), "\n"); len(lines) > 1 {
		dp.key = strings.TrimSpace(lines[1])
	}
	if dp.key == "" {
		t.Fatalf("agentsfleet table key printed no key: %q", out)
	}
	return dp
}

// call sends one request through the HTTP API with the first API key and
// decodes its JSON answer.
func (dp *deployed) call(t testing.TB, method, path, contentType string, body []byte, want int) map[string]any {
	t.Helper()
	return dp.callAs(t, dp.key, method, path, contentType, body, want)
}

// callAs is call with the API key key.
func (dp *deployed) callAs(t testing.TB, key, method, path, contentType string, body []byte, want int) map[string]any {
	t.Helper()
	req, _ := http.NewRequest(method, dp.URL()+path, bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+key)
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != want {
		t.Fatalf("%s %s: %d %s, want %d", method, path, resp.StatusCode, b, want)
	}
	var m map[string]any
	json.Unmarshal(b, &m)
	return m
}

// waitRun waits until the run ends and returns it.
func (dp *deployed) waitRun(t testing.TB, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for time.Now().Before(deadline) {
		r := dp.call(t, "GET", "/v1/runs/"+id, "", nil, http.StatusOK)
		switch r["status"] {
		case "succeeded", "failed", "cancelled":
			return r
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("run %s did not end within 2 minutes; the model fake noted %q", id, dp.model.problems)
	return nil
}

// events are the run's events, through the API.
func (dp *deployed) events(t testing.TB, id string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, e := range dp.call(t, "GET", "/v1/runs/"+id+"/events?limit=500", "", nil, http.StatusOK)["events"].([]any) {
		out = append(out, e.(map[string]any))
	}
	return out
}

// results are the outputs of the run's main agent's tool calls, by tool,
// each failed call reported.
func results(t testing.TB, events []map[string]any) (map[string]string, []string) {
	t.Helper()
	out := map[string]string{}
	var types []string
	for _, e := range events {
		types = append(types, fmt.Sprint(e["type"]))
		data, _ := e["data"].(map[string]any)
		if e["type"] == "tool.result" && (e["agent"] == nil || e["agent"] == "") {
			out[fmt.Sprint(data["name"])] += fmt.Sprint(data["output"])
		}
	}
	return out, types
}

const deployedFleet = "e2e-deployed"

const deployedDefinition = `name = "` + deployedFleet + `"
instructions = "You count lines and report briefly."
[tools]
builtin = ["read", "bash", "webfetch"]
[x-agentsfleet]
tools = ["spawn_agent", "wait_agent", "schedule_create", "message"]
[x-agentsfleet.limits]
tool_timeout_seconds = 3
`

const (
	deployedAsk      = "count the notes in the deployed sandbox"
	deployedHook     = "a webhook delivery: disk full on web-2"
	deployedMention  = "what do the notes say, deployed?"
	deployedFollowUp = "Follow-up: fetch the status page once more."
	deployedAnswer   = "notes.txt has 3 lines; the status page says 42 widgets are fine."
)

// TestDeployedEndToEnd is the stack as AWS runs it, on one machine: the
// synthesized template's functions as their real bootstraps (see package
// deployment), driven only through the public edges. A run started over
// the HTTP API writes a file in its sandbox (a moto ECS task standing on a
// real sandboxd), has a bash call stopped at the Definition's tool
// timeout in that pooled sandbox, spawns a child agent that reads the file
// (the child runs in a runner invocation of its own: {run_id, child_id})
// and waits for it, fetches a page through the webtools function, plans a
// follow-up and calls back when it ends; the follow-up is fired by
// invoking the schedule function as Scheduler does; a signed webhook and a
// Slack mention start runs of their own. Every AWS call each function made
// must be allowed by its IAM statements in the template.
func TestDeployedEndToEnd(t *testing.T) {
	var callbacks struct {
		sync.Mutex
		got []http.Header
		raw [][]byte
	}
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/callback" {
			b, _ := io.ReadAll(r.Body)
			callbacks.Lock()
			callbacks.got, callbacks.raw = append(callbacks.got, r.Header.Clone()), append(callbacks.raw, b)
			callbacks.Unlock()
			w.WriteHeader(http.StatusNoContent)
			return
		}
		fmt.Fprint(w, "<html><body><h1>Status</h1><p>All systems nominal: 42 widgets are fine.</p></body></html>")
	}))
	defer outside.Close()
	pageURL := outside.URL + "/status"

	main := conversation{marker: deployedAsk, next: func(step int, results []string) turn {
		switch step {
		case 0:
			return turn{calls: []call{{"bash", map[string]any{"command": "printf 'one\\ntwo\\nthree\\n' > notes.txt && echo written"}}}}
		case 1:
			return turn{calls: []call{{"bash", map[string]any{"command": "sleep 30; echo slept"}}}}
		case 2:
			return turn{calls: []call{{"spawn_agent", map[string]any{"task": childTask, "tools": []string{"read"}}}}}
		case 3:
			return turn{calls: []call{{"wait_agent", map[string]any{"child_id": firstMatch(childRE, results), "timeout_seconds": 60}}}}
		}
		last := strings.Join(results, "\n")
		switch {
		case strings.Contains(strings.ToLower(last), "still working"):
			return turn{calls: []call{{"wait_agent", map[string]any{"child_id": firstMatch(childRE, []string{last}), "timeout_seconds": 60}}}}
		case strings.Contains(last, childReply):
			return turn{calls: []call{{"webfetch", map[string]any{"url": pageURL}}}}
		case strings.Contains(last, "42 widgets"):
			at := time.Now().UTC().Add(time.Hour).Format("2006-01-02T15:04:05")
			return turn{calls: []call{{"schedule_create", map[string]any{"expression": "at(" + at + ")", "message": deployedFollowUp}}}}
		default:
			return turn{text: deployedAnswer}
		}
	}}
	child := conversation{marker: childTask, next: func(step int, _ []string) turn {
		if step == 0 {
			return turn{calls: []call{{"read", map[string]any{"path": "notes.txt"}}}}
		}
		return turn{text: childReply}
	}}
	later := conversation{marker: deployedFollowUp, next: func(step int, _ []string) turn {
		if step == 0 {
			return turn{calls: []call{{"webfetch", map[string]any{"url": pageURL}}}}
		}
		return turn{text: laterReply}
	}}
	hook := conversation{marker: deployedHook, next: func(int, []string) turn { return turn{text: "Look at web-2's disk."} }}
	mention := conversation{marker: deployedMention, next: func(step int, _ []string) turn {
		if step == 0 {
			return turn{calls: []call{{"message", map[string]any{"text": lineText}}}}
		}
		return turn{text: "They say one, two, three."}
	}}
	dp := deploy(t, outside, nil, main, child, later, hook, mention)

	dp.call(t, "PUT", "/v1/fleets/"+deployedFleet, "application/toml", []byte(deployedDefinition), http.StatusOK)
	// Callbacks need the fleet's webhook secret; so do webhooks.
	secret := dp.call(t, "POST", "/v1/fleets/"+deployedFleet+"/webhook-secret", "", nil, http.StatusOK)["secret"].(string)

	// A run over the HTTP API, with a completion callback.
	start, _ := json.Marshal(map[string]any{"input": deployedAsk, "callback_url": outside.URL + "/callback"})
	run := dp.call(t, "POST", "/v1/fleets/"+deployedFleet+"/runs", "application/json", start, http.StatusAccepted)
	runID, _ := run["run_id"].(string)
	ended := dp.waitRun(t, runID)
	if ended["status"] != "succeeded" || ended["answer"] != deployedAnswer {
		t.Fatalf("the API run ended %v; the model fake noted %q", ended, dp.model.problems)
	}
	events := dp.events(t, runID)
	got, types := results(t, events)
	for tool, want := range map[string]string{
		"bash": "written", "spawn_agent": "child_id", "wait_agent": childReply, "webfetch": "42 widgets", "schedule_create": "at(",
	} {
		if !strings.Contains(got[tool], want) {
			t.Errorf("the run's %s results %q, want them to contain %q", tool, got[tool], want)
		}
	}
	// The pooled Fargate sandbox stopped `sleep 30` at the fleet's 3 s.
	if strings.Contains(got["bash"], "slept") || !strings.Contains(got["bash"], "3") {
		t.Errorf("bash `sleep 30` under tool_timeout_seconds = 3 answered %q, want it stopped at the timeout", got["bash"])
	}
	var childEnded map[string]any
	childRead := ""
	for _, e := range events {
		data, _ := e["data"].(map[string]any)
		switch {
		case e["type"] == "child.ended":
			childEnded = data
		case e["type"] == "tool.result" && e["agent"] != nil && e["agent"] != "" && data["name"] == "read":
			childRead = fmt.Sprint(data["output"])
		}
	}
	if childEnded["status"] != "done" || childEnded["answer"] != childReply {
		t.Errorf("child.ended = %v, want done with %q", childEnded, childReply)
	}
	if !strings.Contains(childRead, "three") {
		t.Errorf("the child's read of notes.txt answered %q, want the file its parent wrote", childRead)
	}
	for _, typ := range []string{"run.started", "child.started", "child.ended", "run.ended"} {
		if !slices.Contains(types, typ) {
			t.Errorf("no %s event among %v", typ, types)
		}
	}
	if n := dp.Invocations("runner"); n < 2 {
		t.Errorf("the runner was invoked %d times, want the run's and its child's at least", n)
	}
	checkRunMetrics(t, dp.Metrics("runner"), runID)
	// Its cost, reckoned by the runner as it ended: the runner's time at
	// its memory and the Fargate sandbox's; the template prices no model.
	if c, _ := ended["cost"].(map[string]any); c == nil || c["compute_usd"].(float64) <= 0 || c["model_usd"] != 0.0 ||
		c["unpriced_model"] == "" || c["usd"] != c["compute_usd"] {
		t.Errorf("the run's cost on GET /v1/runs/{id}: %v", ended["cost"])
	}

	// The completion callback, signed.
	waitFor(t, "the completion callback", func() bool { callbacks.Lock(); defer callbacks.Unlock(); return len(callbacks.got) > 0 })
	callbacks.Lock()
	if h, b := callbacks.got[0], string(callbacks.raw[0]); !strings.Contains(b, runID) || !strings.Contains(b, "succeeded") ||
		(h.Get("X-Agentsfleet-Signature") == "" && h.Get("X-Agentsfleet-Callback-Signature") == "") {
		t.Errorf("the callback came with headers %v and body %s", h, b)
	}
	callbacks.Unlock()

	// The follow-up, fired as Scheduler fires it.
	env, _ := dp.Environment("runner")
	group := env["AGENTSFLEET_SCHEDULE_GROUP"]
	all, err := dp.Schedules(context.Background(), group)
	_, sweep, _ := dp.TemplateSchedule("Sweep")
	var names []string
	for _, n := range all {
		if n != sweep {
			names = append(names, n)
		}
	}
	if err != nil || len(names) != 1 {
		t.Fatalf("schedules in %s: %v, %v; want the sweep's and the follow-up", group, all, err)
	}
	if err := dp.Fire(context.Background(), group, names[0]); err != nil {
		t.Fatal(err)
	}
	later1 := dp.waitSource(t, deployedFleet, "schedule")
	if later1["status"] != "succeeded" || later1["answer"] != laterReply {
		t.Errorf("the follow-up run ended %v", later1)
	}

	// A signed webhook.
	body, _ := json.Marshal(map[string]any{"input": deployedHook})
	req, _ := http.NewRequest("POST", dp.URL()+"/v1/hooks/"+deployedFleet, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	webhook.SetHeaders(req.Header, secret, time.Now(), body)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var hooked map[string]any
	json.NewDecoder(resp.Body).Decode(&hooked)
	resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || hooked["run_id"] == nil {
		t.Fatalf("the signed webhook was answered %d %v", resp.StatusCode, hooked)
	}
	if r := dp.waitRun(t, hooked["run_id"].(string)); r["status"] != "succeeded" || r["source"] != "webhook" {
		t.Errorf("the webhook's run ended %v", r)
	}

	// A Slack mention, answered in its thread.
	dp.call(t, "PUT", "/v1/slack/routes/"+channel, "application/json", []byte(`{"fleet":"`+deployedFleet+`"}`), http.StatusOK)
	mentionBody, _ := json.Marshal(map[string]any{
		"type": "event_callback", "team_id": "T0E2E", "api_app_id": "A0E2E", "event_id": "Ev0DEPLOYED1", "event_time": time.Now().Unix(),
		"authorizations": []any{map[string]any{"team_id": "T0E2E", "user_id": "U0E2EBOT", "is_bot": true}},
		"event": map[string]any{"type": "app_mention", "user": "U0PERSON", "team": "T0E2E", "channel": channel, "ts": mentionTS, "event_ts": mentionTS,
			"text": "<@U0E2EBOT> " + deployedMention},
	})
	ts, sig := slack.Sign(signing, time.Now(), mentionBody)
	req, _ = http.NewRequest("POST", dp.URL()+"/slack/events", bytes.NewReader(mentionBody))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Slack-Request-Timestamp", ts)
	req.Header.Set("X-Slack-Signature", sig)
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("the signed app_mention was answered %d", resp.StatusCode)
	}
	slackRun := dp.waitSource(t, deployedFleet, "slack")
	if slackRun["status"] != "succeeded" {
		t.Errorf("the Slack run ended %v", slackRun)
	}
	for _, s := range []string{lineText, "They say one, two, three."} {
		waitFor(t, "the thread to show "+s, func() bool { return dp.slack.said(channel, mentionTS, s) })
	}
	if _, ok := dp.slack.streamed(channel, mentionTS); !ok {
		calls, _ := dp.slack.seen()
		t.Errorf("the answer was not streamed to the mention's thread; Slack saw %+v", calls)
	}

	if len(dp.model.problems) > 0 {
		t.Errorf("the model fake noted: %q", dp.model.problems)
	}
	// What each function did in AWS, against its IAM statements.
	for _, fn := range []string{"api", "runner", "schedule", "slack"} { // webtools reads no secret here
		if len(dp.Calls(fn)) == 0 {
			t.Errorf("the %s function made no AWS call: is its endpoint the harness'?", fn)
		}
	}
	for _, d := range dp.Denied() {
		t.Errorf("not allowed by the template: %s", d)
	}
	dp.Kill("runner", true)
	waitFor(t, "the sandboxes to stop", func() bool { return dp.SandboxTasks() == 0 })
}

// waitSource waits for the fleet's newest run from source to end.
func (dp *deployed) waitSource(t testing.TB, fleet, source string) map[string]any {
	t.Helper()
	var id string
	waitFor(t, "a run from "+source, func() bool {
		for _, r := range dp.call(t, "GET", "/v1/fleets/"+fleet+"/runs", "", nil, http.StatusOK)["runs"].([]any) {
			if r := r.(map[string]any); r["source"] == source {
				id = r["run_id"].(string)
				return true
			}
		}
		return false
	})
	return dp.waitRun(t, id)
}

// waitFor polls cond for up to a minute.
func waitFor(t testing.TB, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("waited a minute for %s", what)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

const sweptFleet = "e2e-swept"

const sweptDefinition = `name = "` + sweptFleet + `"
instructions = "You wait, then answer."
[tools]
builtin = ["bash"]
`

// TestDeployedSweep: a run whose runner process is killed mid-run, and
// whose asynchronous invocation is not retried (as when every retry
// failed too), is found by the sweep, which the template's Sweep schedule
// fires into the schedule function, and finished by a new runner
// invocation that takes the lapsed lease over. A sweep while the run's
// holder is alive re-invokes nothing. An asynchronous invocation that
// fails every attempt reaches the template's on-failure queue.
func TestDeployedSweep(t *testing.T) {
	outside := httptest.NewServer(http.NotFoundHandler())
	defer outside.Close()
	const ask = "sleep a while, then answer"
	swept := conversation{marker: ask, next: func(step int, results []string) turn {
		if step == 0 {
			return turn{calls: []call{{"bash", map[string]any{"command": "touch began; sleep 15; echo woke"}}}}
		}
		return turn{text: "Woke: " + strings.Join(results, " ")}
	}}
	dp := deploy(t, outside, map[string]map[string]string{
		"runner":   {"AGENTSFLEET_RUN_LEASE_SECONDS": "3"},
		"schedule": {"AGENTSFLEET_SWEEP_GRACE_SECONDS": "1"},
	}, swept)
	group, sweep, ok := dp.TemplateSchedule("Sweep")
	if !ok {
		t.Fatal("the template has no Sweep schedule")
	}
	fireSweep := func() {
		t.Helper()
		before := dp.Completed("schedule")
		if err := dp.Fire(context.Background(), group, sweep); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "the sweep to be done", func() bool { return dp.Completed("schedule") > before })
	}

	dp.call(t, "PUT", "/v1/fleets/"+sweptFleet, "application/toml", []byte(sweptDefinition), http.StatusOK)
	start, _ := json.Marshal(map[string]any{"input": ask})
	runID := dp.call(t, "POST", "/v1/fleets/"+sweptFleet+"/runs", "application/json", start, http.StatusAccepted)["run_id"].(string)
	// The call's events are committed with its step, once it ends: the
	// file it makes in the task's workdir says it has begun.
	waitFor(t, "the bash call to begin", func() bool {
		began, _ := filepath.Glob(filepath.Join(dp.dir, "task-*", "work", "began"))
		return len(began) > 0
	})
	// A live holder: the sweep leaves its run alone.
	invoked := dp.Invocations("runner")
	fireSweep()
	if n := dp.Invocations("runner"); n != invoked {
		t.Errorf("a sweep while the run's holder was alive invoked the runner %d times", n-invoked)
	}
	if dp.Kill("runner", true) == 0 {
		t.Fatal("no runner process was running the run")
	}
	if r := dp.call(t, "GET", "/v1/runs/"+runID, "", nil, http.StatusOK); r["status"] != "running" {
		t.Fatalf("the run whose runner was killed is %v, want running (nobody told it)", r["status"])
	}
	// Sweeps until the lease lapses and the run is taken over.
	deadline := time.Now().Add(90 * time.Second)
	var ended map[string]any
	for ended == nil && time.Now().Before(deadline) {
		fireSweep()
		r := dp.call(t, "GET", "/v1/runs/"+runID, "", nil, http.StatusOK)
		switch r["status"] {
		case "succeeded", "failed", "cancelled":
			ended = r
		default:
			time.Sleep(time.Second)
		}
	}
	if ended == nil {
		t.Fatal("the killed run was not finished by the sweeps within 90 s")
	}
	if ended["status"] != "succeeded" || !strings.Contains(fmt.Sprint(ended["answer"]), "woke") {
		t.Errorf("the swept run ended %v, want succeeded with the bash call's output", ended)
	}

	// An asynchronous invocation that fails every attempt: the on-failure
	// queue holds it, with the payload.
	queues := dp.Queues()
	if len(queues) != 1 {
		t.Fatalf("the template's queues: %v, want the on-failure destination alone", queues)
	}
	if err := dp.InvokeAsync("runner", []byte(`{"run_id": ""}`)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the failed invocation in the on-failure queue", func() bool {
		bodies, err := dp.Failed(context.Background(), queues[0])
		return err == nil && len(bodies) > 0 && strings.Contains(bodies[0], "RetriesExhausted") && strings.Contains(bodies[0], `"run_id":""`)
	})
	for _, d := range dp.Denied() {
		t.Errorf("not allowed by the template: %s", d)
	}
}

// TestDeployedPoolItemsRunnerOnly: the template lets the runner alone
// read the warm pool's items. Requests for them, made as the api, slack
// and schedule functions' code would make them (their endpoints, their
// roles' credentials; the store's own queries), are denied by the
// template; the same requests by the runner, and those functions' reads
// of other items, are allowed.
func TestDeployedPoolItemsRunnerOnly(t *testing.T) {
	outside := httptest.NewServer(http.NotFoundHandler())
	defer outside.Close()
	dp := deploy(t, outside, nil)
	env, err := dp.Environment("api")
	if err != nil {
		t.Fatal(err)
	}
	table := env[store.EnvTable]
	ctx := context.Background()
	fns := []string{"api", "runner", "schedule", "slack"}
	for _, fn := range fns {
		cfg, err := dp.AWS(fn)
		if err != nil {
			t.Fatal(err)
		}
		db := dynamodb.NewFromConfig(cfg)
		st := store.New(db, table)
		if _, err := st.ListPool(ctx, string(fleet.DefaultSandboxSize)); err != nil {
			t.Fatalf("%s: ListPool: %v", fn, err)
		}
		if _, _, err := st.ClaimedSandbox(ctx, string(fleet.DefaultSandboxSize), "run-x"); err != nil {
			t.Fatalf("%s: ClaimedSandbox: %v", fn, err)
		}
		key := func(pk, sk string) map[string]ddbtypes.AttributeValue {
			return map[string]ddbtypes.AttributeValue{store.AttrPK: &ddbtypes.AttributeValueMemberS{Value: pk}, store.AttrSK: &ddbtypes.AttributeValueMemberS{Value: sk}}
		}
		for _, k := range []map[string]ddbtypes.AttributeValue{key(store.PoolKeyPrefix+"small", "SBX#x"), key("FLEET#"+deployedFleet, "FLEET")} {
			if _, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(table), Key: k}); err != nil {
				t.Fatalf("%s: GetItem: %v", fn, err)
			}
		}
	}
	denied := map[string]int{}
	for _, d := range dp.Denied() {
		fn, _, _ := strings.Cut(d, ":")
		denied[fn]++
		if !strings.Contains(d, "dynamodb:LeadingKeys") {
			t.Errorf("denied, but not for the pool's items: %s", d)
		}
	}
	for _, fn := range fns {
		// Two queries of the pool's partition and one read of its item.
		if want := map[bool]int{true: 0, false: 3}[fn == "runner"]; denied[fn] != want {
			t.Errorf("the template denies the %s function %d of its requests for the pool's items, want %d", fn, denied[fn], want)
		}
	}
}

// checkRunMetrics: the runner function's log holds, as CloudWatch Logs
// would read it, the run's metrics (package metrics): its start from the
// API, its end, its bash calls with their latency, its sandbox claim, its
// model calls, and its child's read, under the child's id.
func checkRunMetrics(t *testing.T, docs []map[string]any, runID string) {
	t.Helper()
	sum := map[string]float64{} // "Metric Dim=Value" → total, for the run
	childRead := false
	for _, doc := range docs {
		if doc["run_id"] != runID {
			continue
		}
		directives, _ := doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)
		if len(directives) != 1 {
			t.Fatalf("a document has %d directives: %v", len(directives), doc)
		}
		d := directives[0].(map[string]any)
		if d["Namespace"] != "agentsfleet" {
			t.Errorf("namespace %v", d["Namespace"])
		}
		dim := d["Dimensions"].([]any)[0].([]any)[0].(string)
		for _, m := range d["Metrics"].([]any) {
			name := m.(map[string]any)["Name"].(string)
			v, ok := doc[name].(float64)
			if !ok {
				t.Errorf("metric %s has no number in its document: %v", name, doc)
			}
			sum[name+" "+dim+"="+fmt.Sprint(doc[dim])] += v
			if name == "ToolCalls" && doc[dim] == "read" && doc["child_id"] != nil {
				childRead = true
			}
		}
	}
	for k, want := range map[string]float64{"RunsStarted Source=api": 1, "RunsEnded Status=succeeded": 1, "ToolCalls Tool=bash": 2, "ToolErrors Tool=bash": 1} {
		if sum[k] != want {
			t.Errorf("%s = %v for the run, want %v; the runner's metrics: %v", k, sum[k], want, sum)
		}
	}
	if _, ok := sum["ToolLatency Tool=bash"]; !ok {
		t.Errorf("no bash latency among %v", sum)
	}
	if sum["SandboxClaims Claim=warm"]+sum["SandboxClaims Claim=cold"] != 1 {
		t.Errorf("the run's sandbox claims: %v, want one, warm or cold", sum)
	}
	calls := 0.0
	for k, v := range sum {
		if strings.HasPrefix(k, "ModelCalls Model=") {
			calls += v
		}
	}
	if calls < 5 { // the run's turns: five tool steps and the answer
		t.Errorf("%v model calls among %v, want the run's turns", calls, sum)
	}
	if !childRead {
		t.Errorf("the child's read is not among the metrics under its child_id")
	}
}
