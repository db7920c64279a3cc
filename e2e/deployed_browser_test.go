package e2e

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/ecs"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentsfleet/agentsfleet/shared/emulator"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	launchecs "github.com/agentsfleet/agentsfleet/shared/sandbox/launch/ecs"
	"github.com/agentsfleet/agentsfleet/shared/scope"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

const (
	browserFleet = "e2e-browser"
	plainFleet   = "e2e-plain"
	browserAsk   = "open the status page in the browser and look at it"
	plainAsk     = "say what the plain sandbox's workdir is"
	browserReply = "The page says all 42 widgets are fine; the screenshot shows it."
	plainReply   = "The workdir is the task's own."
	pageTitle    = "Widget status"
	pageText     = "All 42 widgets are fine."
)

const browserDefinition = `name = "` + browserFleet + `"
instructions = "You look at web pages."
[x-agentsfleet]
tools = ["browser_open", "screenshot"]
`

const plainDefinition = `name = "` + plainFleet + `"
instructions = "You answer briefly."
[tools]
builtin = ["bash"]
`

// TestDeployedBrowser is the browser tools through the deployed shape:
// the stack synthesized with the browser image (CDK context
// sandboxBrowser=true) has a second sandbox task definition, whose image
// is the Dockerfile's browser stage; a run of a fleet allowing
// browser_open and screenshot gets a task from it (moto's DescribeTasks
// of the task the pool recorded for the run), opens a page the test
// serves in that task's Chromium, takes a screenshot kept in the stack's
// bucket, and the model's next request holds it as an image_url data URL
// right after the tool messages. A plain fleet's run in the same
// deployment gets a task of the plain task definition. Every AWS call
// must be allowed by the template.
func TestDeployedBrowser(t *testing.T) {
	if _, err := sandbox.FindChromium(); err != nil {
		t.Skipf("%v: the browser image's tasks run this machine's Chromium", err)
	}
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `<!doctype html><title>%s</title><body style="margin:0;background:#3366cc;color:#fff"><h1>Status</h1><p>%s</p></body>`, pageTitle, pageText)
	}))
	defer outside.Close()
	pageURL := outside.URL + "/status"

	// Each run's last model call waits while the test reads which task
	// serves the run: the pool's record of it is dropped when it ends.
	browserGate, plainGate := newGate(), newGate()
	browsing := conversation{marker: browserAsk, next: func(step int, _ []string) turn {
		switch step {
		case 0:
			return turn{calls: []call{{"browser_open", map[string]any{"url": pageURL}}}}
		case 1:
			return turn{calls: []call{{"screenshot", map[string]any{}}}}
		}
		browserGate.wait()
		return turn{text: browserReply}
	}}
	plain := conversation{marker: plainAsk, next: func(step int, _ []string) turn {
		if step == 0 {
			return turn{calls: []call{{"bash", map[string]any{"command": "pwd"}}}}
		}
		plainGate.wait()
		return turn{text: plainReply}
	}}
	tmpl := synthesize(t, "cdk.out-browser", "sandboxBrowser=true")
	dp := deployTemplate(t, tmpl, outside, nil, browsing, plain)
	// A failed test lets a held call go before the fake closes.
	t.Cleanup(browserGate.open)
	t.Cleanup(plainGate.open)
	env, err := dp.Environment("runner")
	if err != nil {
		t.Fatal(err)
	}
	plainDef, browserDef := env[launchecs.EnvTaskDefinition], env[launchecs.EnvBrowserTaskDefinition]
	if plainDef == "" || browserDef == "" || plainDef == browserDef {
		t.Fatalf("the runner's task definitions: %q and browser %q, want two", plainDef, browserDef)
	}

	// A key for the browser fleet: applying a Definition that allows the
	// browser tools takes their scope.
	tool, _ := fleet.LookupTool("browser_open")
	basic := []string{scope.FleetsRead, scope.FleetsWrite, scope.RunsRead, scope.RunsWrite}
	newKey := func(name string, scopes ...string) string {
		body, _ := json.Marshal(map[string]any{"name": name, "scopes": scopes})
		return dp.call(t, "POST", "/v1/keys", "application/json", body, http.StatusCreated)["key"].(string)
	}
	without := newKey("e2e-no-browser", basic...)
	dp.callAs(t, without, "PUT", "/v1/fleets/"+browserFleet, "application/toml", []byte(browserDefinition), http.StatusForbidden)
	key := newKey("e2e-browser", append(basic, tool.Scope)...)
	dp.callAs(t, key, "PUT", "/v1/fleets/"+browserFleet, "application/toml", []byte(browserDefinition), http.StatusOK)
	dp.call(t, "PUT", "/v1/fleets/"+plainFleet, "application/toml", []byte(plainDefinition), http.StatusOK)

	st, tasks, objects := dp.stores(t)
	ctx := context.Background()
	// taskDefinitionOf is the task definition of the task the pool
	// recorded for run, under the pool's key for its kind.
	taskDefinitionOf := func(run string, browsing bool) string {
		t.Helper()
		size := string(fleet.DefaultSandboxSize)
		if browsing {
			size += "+browser"
		}
		ps, ok, err := st.ClaimedSandbox(ctx, size, run)
		if err != nil || !ok {
			t.Fatalf("the pool's record of run %s's sandbox (%s): %v, %v", run, size, ok, err)
		}
		out, err := tasks.DescribeTasks(ctx, &ecs.DescribeTasksInput{Cluster: aws.String(env[launchecs.EnvCluster]), Tasks: []string{ps.ID}})
		if err != nil || len(out.Tasks) != 1 {
			t.Fatalf("DescribeTasks %s: %v, %v", ps.ID, out, err)
		}
		return aws.ToString(out.Tasks[0].TaskDefinitionArn)
	}

	// runOn starts a run of fleet and returns it, once ended, and the task
	// definition of the task that served it.
	runOn := func(fleetName, ask string, g *gate, browsing bool) (map[string]any, string) {
		t.Helper()
		start, _ := json.Marshal(map[string]any{"input": ask})
		id := dp.callAs(t, key, "POST", "/v1/fleets/"+fleetName+"/runs", "application/json", start, http.StatusAccepted)["run_id"].(string)
		if !g.reached(2 * time.Minute) {
			t.Fatalf("the run of %s did not reach its answer within 2 minutes; the model fake noted %q", fleetName, dp.model.problems)
		}
		def := taskDefinitionOf(id, browsing)
		g.open()
		return dp.waitRun(t, id), def
	}

	// The browser run.
	ended, gotDef := runOn(browserFleet, browserAsk, browserGate, true)
	if gotDef != browserDef {
		t.Errorf("the browser run's task is of %s, want the browser task definition %s", gotDef, browserDef)
	}
	if ended["status"] != "succeeded" || ended["answer"] != browserReply {
		t.Fatalf("the browser run ended %v; the model fake noted %q", ended, dp.model.problems)
	}
	var opened, shot map[string]any
	for _, e := range dp.events(t, ended["run_id"].(string)) {
		data, _ := e["data"].(map[string]any)
		if e["type"] == "tool.result" {
			switch data["name"] {
			case "browser_open":
				opened = data
			case "screenshot":
				shot = data
			}
		}
	}
	if opened == nil || opened["is_error"] != false || !strings.Contains(fmt.Sprint(opened["output"]), pageTitle) ||
		!strings.Contains(fmt.Sprint(opened["output"]), pageText) {
		t.Errorf("browser_open's tool.result: %v, want the page's title %q and text %q", opened, pageTitle, pageText)
	}
	img, _ := shot["image"].(map[string]any)
	if shot == nil || shot["is_error"] != false || img == nil || img["ref"] == nil || img["ref"] == "" || img["media_type"] != "image/png" {
		t.Errorf("screenshot's tool.result: %v, want an image by reference", shot)
	} else {
		// The reference is the PNG's key in the stack's bucket.
		obj, err := objects.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(env[runner.EnvCheckpointBucket]), Key: aws.String(fmt.Sprint(img["ref"]))})
		if err != nil {
			t.Fatalf("the screenshot's object %v: %v", img["ref"], err)
		}
		b, _ := io.ReadAll(obj.Body)
		obj.Body.Close()
		if c, err := png.DecodeConfig(bytes.NewReader(b)); err != nil || fmt.Sprint(len(b)) != fmt.Sprint(img["bytes"]) || fmt.Sprint(c.Width) != fmt.Sprint(img["width"]) {
			t.Errorf("the screenshot's object is %d bytes (%v, %v), the event says %v", len(b), c, err, img)
		}
	}
	checkImageSent(t, dp.model.received(browserAsk))

	// A plain run in the same deployment: a task of the plain task
	// definition.
	ended, gotDef = runOn(plainFleet, plainAsk, plainGate, false)
	if gotDef != plainDef {
		t.Errorf("the plain run's task is of %s, want the plain task definition %s", gotDef, plainDef)
	}
	if ended["status"] != "succeeded" || ended["answer"] != plainReply {
		t.Errorf("the plain run ended %v; the model fake noted %q", ended, dp.model.problems)
	}

	if len(dp.model.problems) > 0 {
		t.Errorf("the model fake noted: %q", dp.model.problems)
	}
	for _, d := range dp.Denied() {
		t.Errorf("not allowed by the template: %s", d)
	}
}

