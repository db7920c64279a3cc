package post_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/slack/post"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var ctx = context.Background()

// call is one Web API call the fake saw.
type call struct {
	Method string
	Form   map[string]string
}

// fakeSlack is a local Slack Web API: it answers every method slack-go
// calls here, keeps the calls, and refuses the methods in refuse.
type fakeSlack struct {
	mu     sync.Mutex
	calls  []call
	refuse map[string]string // method → Slack error
	n      int
	srv    *httptest.Server
	upload []byte
}

func newFake(t *testing.T) *fakeSlack {
	f := &fakeSlack{refuse: map[string]string{}}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeSlack) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/upload" {
		b, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		f.upload = b
		f.mu.Unlock()
		w.WriteHeader(200)
		return
	}
	r.ParseMultipartForm(1 << 20)
	r.ParseForm()
	method := strings.TrimPrefix(r.URL.Path, "/api/")
	form := map[string]string{}
	for k, v := range r.Form {
		form[k] = v[0]
	}
	f.mu.Lock()
	f.calls = append(f.calls, call{method, form})
	f.n++
	n, refused := f.n, f.refuse[method]
	f.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	if refused != "" {
		fmt.Fprintf(w, `{"ok": false, "error": %q}`, refused)
		return
	}
	switch method {
	case "files.getUploadURLExternal":
		fmt.Fprintf(w, `{"ok": true, "upload_url": %q, "file_id": "F1"}`, f.srv.URL+"/upload")
	case "files.completeUploadExternal":
		fmt.Fprint(w, `{"ok": true, "files": [{"id": "F1", "title": "Answer"}]}`)
	default:
		fmt.Fprintf(w, `{"ok": true, "channel": %q, "ts": "1733050000.%06d"}`, form["channel"], n)
	}
}

func (f *fakeSlack) methods() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make([]string, len(f.calls))
	for i, c := range f.calls {
		out[i] = c.Method
	}
	return out
}

func (f *fakeSlack) last(method string) call {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i := len(f.calls) - 1; i >= 0; i-- {
		if f.calls[i].Method == method {
			return f.calls[i]
		}
	}
	return call{}
}

func (f *fakeSlack) reset() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = nil
}

func newPoster(t *testing.T, f *fakeSlack) *post.Poster {
	t.Helper()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "post")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	api := slack.New("xoxb-test", slack.OptionAPIURL(f.srv.URL+"/api/"))
	p, err := post.New(post.Config{Slack: api, Records: store.New(db, table), MaxInline: 2000})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func req(op thread.Op) thread.Request {
	return thread.Request{Op: op, RunID: "run_01TEST", Fleet: "ops", Channel: "C0123", ThreadTS: "1733040000.000100"}
}

