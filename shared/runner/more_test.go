//go:build linux

package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/web"
)

// TestWebToolGoesThroughTheWebtoolsFunction: http_request reaches a local
// server through the webtools function (in-process here, a Lambda in AWS)
// with the fleet's host list.
func TestWebToolGoesThroughTheWebtoolsFunction(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "status page: all green (%s %s)", r.Method, r.URL.Path)
	}))
	defer srv.Close()
	u, _ := url.Parse(srv.URL)
	addr := netip.MustParseAddrPort(u.Host)
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "http_request"
arguments = { url = "`+srv.URL+`/health" }
[[turn.tool_call]]
name = "http_request"
arguments = { url = "http://169.254.169.254/latest/meta-data/" }
[[turn]]
text = "{{output \"http_request\"}}"
`)
	svc, err := web.NewService(web.Config{AllowAddr: addr})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Webtools, svc.Invoke)
	d := e.fleet(definition("status", "http_request") + "[x-agentsfleet.network]\nhosts = [\"127.0.0.1\"]\n")
	id := e.start(d, "check")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, _ := e.ended(id)
	res := e.results(id)
	if run.Status != store.StatusSucceeded || len(res) != 2 || res[0].IsError || !strings.Contains(res[0].Output, "status page: all green (GET /health)") {
		t.Fatalf("run %s, results %+v", run.Status, res)
	}
	if !res[1].IsError || !strings.Contains(res[1].Output, "169.254.169.254") {
		t.Errorf("a request to the metadata address was not refused: %+v", res[1])
	}
}

// compactModel calls bash (whose outputs are large) until it has called
// it calls times, then answers whether its task arrived as a summary.
// Asked for a summary (no tools offered), it writes one.
type compactModel struct {
	bash, summaries atomic.Int32
	calls           int32
}

func (m *compactModel) Converse(_ context.Context, req model.Request) (model.Response, error) {
	usage := model.Usage{InputTokens: int64(len(fmt.Sprint(req.Messages)) / 4), OutputTokens: 10}
	if len(req.Tools) == 0 {
		m.summaries.Add(1)
		return model.Response{Message: model.Message{Role: model.Assistant, Content: []model.Part{{Text: "SUMMARY: printed a lot with bash"}}}, Usage: usage}, nil
	}
	if n := m.bash.Add(1); n <= m.calls {
		call := &model.ToolCall{ID: fmt.Sprintf("c%d", n), Name: "bash", Arguments: json.RawMessage(`{"command":"head -c 6000 /dev/zero | tr '\\0' x"}`)}
		return model.Response{Message: model.Message{Role: model.Assistant, Content: []model.Part{{ToolCall: call}}}, Stop: model.StopToolUse, Usage: usage}, nil
	}
	text := "the task came whole"
	if strings.Contains(req.Messages[0].Text(), "SUMMARY: printed a lot with bash") {
		text = "the task came as a summary"
	}
	return model.Response{Message: model.Message{Role: model.Assistant, Content: []model.Part{{Text: text}}}, Usage: usage}, nil
}

func TestLongRunsAreCompacted(t *testing.T) {
	t.Parallel()
	m := &compactModel{calls: 6}
	e := newEnv(t, `
[[turn]]
text = "unused"
`, func(c *runner.Config) { c.Model = m; c.ContextTokens = 4000 })
	d := e.fleet(definition("long", "bash"))
	id := e.start(d, "print a lot")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || end.Answer != "the task came as a summary" {
		t.Fatalf("run %s, answer %q", run.Status, end.Answer)
	}
	if m.summaries.Load() == 0 {
		t.Error("no summary was asked for")
	}
	if run.Spent.Tokens != end.Usage.InputTokens+end.Usage.OutputTokens {
		t.Errorf("spent %d tokens, usage says %+v: the summaries' tokens must count", run.Spent.Tokens, end.Usage)
	}
}

// TestLargeCheckpointGoesToS3: a step whose state is larger than an item
// is written to the checkpoint bucket, and the next invocation reads it
// from there.
func TestLargeCheckpointGoesToS3(t *testing.T) {
	t.Parallel()
	s3c := s3.NewFromConfig(awstest.Config(t), func(o *s3.Options) { o.UsePathStyle = true })
	bucket := strings.ToLower(awstest.UniqueName(t, "ckpt"))
	if _, err := s3c.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	clock := &steppingClock{step: 5 * time.Minute}
	clock.t.Store(time.Now().UnixNano())
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "read"
arguments = { path = "big.txt", limit = 2000 }
[[turn]]
text = "read {{output \"read\"}}"
`, func(c *runner.Config) {
		c.Blobs = runner.S3Blobs{Client: s3c, Bucket: bucket}
		c.Now = clock.Now
		c.Margin = time.Minute
	})
	line := strings.Repeat("y", 3000) + "\n"
	e.write("big.txt", strings.Repeat(line, 200)) // 600 KB: more than an item holds
	d := e.fleet(definition("big", "read"))
	id := e.start(d, "read it")
	dctx, cancel := context.WithDeadline(ctx, clock.Now().Add(12*time.Minute))
	defer cancel()
	if err := e.runner.Run(dctx, id); err != nil {
		t.Fatal(err)
	}
	e.local.Wait() // the invocation that took over, reading the blob
	run, end := e.ended(id)
	if run.Status != store.StatusSucceeded || !strings.HasPrefix(end.Answer, "read 1\t"+strings.Repeat("y", 3000)) || !end.AnswerTruncated || len(end.Answer) != afrun.MaxEventAnswer {
		t.Fatalf("run %s, answer %.80q", run.Status, end.Answer)
	}
	list, err := s3c.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(bucket), Prefix: aws.String("checkpoints/" + id + "/")})
	if err != nil || len(list.Contents) == 0 {
		t.Fatalf("no checkpoint in the bucket: %v", err)
	}
	obj, err := s3c.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(bucket), Key: list.Contents[0].Key})
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(obj.Body)
	if len(body) < 600_000 {
		t.Errorf("the blob is %d bytes", len(body))
	}
	// The event keeps a preview only.
	for _, r := range e.results(id) {
		if len(r.Output) > afrun.MaxEventOutput || !r.Truncated {
			t.Errorf("tool.result event of %d bytes, truncated %v", len(r.Output), r.Truncated)
		}
	}
}

// systemModel answers at once and keeps the system prompt it was given.
type systemModel struct{ system atomic.Value }

func (m *systemModel) Converse(_ context.Context, req model.Request) (model.Response, error) {
	m.system.Store(req.System)
	return model.Response{Message: model.Message{Role: model.Assistant, Content: []model.Part{{Text: "ok"}}}}, nil
}

// TestTheModelIsToldTheRealPaths: the instructions come first, then the
// run's folders as the sandboxes really have them.
func TestTheModelIsToldTheRealPaths(t *testing.T) {
	t.Parallel()
	m := &systemModel{}
	e := newEnv(t, "[[turn]]\ntext = \"unused\"\n", func(c *runner.Config) { c.Model = m })
	d := e.fleet(definition("paths", "read"))
	id := e.start(d, "where am I?")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	sys, _ := m.system.Load().(string)
	if !strings.HasPrefix(sys, "Do as asked.") || !strings.Contains(sys, "Your working directory is "+e.work+".") || strings.Contains(sys, "/agent keeps") {
		t.Errorf("system prompt %q: want the instructions, then the workdir %s", sys, e.work)
	}
}
