package slack_test

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/slack/slacktest"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var ctx = context.Background()

const secret = "test-signing-secret"

// post is one chat.postMessage the fake Slack Web API took.
type post struct {
	Channel, ThreadTS, Text string
}

// fakeSlack is Slack's Web API on loopback (slacktest): slack-go, through
// slack.WebPoster, is pointed at it.
type fakeSlack struct{ *slacktest.Server }

func newFakeSlack(t testing.TB) *fakeSlack { return &fakeSlack{slacktest.New(t, "xoxb-test-token")} }

// Posts returns the chat.postMessage calls Slack took.
func (f *fakeSlack) Posts() []post {
	var out []post
	for _, c := range f.Calls() {
		if c.Method == "chat.postMessage" && c.Error == "" {
			out = append(out, post{c.Args["channel"], c.Args["thread_ts"], c.Args["text"]})
		}
	}
	return out
}

// env is a Handler over a fresh table, its runner a function that records
// its invocations (the bench and these tests measure the door, not runs),
// and its answers posted to a fake Slack.
type env struct {
	t       testing.TB
	store   *store.Store
	local   *invoke.Local
	slack   *fakeSlack
	h       *slack.Handler
	invoked atomic.Int32
}

func newEnv(t testing.TB, cfg func(*slack.Config)) *env {
	t.Helper()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "slack")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	e := &env{t: t, store: store.New(db, table), local: invoke.NewLocal(nil), slack: newFakeSlack(t)}
	t.Cleanup(e.local.Close)
	e.local.Register(invoke.Runner, func(context.Context, []byte) ([]byte, error) {
		e.invoked.Add(1)
		return nil, nil
	})
	c := slack.Config{Store: e.store, Invoker: e.local, SigningSecret: secret, Post: slack.NewWebPoster(e.slack.Client()),
		Log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	if cfg != nil {
		cfg(&c)
	}
	h, err := slack.NewHandler(c)
	if err != nil {
		t.Fatal(err)
	}
	e.h = h
	return e
}

// fleet applies a small Definition as fleet name.
func (e *env) fleet(name string, extra ...string) {
	e.t.Helper()
	def, err := fleet.Parse([]byte("name = \""+name+"\"\ninstructions = \"Help the team.\"\n[x-agentsfleet]\ntools = [\"read\"]\n"+strings.Join(extra, "")), fleet.TOML)
	if err != nil {
		e.t.Fatal(err)
	}
	if _, err := e.store.CreateFleet(ctx, store.NewFleet{Name: name, Definition: def.Canonical(), Hash: def.Hash()}); err != nil {
		e.t.Fatal(err)
	}
}

// load reads an API Gateway request of events/slack.
func load(t testing.TB, name string) events.APIGatewayV2HTTPRequest {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "events", "slack", name))
	if err != nil {
		t.Fatal(err)
	}
	var req events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &req); err != nil {
		t.Fatal(err)
	}
	return req
}