func TestThreadShowsTheRun(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.refuse["assistant.threads.setStatus"] = "not_allowed_token_type" // not an assistant thread
	p := newPoster(t, f)

	if r := p.Post(ctx, req(thread.OpWorking)); !r.Delivered {
		t.Fatalf("working = %+v", r)
	}
	status := f.last("chat.postMessage")
	if status.Form["thread_ts"] != "1733040000.000100" || !strings.Contains(status.Form["blocks"], `"action_id":"`+thread.StopAction+`"`) ||
		!strings.Contains(status.Form["blocks"], `"value":"run_01TEST"`) {
		t.Fatalf("status message = %+v; want a Stop button for the run in the thread", status)
	}
	if f.last("reactions.add").Form["name"] != "hourglass_flowing_sand" {
		t.Fatalf("no reaction where the assistant status is refused: %v", f.methods())
	}

	plan := req(thread.OpPlan)
	plan.Plan = []thread.Step{{Step: "read <!here> logs", Status: "in_progress"}, {Step: "fix", Status: "pending"}}
	p.Post(ctx, plan)
	first := f.last("chat.postMessage")
	if !strings.Contains(first.Form["text"], "⏳ read &lt;!here&gt; logs") {
		t.Fatalf("plan = %q", first.Form["text"])
	}
	plan.Plan[0].Status, plan.Plan[1].Status = "completed", "in_progress"
	f.reset()
	p.Post(ctx, plan)
	if m := f.methods(); len(m) != 1 || m[0] != "chat.update" || !strings.Contains(f.last("chat.update").Form["text"], "✅ read") {
		t.Fatalf("the second plan = %v; want one chat.update of the plan message", m)
	}
	if upd := f.last("chat.update"); upd.Form["ts"] == status.Form["ts"] {
		t.Fatal("the plan edited the status message")
	}

	line := req(thread.OpLine)
	line.Text = "deploying &lt;!channel&gt;"
	if r := p.Post(ctx, line); !r.Delivered || f.last("chat.postMessage").Form["text"] != line.Text || f.last("chat.postMessage").Form["link_names"] == "true" {
		t.Fatalf("line = %+v, %+v", r, f.last("chat.postMessage"))
	}

	// The answer streams in, and the status message loses its button.
	f.reset()
	ans := req(thread.OpAnswer)
	ans.Status, ans.Text = "succeeded", strings.Repeat("all green. ", 150) // two chunks
	if r := p.Post(ctx, ans); !r.Delivered {
		t.Fatalf("answer = %+v", r)
	}
	m := strings.Join(f.methods(), " ")
	if !strings.Contains(m, "chat.startStream chat.appendStream chat.stopStream") {
		t.Fatalf("answer calls = %s", m)
	}
	done := f.last("chat.update")
	if done.Form["text"] != "Done." || strings.Contains(done.Form["blocks"], thread.StopAction) {
		t.Fatalf("status after the answer = %+v", done)
	}
}

func TestAnswerFallsBackAndUploads(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.refuse["chat.startStream"] = "missing_scope"
	p := newPoster(t, f)
	ans := req(thread.OpAnswer)
	ans.Status, ans.Text = "succeeded", "short <@U042> answer"
	if r := p.Post(ctx, ans); !r.Delivered || f.last("chat.postMessage").Form["text"] != "short &lt;@U042&gt; answer" {
		t.Fatalf("fallback = %+v, %+v", r, f.last("chat.postMessage"))
	}

	long := req(thread.OpAnswer)
	long.Status, long.Text = "succeeded", strings.Repeat("line of output\n", 200)
	if r := p.Post(ctx, long); !r.Delivered {
		t.Fatalf("long answer = %+v", r)
	}
	done := f.last("files.completeUploadExternal")
	if done.Form["thread_ts"] != long.ThreadTS || done.Form["channel_id"] != "C0123" || string(f.upload) == "" || !strings.Contains(string(f.upload), "line of output") {
		t.Fatalf("upload = %+v (%d bytes)", done, len(f.upload))
	}
}

func TestFailureIsSaidAndRefusalsReported(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newPoster(t, f)
	p.Post(ctx, req(thread.OpWorking))
	ended := req(thread.OpEnded)
	ended.Status, ended.Text = "failed", "UZ-RUN-402: run run_01TEST has 0 of 1000 tokens left"
	if r := p.Post(ctx, ended); !r.Delivered || !strings.Contains(f.last("chat.postMessage").Form["text"], "The run failed: UZ-RUN-402") {
		t.Fatalf("failure = %+v, %+v", r, f.last("chat.postMessage"))
	}
	if f.last("chat.update").Form["text"] != "Failed." {
		t.Fatalf("status after the failure = %+v", f.last("chat.update"))
	}

	f.refuse["chat.postMessage"] = "channel_not_found"
	line := req(thread.OpLine)
	line.Text = "x"
	if r := p.Post(ctx, line); r.Delivered || !strings.Contains(r.Error, "channel_not_found") {
		t.Fatalf("a refused line = %+v", r)
	}
	out, err := p.Invoke(ctx, []byte(`{"op": "line"}`))
	if err == nil {
		t.Fatalf("Invoke of a request without a thread = %s, want an error", out)
	}
	var resp thread.Response
	out, err = p.Invoke(ctx, mustJSON(line))
	if err != nil || json.Unmarshal(out, &resp) != nil || resp.Delivered {
		t.Fatalf("Invoke = %s, %v", out, err)
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}
