//go:build linux

package runner_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"image/png"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/model/anthropic"
	"github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/launchtest"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// A screenshot's PNG reaches the model on the turn after the call, and
// stays out of everything else the run writes: the tool.result event and
// the checkpoint's turns name it by its key in the checkpoint bucket,
// where it is whole; a run resumed in another invocation reads it back
// from there, once, and gives the model the same image again.

// countedBlobs is a BlobStore that counts the reads of each key.
type countedBlobs struct {
	runner.BlobStore
	mu   sync.Mutex
	gets map[string]int
}

func (b *countedBlobs) Get(ctx context.Context, key string) ([]byte, error) {
	b.mu.Lock()
	b.gets[key]++
	b.mu.Unlock()
	return b.BlobStore.Get(ctx, key)
}

func (b *countedBlobs) reads(key string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.gets[key]
}

// screenshotThen is a script that calls screenshot, reads each of paths
// in a turn of its own, and answers answer.
func screenshotThen(answer string, paths ...string) string {
	script := "[[turn]]\n[[turn.tool_call]]\nname = \"screenshot\"\n"
	for _, p := range paths {
		script += fmt.Sprintf("[[turn]]\n[[turn.tool_call]]\nname = \"read\"\narguments = { path = %q }\n", p)
	}
	return script + fmt.Sprintf("[[turn]]\ntext = %q\n", answer)
}

// shotScript calls screenshot, then reads a.txt, then answers with the
// image it was given.
var shotScript = screenshotThen("saw {{last_image}}", "a.txt")

// sawScreenshot is what shotScript answers when the model was given
// runner.Screenshot.
func sawScreenshot() string {
	pic := runner.Screenshot()
	return fmt.Sprintf("saw %d×%d image/png, %d bytes, sha256 %x", runner.ScreenshotWidth, runner.ScreenshotHeight, len(pic), sha256.Sum256(pic))
}

// imageEnv is an env whose sandboxes have a browser, over a checkpoint
// bucket of its own (blobs: nil for none), its model recorded.
func imageEnv(t *testing.T, script string, blobs bool, opts ...func(*runner.Config)) (*env, *recorder, *countedBlobs) {
	t.Helper()
	var rec *recorder
	var cb *countedBlobs
	e := newEnv(t, script, append([]func(*runner.Config){func(c *runner.Config) {
		c.Display = true
		c.Sandboxes.(*launchtest.Launcher).Replace = []tool.Tool{runner.FixedScreenshot()}
		if blobs {
			cb = &countedBlobs{BlobStore: s3Blobs(t), gets: map[string]int{}}
			c.Blobs = cb
		}
	}}, append(opts, func(c *runner.Config) {
		rec = &recorder{Model: c.Model}
		c.Model = rec
	})...)...)
	e.write("a.txt", "notes\n")
	return e, rec, cb
}