// body is the request's body as Slack sent it.
func body(t testing.TB, req events.APIGatewayV2HTTPRequest) []byte {
	if !req.IsBase64Encoded {
		return []byte(req.Body)
	}
	b, err := base64.StdEncoding.DecodeString(req.Body)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// setBody replaces the request's body, keeping its encoding.
func setBody(req *events.APIGatewayV2HTTPRequest, b []byte) {
	if req.IsBase64Encoded {
		req.Body = base64.StdEncoding.EncodeToString(b)
	} else {
		req.Body = string(b)
	}
}

// edit changes the event JSON of an events request: f gets the outer
// object decoded.
func edit(t testing.TB, req events.APIGatewayV2HTTPRequest, f func(outer, inner map[string]any)) events.APIGatewayV2HTTPRequest {
	t.Helper()
	var outer map[string]any
	if err := json.Unmarshal(body(t, req), &outer); err != nil {
		t.Fatal(err)
	}
	inner, _ := outer["event"].(map[string]any)
	f(outer, inner)
	b, _ := json.Marshal(outer)
	req.Headers = cloneHeaders(req.Headers)
	setBody(&req, b)
	return req
}

func cloneHeaders(h map[string]string) map[string]string {
	out := make(map[string]string, len(h))
	for k, v := range h {
		out[k] = v
	}
	return out
}

// sign signs the request as Slack would now.
func sign(t testing.TB, req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPRequest {
	t.Helper()
	req.Headers = cloneHeaders(req.Headers)
	ts, sig := slack.Sign(secret, time.Now(), body(t, req))
	req.Headers["x-slack-request-timestamp"], req.Headers["x-slack-signature"] = ts, sig
	return req
}

func (e *env) send(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	e.t.Helper()
	resp, err := e.h.HandleGateway(ctx, req)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp
}

// deliver signs and sends the request and wants 200.
func (e *env) deliver(req events.APIGatewayV2HTTPRequest) events.APIGatewayV2HTTPResponse {
	e.t.Helper()
	resp := e.send(sign(e.t, req))
	if resp.StatusCode != http.StatusOK {
		e.t.Fatalf("%s answered %d %s, want 200", req.RawPath, resp.StatusCode, resp.Body)
	}
	return resp
}

// run reads a run whole (list pages leave out whom a run answers).
func (e *env) run(id string) store.Run {
	e.t.Helper()
	r, err := e.store.GetRun(ctx, id)
	if err != nil {
		e.t.Fatal(err)
	}
	return r
}

func (e *env) runs(fleetName string) []store.RunSummary {
	e.t.Helper()
	page, err := e.store.ListRuns(ctx, fleetName, "", 100)
	if err != nil {
		e.t.Fatal(err)
	}
	return page.Runs
}

const (
	channel  = "C0123ABCD"
	threadTS = "1796123395.000100" // the mention's ts: its run's thread
)

func TestURLVerification(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	req := load(t, "url_verification.json")
	resp := e.deliver(req)
	var got map[string]string
	if err := json.Unmarshal([]byte(resp.Body), &got); err != nil || got["challenge"] != "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P" {
		t.Fatalf("url_verification answered %q, want the challenge", resp.Body)
	}
	// As it is in events/ (a signature of zeros, long ago) it is refused.
	if resp := e.send(req); resp.StatusCode != http.StatusUnauthorized || strings.Contains(resp.Body, "challenge") {
		t.Fatalf("unsigned url_verification = %d %s, want 401 without the challenge", resp.StatusCode, resp.Body)
	}
}

func TestSignatureFirst(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fleet("ops")
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	req := sign(t, load(t, "app_mention.json"))
	stale := load(t, "app_mention.json") // the file's own timestamp: long ago
	tampered := req
	tampered.Headers = cloneHeaders(req.Headers)
	setBody(&tampered, []byte(strings.Replace(string(body(t, req)), "deploy", "delete", 1)))
	missing := req
	missing.Headers = cloneHeaders(req.Headers)
	delete(missing.Headers, "x-slack-signature")
	wrong := req
	wrong.Headers = cloneHeaders(req.Headers)
	wrong.Headers["x-slack-signature"] = req.Headers["x-slack-signature"] + ", v0=" + strings.Repeat("0", 64)
	for name, r := range map[string]events.APIGatewayV2HTTPRequest{"stale": stale, "tampered": tampered, "missing": missing, "joined by the gateway": wrong} {
		if resp := e.send(r); resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s: answered %d %s, want 401", name, resp.StatusCode, resp.Body)
		}
	}
	inter := load(t, "interactivity.json")
	if resp := e.send(inter); resp.StatusCode != http.StatusUnauthorized {
		t.Errorf("unsigned interactivity answered %d, want 401", resp.StatusCode)
	}
	if runs := e.runs("ops"); len(runs) != 0 || len(e.slack.Posts()) != 0 {
		t.Fatalf("refused requests left %d runs and %d posts", len(runs), len(e.slack.Posts()))
	}
}

func TestMentionStartsOneRun(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fleet("ops")
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	req := sign(t, load(t, "app_mention.json"))
	// Five deliveries of one event at once, as Slack may send when a first
	// ack was slow.
	var wg sync.WaitGroup
	codes := make([]int, 5)
	start := make(chan struct{})
	for i := range codes {
		wg.Go(func() {
			<-start
			t0 := time.Now()
			codes[i] = e.send(req).StatusCode
			if d := time.Since(t0); d > 3*time.Second {
				t.Errorf("delivery %d acked after %s, Slack's limit is 3 s", i, d)
			}
		})
	}
	close(start)
	wg.Wait()
	for i, c := range codes {
		if c != http.StatusOK {
			t.Fatalf("delivery %d answered %d, want 200", i, c)
		}
	}
	runs := e.runs("ops")
	if len(runs) != 1 {
		t.Fatalf("five deliveries of one event started %d runs, want 1", len(runs))
	}
	run := e.run(runs[0].ID)
	if run.Source != store.SourceSlack || run.Thread == nil || *run.Thread != (store.Thread{Channel: channel, ThreadTS: threadTS, User: "U0USER123", Team: "T0TEAM123"}) {
		t.Fatalf("run = %+v (thread %+v), want source slack in thread %s/%s answering U0USER123 of T0TEAM123", run, run.Thread, channel, threadTS)
	}
	input, err := e.store.GetRunInput(ctx, run.ID)
	if want := "why did last night's deploy of api & worker fail? see <logs>"; err != nil || string(input) != want {
		t.Fatalf("input = %q, %v; want %q (the mention removed, Slack's escapes undone)", input, err, want)
	}
	th, ok, err := e.store.SlackThreadRun(ctx, channel, threadTS)
	if err != nil || !ok || th.RunID != run.ID || th.Fleet != "ops" {
		t.Fatalf("thread record = %+v, %v, %v; want run %s", th, ok, err, run.ID)
	}
	e.local.Wait()
	if e.invoked.Load() < 1 {
		t.Fatal("the runner was never invoked")
	}

	// Slack's retry (X-Slack-Retry-Num) of the same event starts nothing.
	retry := load(t, "retried_delivery.json")
	if retry.Headers["x-slack-retry-num"] != "1" {
		t.Fatal("events/slack/retried_delivery.json has no X-Slack-Retry-Num")
	}
	e.deliver(retry)
	if runs := e.runs("ops"); len(runs) != 1 || runs[0].ID != run.ID {
		t.Fatalf("after a retry there are %d runs, want the one %s", len(runs), run.ID)
	}
	if posts := e.slack.Posts(); len(posts) != 0 {
		t.Fatalf("the door posted %+v; a routed mention needs no answer from it", posts)
	}
}

func TestUnroutedMention(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fleet("ops")
	req := load(t, "app_mention.json")
	e.deliver(req)
	e.deliver(load(t, "retried_delivery.json"))
	posts := e.slack.Posts()
	if len(posts) != 1 {
		t.Fatalf("posts = %+v, want one answer however often Slack delivers", posts)
	}
	p := posts[0]
	if p.Channel != channel || p.ThreadTS != threadTS ||
		!strings.Contains(p.Text, "agentsfleet slack route "+channel+" FLEET") || !strings.Contains(p.Text, "PUT /v1/slack/routes/"+channel) {
		t.Fatalf("answer = %+v, want in thread %s/%s how to route the channel", p, channel, threadTS)
	}
	if runs := e.runs("ops"); len(runs) != 0 {
		t.Fatalf("an unrouted mention started %d runs", len(runs))
	}
	// Once routed, the next mention starts a run.
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	e.deliver(edit(t, req, func(o, _ map[string]any) { o["event_id"] = "Ev0MENTION02" }))
	if runs := e.runs("ops"); len(runs) != 1 {
		t.Fatalf("a routed mention started %d runs, want 1", len(runs))
	}
}

func TestDefaultFleetAndWhyNot(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *slack.Config) { c.DefaultFleet = "ops" })
	e.fleet("ops")
	e.fleet("frozen")
	mention := func(id string) events.APIGatewayV2HTTPRequest {
		return edit(t, load(t, "app_mention.json"), func(o, in map[string]any) {
			o["event_id"] = id
			in["ts"], in["event_ts"] = "1796123399.00"+id[len(id)-1:], "1796123399.00"+id[len(id)-1:]
		})
	}
	e.deliver(mention("Ev1"))
	if runs := e.runs("ops"); len(runs) != 1 {
		t.Fatalf("a mention without a route started %d runs of the default fleet, want 1", len(runs))
	}
	// A paused fleet, and a route to it, say why nothing starts.
	if _, err := e.store.PauseFleet(ctx, "frozen"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.PutSlackRoute(ctx, channel, "frozen"); err != nil {
		t.Fatal(err)
	}
	e.deliver(mention("Ev2"))
	posts := e.slack.Posts()
	if len(posts) != 1 || !strings.Contains(posts[0].Text, "frozen is paused") || !strings.Contains(posts[0].Text, "agentsfleet resume frozen") {
		t.Fatalf("posts = %+v, want one saying frozen is paused", posts)
	}
	// A default fleet that does not exist says so.
	e2 := newEnv(t, func(c *slack.Config) { c.DefaultFleet = "ghost" })
	e2.deliver(mention("Ev3"))
	if posts := e2.slack.Posts(); len(posts) != 1 || !strings.Contains(posts[0].Text, "ghost does not exist") {
		t.Fatalf("posts = %+v, want one saying ghost does not exist", posts)
	}
	// A mention with nothing but the mention asks what to do.
	e.deliver(edit(t, load(t, "app_mention.json"), func(o, in map[string]any) {
		o["event_id"], in["text"], in["channel"] = "Ev4", "<@U0APPBOT1>  ", "C0OTHER1"
	}))
	if posts := e.slack.Posts(); len(posts) != 2 || posts[1].Channel != "C0OTHER1" || !strings.Contains(posts[1].Text, "what you want done") {
		t.Fatalf("posts = %+v, want an answer asking what to do", posts)
	}
}