// gate holds a scripted model call until the test opens it.
type gate struct {
	once       sync.Once
	at, opened chan struct{}
}

func newGate() *gate { return &gate{at: make(chan struct{}), opened: make(chan struct{})} }

// wait, in the model fake, says the call has come and waits (a minute at
// most) until the test opens the gate.
func (g *gate) wait() {
	g.once.Do(func() { close(g.at) })
	select {
	case <-g.opened:
	case <-time.After(time.Minute):
	}
}

// reached waits up to d for a call at the gate.
func (g *gate) reached(d time.Duration) bool {
	select {
	case <-g.at:
		return true
	case <-time.After(d):
		g.open()
		return false
	}
}

func (g *gate) open() {
	select {
	case <-g.opened:
	default:
		close(g.opened)
	}
}

// checkImageSent checks that among the model requests reqs (one run's,
// in order) one carries, right after its tool messages, a user message
// holding the screenshot as an image_url data URL of a PNG.
func checkImageSent(t *testing.T, reqs []chatRequest) {
	t.Helper()
	for _, r := range reqs {
		for i := 1; i < len(r.Messages); i++ {
			if r.Messages[i].Role != "user" || r.Messages[i-1].Role != "tool" {
				continue
			}
			var parts []struct {
				Type     string `json:"type"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			if json.Unmarshal(r.Messages[i].Content, &parts) != nil {
				continue
			}
			for _, p := range parts {
				data, ok := strings.CutPrefix(p.ImageURL.URL, "data:image/png;base64,")
				if p.Type != "image_url" || !ok {
					continue
				}
				b, err := base64.StdEncoding.DecodeString(data)
				if err != nil {
					t.Fatalf("the image_url's data is not base64: %v", err)
				}
				if c, err := png.DecodeConfig(bytes.NewReader(b)); err != nil || c.Width == 0 {
					t.Fatalf("the image_url's data is not a PNG: %v", err)
				}
				return
			}
		}
	}
	t.Errorf("none of the run's %d model requests has a user message with an image_url data URL right after its tool messages", len(reqs))
}

// stores are the stack's table, ECS and S3, read by the test itself in
// moto (as an operator would, not as a function: none of it is checked
// against the template).
func (dp *deployed) stores(t testing.TB) (*store.Store, *ecs.Client, *s3.Client) {
	t.Helper()
	env, err := dp.Environment("runner")
	if err != nil {
		t.Fatal(err)
	}
	cfg := aws.Config{Region: emulator.Region, BaseEndpoint: aws.String(dp.moto),
		Credentials: credentials.NewStaticCredentialsProvider("operator", "operator", "")}
	return store.New(dynamodb.NewFromConfig(cfg), env[store.EnvTable]), ecs.NewFromConfig(cfg),
		s3.NewFromConfig(cfg, func(o *s3.Options) { o.UsePathStyle = true })
}