// checkImageEvent checks that the run's screenshot result names the image
// by a key under the run's checkpoints whose blob is runner.Screenshot, and
// that no event, nor any turn of the checkpoint, holds its data.
func checkImageEvent(t *testing.T, e *env, blobs runner.BlobStore, id string) {
	t.Helper()
	pic := runner.Screenshot()
	var shot *run.ToolResult
	for _, r := range e.results(id) {
		if r.Name == "screenshot" {
			shot = &r
		}
	}
	if shot == nil || shot.Image == nil {
		t.Fatalf("the screenshot's tool.result has no image: %+v", shot)
	}
	img := shot.Image
	if img.MediaType != "image/png" || img.Width != runner.ScreenshotWidth || img.Height != runner.ScreenshotHeight || img.Bytes != len(pic) ||
		!strings.HasPrefix(img.Ref, "checkpoints/"+id+"/image-") || !strings.HasSuffix(img.Ref, ".png") {
		t.Errorf("tool.result image got %+v, want a %d-byte %d×%d image/png under checkpoints/%s/", img, len(pic), runner.ScreenshotWidth, runner.ScreenshotHeight, id)
	}
	kept, err := blobs.Get(ctx, img.Ref)
	if err != nil {
		t.Fatalf("the image's blob: %v", err)
	}
	if !bytes.Equal(kept, pic) {
		t.Errorf("the blob at %s is %d bytes, not the screenshot's %d", img.Ref, len(kept), len(pic))
	}
	if cfg, err := png.DecodeConfig(bytes.NewReader(kept)); err != nil || cfg.Width != runner.ScreenshotWidth || cfg.Height != runner.ScreenshotHeight {
		t.Errorf("the blob decodes as %+v, %v; want a %d×%d PNG", cfg, err, runner.ScreenshotWidth, runner.ScreenshotHeight)
	}
	// Any 24 bytes of the image, in base64, would show it inline.
	inline := base64.StdEncoding.EncodeToString(pic[64:88])
	for _, ev := range e.events(id) {
		if strings.Contains(string(ev.Data), inline) || strings.Contains(string(ev.Data), `"data"`) {
			t.Errorf("event %d (%s) holds the image's data: %.300s", ev.Seq, ev.Type, ev.Data)
		}
	}
	turns, err := e.store.ListTurns(ctx, id, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	named := false
	for _, tn := range turns {
		if strings.Contains(string(tn.Data), inline) {
			t.Errorf("the turn of step %d holds the image's data", tn.Step)
		}
		named = named || strings.Contains(string(tn.Data), img.Ref)
	}
	if !named {
		t.Errorf("no turn of the checkpoint names the image %s", img.Ref)
	}
}

// TestScreenshotReachesTheModel: the scripted model is given the
// screenshot's very PNG on its next turns.
func TestScreenshotReachesTheModel(t *testing.T) {
	t.Parallel()
	e, rec, blobs := imageEnv(t, shotScript, true)
	id := e.start(e.fleet(definition("shots", "screenshot", "read")), "look at the page")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != sawScreenshot() {
		t.Fatalf("run %s, answer %q; want it succeeded with %q", run.Status, end.Answer, sawScreenshot())
	}
	shot := e.results(id)[0]
	if shot.Image == nil {
		t.Fatalf("the screenshot's tool.result has no image: %+v", shot)
	}
	// This invocation made the image: it never read it back.
	if n := blobs.reads(shot.Image.Ref); n != 0 {
		t.Errorf("the image was read %d times, want 0", n)
	}
	checkImageEvent(t, e, blobs, id)
	// The image went with the calls, from the one after the screenshot.
	for n := 2; n <= 3; n++ {
		msgs := rec.call(n)
		img := msgs[2].Content[0].ToolResult.Image
		if img == nil || !bytes.Equal(img.Data, runner.Screenshot()) {
			t.Errorf("model call %d was not given the screenshot: %+v", n, msgs[2].Content[0].ToolResult)
		}
	}
}

// TestScreenshotWithoutBucket: a runner without a checkpoint bucket
// cannot keep an image by reference: the result goes without it, saying
// so, and the run goes on.
func TestScreenshotWithoutBucket(t *testing.T) {
	t.Parallel()
	e, _, _ := imageEnv(t, shotScript, false)
	id := e.start(e.fleet(definition("shots", "screenshot", "read")), "look at the page")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	if run, end := e.ended(id); run.Status != store.StatusSucceeded || end.Answer != "saw" {
		t.Fatalf("run %s, answer %q; want it succeeded without an image", run.Status, end.Answer)
	}
	shot := e.results(id)[0]
	if shot.Image != nil || !strings.Contains(shot.Output, "[The image this call made was left out: this runner has no checkpoint bucket to keep it in]") {
		t.Errorf("tool.result got %+v, want no image and an output saying why", shot)
	}
}

// TestResumedRunResendsTheImage: a run handed over to a new invocation
// after its screenshot step gives the model the same image from the
// bucket, read once for both of that invocation's model calls (the
// scripted model refuses an image without its data).
func TestResumedRunResendsTheImage(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	e, rec, blobs := imageEnv(t, shotScript, true, func(c *runner.Config) {
		clock.on(c)
		c.Margin = time.Minute
	})
	// The deadline comes near in the first model call: the run is handed
	// over once the screenshot step is committed.
	rec.onCall = func(n int) {
		if n == 1 {
			clock.Advance(time.Hour)
		}
	}
	id := e.start(e.fleet(definition("shots", "screenshot", "read")), "look at the page")
	first, cancel := context.WithDeadline(ctx, clock.Now().Add(time.Hour))
	defer cancel()
	if err := e.runner.Run(first, id); err != nil {
		t.Fatal(err)
	}
	e.local.Wait()
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != sawScreenshot() {
		t.Fatalf("run %s, answer %q; want it succeeded with %q", run.Status, end.Answer, sawScreenshot())
	}
	if n := rec.calls(); n != 3 {
		t.Fatalf("%d model calls, want 3", n)
	}
	shot := e.results(id)[0]
	if shot.Image == nil {
		t.Fatalf("the screenshot's tool.result has no image: %+v", shot)
	}
	ref := shot.Image.Ref
	if n := blobs.reads(ref); n != 1 {
		t.Errorf("the image was read back %d times, want once", n)
	}
	checkImageEvent(t, e, blobs, id)
	for n := 2; n <= 3; n++ {
		img := rec.call(n)[2].Content[0].ToolResult.Image
		if img == nil || img.Ref != ref || !bytes.Equal(img.Data, runner.Screenshot()) {
			t.Errorf("model call %d was not given the screenshot again: %+v", n, img)
		}
	}
}

// messagesFake is a Messages API that calls screenshot, then answers once
// it is given the screenshot as the API documents a tool result's image;
// it reports the usage a real one would, the image counted in the input.
type messagesFake struct {
	t     *testing.T
	mu    sync.Mutex
	calls int
}

const (
	fakeShotInput, fakeShotOutput     = 412, 18
	fakeAnswerInput, fakeAnswerOutput = 1503, 9
)

func (f *messagesFake) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	f.mu.Lock()
	f.calls++
	n := f.calls
	f.mu.Unlock()
	var events []string
	switch n {
	case 1:
		events = []string{
			`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":` + fmt.Sprint(fakeShotInput) + `,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_shot","name":"screenshot","input":{}}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{}"}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":` + fmt.Sprint(fakeShotOutput) + `}}`,
			`{"type":"message_stop"}`,
		}
	case 2:
		if msg := f.refusal(body); msg != "" {
			f.t.Errorf("messages fake: %s", msg)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			fmt.Fprintf(w, `{"type":"error","error":{"type":"invalid_request_error","message":%q}}`, msg)
			return
		}
		events = []string{
			`{"type":"message_start","message":{"id":"msg_2","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":` + fmt.Sprint(fakeAnswerInput) + `,"output_tokens":1}}}`,
			`{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`,
			`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"A login page."}}`,
			`{"type":"content_block_stop","index":0}`,
			`{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":` + fmt.Sprint(fakeAnswerOutput) + `}}`,
			`{"type":"message_stop"}`,
		}
	default:
		f.t.Errorf("messages fake: call %d, want 2", n)
		http.Error(w, "no more answers", http.StatusTeapot)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	for _, ev := range events {
		var typ struct{ Type string }
		json.Unmarshal([]byte(ev), &typ)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", typ.Type, ev)
	}
}

// refusal says what is wrong with the second request, "" when its last
// message is the screenshot's tool_result as the Messages API documents
// it: content [text, {type: "image", source: {type: "base64", media_type:
// "image/png", data}}], data the screenshot's PNG.
func (f *messagesFake) refusal(body []byte) string {
	var req struct {
		Messages []struct {
			Role    string `json:"role"`
			Content []struct {
				Type      string `json:"type"`
				ToolUseID string `json:"tool_use_id"`
				Content   []struct {
					Type   string `json:"type"`
					Text   string `json:"text"`
					Source *struct {
						Type      string `json:"type"`
						MediaType string `json:"media_type"`
						Data      string `json:"data"`
					} `json:"source"`
				} `json:"content"`
			} `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil || len(req.Messages) != 3 {
		return fmt.Sprintf("want 3 messages: %.300s", body)
	}
	last := req.Messages[2]
	if last.Role != "user" || len(last.Content) != 1 || last.Content[0].Type != "tool_result" || last.Content[0].ToolUseID != "toolu_shot" {
		return fmt.Sprintf("the last message is not toolu_shot's tool_result: %+v", last)
	}
	c := last.Content[0].Content
	if len(c) != 2 || c[0].Type != "text" || c[1].Type != "image" || c[1].Source == nil {
		return fmt.Sprintf("the tool_result's content is not [text, image]: %+v", c)
	}
	src := c[1].Source
	data, err := base64.StdEncoding.DecodeString(src.Data)
	if src.Type != "base64" || src.MediaType != "image/png" || err != nil || !bytes.Equal(data, runner.Screenshot()) {
		return fmt.Sprintf("the image source is %s %s of %d bytes (%v), not the screenshot's base64 PNG", src.Type, src.MediaType, len(data), err)
	}
	return ""
}

// TestScreenshotReachesAnthropic: through the Anthropic provider, the
// model's second request carries the screenshot as a tool_result image
// block, and the tokens the API reports for it are the run's.
func TestScreenshotReachesAnthropic(t *testing.T) {
	t.Parallel()
	fake := &messagesFake{t: t}
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	m, err := anthropic.New(anthropic.Config{BaseURL: srv.URL, APIKey: "sk-ant-test", HTTPClient: srv.Client()})
	if err != nil {
		t.Fatal(err)
	}
	e, _, blobs := imageEnv(t, "[[turn]]\ntext = \"unused\"\n", true, func(c *runner.Config) {
		c.Model, c.DefaultModel = m, "claude-sonnet-4-5"
	})
	id := e.start(e.fleet(definition("shots", "screenshot")), "what does the page show?")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	got, end := e.ended(id)
	if got.Status != store.StatusSucceeded || end.Answer != "A login page." {
		t.Fatalf("run %s, answer %q, error %+v", got.Status, end.Answer, end.Error)
	}
	checkImageEvent(t, e, blobs, id)
	want := run.Usage{InputTokens: fakeShotInput + fakeAnswerInput, OutputTokens: fakeShotOutput + fakeAnswerOutput, ToolCalls: 1}
	if end.Usage != want {
		t.Errorf("usage got %+v, want the API's %+v", end.Usage, want)
	}
	if total := want.InputTokens + want.OutputTokens; got.Spent.Tokens != total {
		t.Errorf("tokens spent of the budget got %d, want %d", got.Spent.Tokens, total)
	}
}

// cutScript calls screenshot, reads big.txt and two medium files, and
// answers with the image it still has, if any.
var cutScript = screenshotThen("done{{last_image}}", "big.txt", "m1.txt", "m2.txt")

// usageRecorder keeps the input tokens each call reported.
type usageRecorder struct {
	*recorder
	mu    sync.Mutex
	input []int64
}

func (u *usageRecorder) Converse(ctx context.Context, req model.Request) (model.Response, error) {
	resp, err := u.recorder.Converse(ctx, req)
	u.mu.Lock()
	u.input = append(u.input, resp.Usage.InputTokens)
	u.mu.Unlock()
	return resp, err
}

// TestCutDropsOlderImages: once the conversation nears the context window,
// cutting older outputs drops the screenshot too, for a note saying it was
// there: the model's next call has no image, and the checkpoint no longer
// names it (the event still does).
func TestCutDropsOlderImages(t *testing.T) {
	t.Parallel()
	files := func(e *env) {
		line := strings.Repeat("y", 99) + "\n"
		e.write("big.txt", strings.Repeat(line, 120)) // some 3,000 tokens
		e.write("m1.txt", strings.Repeat(line, 40))   // some 1,000 each
		e.write("m2.txt", strings.Repeat(line, 40))
	}
	// A first run measures what the conversation takes before any result:
	// the system prompt and the tools.
	var probe *usageRecorder
	pe, _, _ := imageEnv(t, cutScript, true, func(c *runner.Config) {
		probe = &usageRecorder{recorder: &recorder{Model: c.Model}}
		c.Model = probe
	})
	files(pe)
	pid := pe.start(pe.fleet(definition("cut", "screenshot", "read")), "look, then read")
	if err := pe.runner.Run(ctx, pid); err != nil {
		t.Fatal(err)
	}
	if _, end := pe.ended(pid); end.Answer != "done"+strings.TrimPrefix(sawScreenshot(), "saw ") {
		t.Fatalf("the probe run answered %q, want the image seen to the end", end.Answer)
	}
	base := probe.input[0]
	// Before the fourth call some base+4,100 tokens: under the limit.
	// Before the fifth some base+5,100: over it; with the older outputs
	// cut and the image dropped, some base+2,400: under it again.
	limit := base + 4600
	e, rec, _ := imageEnv(t, cutScript, true, func(c *runner.Config) { c.ContextTokens = limit * 10 / 8 })
	files(e)
	// The conversation is cut in place: look at the image as each call
	// is made.
	imaged := map[int]bool{}
	rec.onCall = func(n int) {
		if msgs := rec.call(n); len(msgs) > 2 {
			imaged[n] = msgs[2].Content[0].ToolResult.Image != nil
		}
	}
	id := e.start(e.fleet(definition("cut", "screenshot", "read")), "look, then read")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "done" {
		t.Fatalf("run %s, answer %q, error %+v, inputs %v (base %d); want it succeeded without the image", run.Status, end.Answer, end.Error, probe.input, base)
	}
	if n := rec.calls(); n != 5 {
		t.Fatalf("%d model calls, want 5 (no summary)", n)
	}
	if want := map[int]bool{2: true, 3: true, 4: true, 5: false}; !maps.Equal(imaged, want) {
		t.Fatalf("the calls that had the image got %v, want %v", imaged, want)
	}
	got := rec.call(5)[2].Content[0].ToolResult
	if !strings.Contains(got.Output, "[A 320×200 image (image/png) this call made was here; it was dropped to keep the conversation within the model's context.") {
		t.Errorf("the fifth call's screenshot result got output %q; want it saying the image was dropped", got.Output)
	}
	ref := e.results(id)[0].Image
	if ref == nil {
		t.Fatal("the screenshot's tool.result lost its image")
	}
	turns, err := e.store.ListTurns(ctx, id, "", 0, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, tn := range turns {
		if strings.Contains(string(tn.Data), ref.Ref) {
			t.Errorf("the turn of step %d still names the dropped image", tn.Step)
		}
	}
}