func TestThreadReply(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fleet("ops")
	e.fleet("dev")
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	reply := load(t, "thread_reply.json")
	// Before any run answered in the thread, a reply there is no one's business.
	e.deliver(reply)
	if runs := e.runs("ops"); len(runs) != 0 {
		t.Fatalf("a reply in a thread without a run started %d runs", len(runs))
	}
	e.deliver(edit(t, load(t, "app_mention.json"), func(o, _ map[string]any) { o["event_id"] = "Ev0MENTION09" }))
	first := e.runs("ops")
	if len(first) != 1 {
		t.Fatalf("the mention started %d runs", len(first))
	}
	// The channel is routed elsewhere since: the thread stays with its fleet.
	if _, err := e.store.PutSlackRoute(ctx, channel, "dev"); err != nil {
		t.Fatal(err)
	}
	// The first run has ended: a reply starts a run that continues it.
	end(t, e.store, first[0].ID)
	e.deliver(reply)
	runs := e.runs("ops")
	if len(runs) != 2 || len(e.runs("dev")) != 0 {
		t.Fatalf("after the reply ops has %d runs and dev %d, want 2 and 0", len(runs), len(e.runs("dev")))
	}
	second := runs[0] // newest first
	if second.ID == first[0].ID || second.Thread == nil || *e.run(second.ID).Thread != (store.Thread{Channel: channel, ThreadTS: threadTS, User: "U0USER123", Team: "T0TEAM123"}) {
		t.Fatalf("reply's run = %+v, want a new run in thread %s", second, threadTS)
	}
	if in, _ := e.store.GetRunInput(ctx, second.ID); string(in) != "and the staging one too" {
		t.Fatalf("reply's input = %q", in)
	}
	if r, _ := e.store.GetRun(ctx, second.ID); r.Continues != first[0].ID {
		t.Fatalf("reply's run continues %q, want the thread's run %s", r.Continues, first[0].ID)
	}
	if th, _, _ := e.store.SlackThreadRun(ctx, channel, threadTS); th.RunID != second.ID {
		t.Fatalf("thread record = %s, want the newest run %s", th.RunID, second.ID)
	}
	// A direct message to the app starts a run of the default or routed fleet.
	e.deliver(edit(t, reply, func(o, in map[string]any) {
		o["event_id"], in["channel"], in["channel_type"], in["text"] = "Ev0DM0001", "D0DIRECT1", "im", "hello there"
		delete(in, "thread_ts")
	}))
	if _, err := e.store.PutSlackRoute(ctx, "D0DIRECT1", "dev"); err != nil {
		t.Fatal(err)
	}
	e.deliver(edit(t, reply, func(o, in map[string]any) {
		o["event_id"], in["channel"], in["channel_type"], in["text"] = "Ev0DM0002", "D0DIRECT1", "im", "hello there"
		delete(in, "thread_ts")
	}))
	if dm := e.runs("dev"); len(dm) != 1 || dm[0].Thread == nil || dm[0].Thread.Channel != "D0DIRECT1" {
		t.Fatalf("direct messages: dev runs %+v, want one in D0DIRECT1", dm)
	}
}

// A run answers the person whose message started it, of their own team:
// the event's user_team in a channel shared with another workspace, else
// its team, else the workspace the event came from.
func TestRunRecordsWhomItAnswers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *slack.Config) { c.DefaultFleet = "ops" })
	e.fleet("ops")
	for i, tt := range []struct {
		edit func(in map[string]any)
		team string
	}{
		{func(in map[string]any) {}, "T0TEAM123"},
		{func(in map[string]any) {
			in["user"], in["user_team"], in["source_team"] = "U0GUEST01", "T0GUEST01", "T0TEAM123"
		}, "T0GUEST01"},
		{func(in map[string]any) { delete(in, "team") }, "T0TEAM123"}, // the callback's team_id
	} {
		id := fmt.Sprintf("Ev0WHO%04d", i)
		e.deliver(edit(t, load(t, "app_mention.json"), func(o, in map[string]any) {
			o["event_id"] = id
			in["ts"], in["event_ts"] = fmt.Sprintf("1796123500.%06d", i), fmt.Sprintf("1796123500.%06d", i)
			tt.edit(in)
		}))
		var got *store.Thread
		for _, r := range e.runs("ops") {
			if r.Thread != nil && r.Thread.ThreadTS == fmt.Sprintf("1796123500.%06d", i) {
				got = e.run(r.ID).Thread
			}
		}
		want := "U0USER123"
		if i == 1 {
			want = "U0GUEST01"
		}
		if got == nil || got.User != want || got.Team != tt.team {
			t.Errorf("case %d: thread = %+v, want it to answer %s of %s", i, got, want, tt.team)
		}
	}
}

func TestIgnoredMessages(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *slack.Config) { c.DefaultFleet = "ops" })
	e.fleet("ops")
	e.deliver(edit(t, load(t, "app_mention.json"), func(o, _ map[string]any) { o["event_id"] = "Ev0MENTION00" }))
	if n := len(e.runs("ops")); n != 1 {
		t.Fatalf("setup: %d runs", n)
	}
	reply := load(t, "thread_reply.json")
	for i, f := range []func(in map[string]any){
		func(in map[string]any) {
			in["subtype"], in["bot_id"], in["text"] = "bot_message", "B0OTHER01", "deploy finished"
		},
		func(in map[string]any) { in["bot_id"] = "B0OTHER01" },
		func(in map[string]any) { in["user"], in["bot_id"] = "U0APPBOT1", "B0APPBOT1" }, // the app's own answer
		func(in map[string]any) { in["user"] = "U0APPBOT1" },
		func(in map[string]any) { in["subtype"] = "message_changed" },
		func(in map[string]any) { in["subtype"] = "channel_join" },
		func(in map[string]any) { delete(in, "thread_ts") },           // a channel message, not addressed to the app
		func(in map[string]any) { in["text"] = "<@U0APPBOT1> again" }, // its app_mention starts the run
	} {
		e.deliver(edit(t, reply, func(o, in map[string]any) {
			o["event_id"] = "Ev0IGNORE0" + string(rune('0'+i))
			f(in)
		}))
	}
	mention := load(t, "app_mention.json")
	e.deliver(edit(t, mention, func(o, in map[string]any) { o["event_id"], in["bot_id"] = "Ev0BOTMENTION", "B0OTHER01" }))
	e.deliver(edit(t, mention, func(o, in map[string]any) {
		o["event_id"], in["edited"] = "Ev0EDITED", map[string]any{"user": "U0USER123", "ts": "1796123399.000000"}
	}))
	e.deliver(edit(t, mention, func(o, in map[string]any) { o["event_id"], in["type"] = "Ev0REACTION", "reaction_added" }))
	if n := len(e.runs("ops")); n != 1 {
		t.Fatalf("bot, own, edited and other messages started %d runs, want none beyond the first", n-1)
	}
	if p := e.slack.Posts(); len(p) != 0 {
		t.Fatalf("ignored messages were answered: %+v", p)
	}
}

// stopRequest is events/slack/interactivity.json with its button naming
// runID.
func stopRequest(t testing.TB, runID, channelID string) events.APIGatewayV2HTTPRequest {
	req := load(t, "interactivity.json")
	form, err := url.ParseQuery(string(body(t, req)))
	if err != nil {
		t.Fatal(err)
	}
	payload := strings.ReplaceAll(form.Get("payload"), "run_0000000000placeholder00", runID)
	payload = strings.ReplaceAll(payload, channel, channelID)
	setBody(&req, []byte("payload="+url.QueryEscape(payload)))
	return req
}

func TestStopButton(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fleet("ops")
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	e.deliver(load(t, "app_mention.json"))
	runs := e.runs("ops")
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	id := runs[0].ID
	// A button from another channel does not stop this thread's run.
	e.deliver(stopRequest(t, id, "C0ELSEWHERE"))
	if r, _ := e.store.GetRun(ctx, id); r.Status != store.StatusQueued {
		t.Fatalf("a Stop from another channel moved the run to %s", r.Status)
	}
	t0 := time.Now()
	e.deliver(stopRequest(t, id, channel))
	if d := time.Since(t0); d > 3*time.Second {
		t.Fatalf("Stop acked after %s", d)
	}
	r, err := e.store.GetRun(ctx, id)
	if err != nil || r.Status != store.StatusCancelled || !strings.Contains(r.StatusReason, "U0USER123") {
		t.Fatalf("run = %s (%q), %v; want cancelled by U0USER123", r.Status, r.StatusReason, err)
	}
	e.deliver(stopRequest(t, id, channel))
	e.deliver(stopRequest(t, "run_nosuchrun", channel))
	posts := e.slack.Posts()
	if len(posts) != 4 {
		t.Fatalf("posts = %+v, want 4 answers", posts)
	}
	for i, want := range []string{"does not answer in this channel", "Stopped by <@U0USER123>: run " + id + " is cancelled", "had already ended (cancelled)", "no run run_nosuchrun"} {
		if !strings.Contains(posts[i].Text, want) {
			t.Errorf("answer %d = %q, want it to say %q", i, posts[i].Text, want)
		}
	}
	if posts[1].Channel != channel || posts[1].ThreadTS != threadTS {
		t.Fatalf("the Stop answer went to %s/%s, want the run's thread %s/%s", posts[1].Channel, posts[1].ThreadTS, channel, threadTS)
	}
}

func TestServeHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	srv := httptest.NewServer(e.h)
	defer srv.Close()
	b := body(t, load(t, "url_verification.json"))
	req, _ := http.NewRequest("POST", srv.URL+slack.EventsPath, strings.NewReader(string(b)))
	ts, sig := slack.Sign(secret, time.Now(), b)
	req.Header.Set(slack.TimestampHeader, ts)
	req.Header.Set(slack.SignatureHeader, sig)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(got), "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P") {
		t.Fatalf("POST %s = %d %s", slack.EventsPath, resp.StatusCode, got)
	}
	resp, err = http.Get(srv.URL + slack.EventsPath)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode == 200 {
		t.Fatalf("GET %s = 200, want a refusal", slack.EventsPath)
	}
	if _, err := slack.NewHandler(slack.Config{Store: e.store, Invoker: e.local}); err == nil {
		t.Fatal("NewHandler without a signing secret succeeded")
	}
}

// TestManifest checks that slack/manifest.yaml asks for what the Handler
// and the thread need, and points at the Handler's paths.
func TestManifest(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join("..", "..", "slack", "manifest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	m := string(raw)
	for _, want := range []string{
		"- app_mentions:read", "- chat:write", "- channels:history", "- groups:history", "- im:history",
		"- files:write", "- reactions:write", "- assistant:write", "- usergroups:read",
		"- app_mention\n", "- message.channels", "- message.groups", "- message.im",
		"is_enabled: true", slack.EventsPath + "\n", slack.InteractivityPath + "\n",
	} {
		if !strings.Contains(m, want) {
			t.Errorf("slack/manifest.yaml lacks %q", want)
		}
	}
}

// end moves a run through running to succeeded.
func end(t *testing.T, st *store.Store, id string) {
	t.Helper()
	for _, to := range []store.Status{store.StatusRunning, store.StatusSucceeded} {
		if _, err := st.Transition(ctx, id, to, ""); err != nil {
			t.Fatal(err)
		}
	}
}

// TestReplyToAWorkingRun: a reply in the thread of a run still working is
// queued for that run (and a retry of it queued once), or, for a fleet
// whose replies interrupt, stops that run and starts one going on with it.
func TestReplyToAWorkingRun(t *testing.T) {
	t.Parallel()
	for _, mode := range []string{"queue", "interrupt"} {
		t.Run(mode, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, nil)
			e.fleet("ops", "[x-agentsfleet.slack]\non_reply = \""+mode+"\"\n")
			if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
				t.Fatal(err)
			}
			e.deliver(load(t, "app_mention.json"))
			first := e.runs("ops")
			if len(first) != 1 {
				t.Fatalf("the mention started %d runs", len(first))
			}
			reply := load(t, "thread_reply.json")
			e.deliver(reply)
			e.deliver(reply) // Slack's retry
			runs := e.runs("ops")
			inbox, err := e.store.Inbox(ctx, first[0].ID, 0)
			if err != nil {
				t.Fatal(err)
			}
			old, _ := e.store.GetRun(ctx, first[0].ID)
			switch mode {
			case "queue":
				if len(runs) != 1 || len(inbox) != 1 || inbox[0].Text != "and the staging one too" || old.Status != store.StatusQueued {
					t.Fatalf("queue: %d runs, inbox %+v, first %s; want the reply in the working run's inbox, once", len(runs), inbox, old.Status)
				}
			case "interrupt":
				if len(runs) != 2 || len(inbox) != 0 || old.Status != store.StatusCancelled {
					t.Fatalf("interrupt: %d runs, inbox %+v, first %s; want it cancelled and one new run", len(runs), inbox, old.Status)
				}
				if r, _ := e.store.GetRun(ctx, runs[0].ID); r.Continues != first[0].ID || r.Status != store.StatusQueued {
					t.Fatalf("the new run (%s) continues %q, want %s; the retry must not stop it", r.Status, r.Continues, first[0].ID)
				}
			}
		})
	}
}
