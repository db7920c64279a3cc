package post_test

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/slack/post"
	"github.com/agentsfleet/agentsfleet/shared/slack/slacktest"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var ctx = context.Background()

func newPoster(t *testing.T, f *slacktest.Server) *post.Poster {
	t.Helper()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "post")
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	p, err := post.New(post.Config{Slack: f.Client(), Records: store.New(db, table), MaxInline: 2000})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// req is a request for the run of a mention by U0ASKER1 (of team T0TEAM1)
// in channel C0123.
func req(op thread.Op) thread.Request {
	return thread.Request{Op: op, RunID: "run_01TEST", Fleet: "ops", Channel: "C0123", ThreadTS: "1733040000.000100",
		User: "U0ASKER1", Team: "T0TEAM1"}
}

func newFake(t *testing.T) *slacktest.Server { return slacktest.New(t, "xoxb-test") }

func TestThreadShowsTheRun(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.Refuse("assistant.threads.setStatus", "not_allowed_token_type") // not an assistant thread
	p := newPoster(t, f)

	if r := p.Post(ctx, req(thread.OpWorking)); !r.Delivered {
		t.Fatalf("working = %+v", r)
	}
	status := f.Last("chat.postMessage")
	if status.Args["thread_ts"] != "1733040000.000100" || !strings.Contains(status.Args["blocks"], `"action_id":"`+thread.StopAction+`"`) ||
		!strings.Contains(status.Args["blocks"], `"value":"run_01TEST"`) {
		t.Fatalf("status message = %+v; want a Stop button for the run in the thread", status)
	}
	if f.Last("reactions.add").Args["name"] != "hourglass_flowing_sand" {
		t.Fatalf("no reaction where the assistant status is refused: %v", f.Methods())
	}

	plan := req(thread.OpPlan)
	plan.Plan = []thread.Step{{Step: "read <!here> logs", Status: "in_progress"}, {Step: "fix", Status: "pending"}}
	p.Post(ctx, plan)
	first := f.Last("chat.postMessage")
	if !strings.Contains(first.Args["text"], "⏳ read &lt;!here&gt; logs") {
		t.Fatalf("plan = %q", first.Args["text"])
	}
	plan.Plan[0].Status, plan.Plan[1].Status = "completed", "in_progress"
	f.Reset()
	p.Post(ctx, plan)
	if m := f.Methods(); len(m) != 1 || m[0] != "chat.update" || !strings.Contains(f.Last("chat.update").Args["text"], "✅ read") {
		t.Fatalf("the second plan = %v; want one chat.update of the plan message", m)
	}
	if upd := f.Last("chat.update"); upd.Args["ts"] == status.Args["ts"] {
		t.Fatal("the plan edited the status message")
	}

	line := req(thread.OpLine)
	line.Text = "deploying &lt;!channel&gt;"
	if r := p.Post(ctx, line); !r.Delivered || f.Last("chat.postMessage").Args["text"] != line.Text || f.Last("chat.postMessage").Args["link_names"] == "true" {
		t.Fatalf("line = %+v, %+v", r, f.Last("chat.postMessage"))
	}

	// The answer streams in, and the status message loses its button.
	f.Reset()
	ans := req(thread.OpAnswer)
	ans.Status, ans.Text = "succeeded", strings.Repeat("all green. ", 150) // two chunks
	if r := p.Post(ctx, ans); !r.Delivered {
		t.Fatalf("answer = %+v", r)
	}
	m := strings.Join(f.Methods(), " ")
	if !strings.Contains(m, "chat.startStream chat.appendStream chat.stopStream") || strings.Contains(m, "chat.postMessage") {
		t.Fatalf("answer calls = %s (refused: %v), want it streamed and not posted", m, f.Refused())
	}
	if st := f.Last("chat.startStream"); st.Error != "" || st.Args["recipient_user_id"] != "U0ASKER1" || st.Args["recipient_team_id"] != "T0TEAM1" {
		t.Fatalf("chat.startStream = %+v, want it streamed to U0ASKER1 of T0TEAM1", st)
	}
	msgs := f.Messages()
	if streamed := msgs[len(msgs)-1]; !streamed.Streamed || streamed.Streaming || streamed.Text != thread.Inert(ans.Text) || streamed.ThreadTS != ans.ThreadTS {
		t.Fatalf("the streamed answer = %+v, want the whole answer, stopped, in the thread", streamed)
	}
	done := f.Last("chat.update")
	if done.Args["text"] != "Done." || strings.Contains(done.Args["blocks"], thread.StopAction) {
		t.Fatalf("status after the answer = %+v", done)
	}
}

func TestAnswerFallsBackAndUploads(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	f.Refuse("chat.startStream", "missing_scope")
	p := newPoster(t, f)
	ans := req(thread.OpAnswer)
	ans.Status, ans.Text = "succeeded", "short <@U042> answer"
	if r := p.Post(ctx, ans); !r.Delivered || f.Last("chat.postMessage").Args["text"] != "short &lt;@U042&gt; answer" {
		t.Fatalf("fallback = %+v, %+v", r, f.Last("chat.postMessage"))
	}

	long := req(thread.OpAnswer)
	long.Status, long.Text = "succeeded", strings.Repeat("line of output\n", 200)
	if r := p.Post(ctx, long); !r.Delivered {
		t.Fatalf("long answer = %+v", r)
	}
	done := f.Last("files.completeUploadExternal")
	if done.Args["thread_ts"] != long.ThreadTS || done.Args["channel_id"] != "C0123" || len(f.Upload()) == 0 || !strings.Contains(string(f.Upload()), "line of output") {
		t.Fatalf("upload = %+v (%d bytes)", done, len(f.Upload()))
	}
}

// Slack refuses chat.startStream outside a direct message without its
// recipient: an answer whose run names none is posted there, and streamed
// in a DM, where none is needed.
func TestAnswerWithoutRecipient(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newPoster(t, f)
	ans := req(thread.OpAnswer)
	ans.Status, ans.Text, ans.User, ans.Team = "succeeded", "all green", "", ""
	if r := p.Post(ctx, ans); !r.Delivered {
		t.Fatalf("answer = %+v", r)
	}
	if m := f.Methods(); strings.Contains(strings.Join(m, " "), "chat.startStream") || f.Last("chat.postMessage").Args["text"] != "all green" {
		t.Fatalf("calls in a channel without a recipient = %v, want the answer posted without a stream Slack would refuse", m)
	}
	f.Reset()
	dm := ans
	dm.Channel = "D0DIRECT1"
	if r := p.Post(ctx, dm); !r.Delivered {
		t.Fatalf("answer in a DM = %+v", r)
	}
	if st := f.Last("chat.startStream"); st.Method == "" || st.Error != "" || st.Args["channel"] != "D0DIRECT1" {
		t.Fatalf("chat.startStream in a DM = %+v (calls %v), want it streamed", st, f.Methods())
	}
}

func TestFailureIsSaidAndRefusalsReported(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newPoster(t, f)
	p.Post(ctx, req(thread.OpWorking))
	ended := req(thread.OpEnded)
	ended.Status, ended.Text = "failed", "UZ-RUN-402: run run_01TEST has 0 of 1000 tokens left"
	if r := p.Post(ctx, ended); !r.Delivered || !strings.Contains(f.Last("chat.postMessage").Args["text"], "The run failed: UZ-RUN-402") {
		t.Fatalf("failure = %+v, %+v", r, f.Last("chat.postMessage"))
	}
	if f.Last("chat.update").Args["text"] != "Failed." {
		t.Fatalf("status after the failure = %+v", f.Last("chat.update"))
	}

	f.Refuse("chat.postMessage", "channel_not_found")
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

// TestLineShowsAsWritten posts message lines that Slack's markdown would
// change: each must show exactly as the fleet wrote it (the spec: "the line
// appears as plain text, as the fleet wrote it"), as the fake renders it.
// The runner sends lines inert (thread.Inert), as it does in a run.
func TestLineShowsAsWritten(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newPoster(t, f)
	for _, written := range []string{
		"*bold* is not bold",
		"_x_ is not italic",
		"~x~ is not struck out",
		"`go test` is not code",
		"```\nnor a code block\n```",
		"shipped :tada: :+1:",
		"deploying <!channel> <@U042> <#C0123|general> <https://example.com|a link>",
		"a & b > c < d",
		"> not a quote\n• not a list",
		strings.Repeat("é", 2048),                        // 4,096 bytes, 2,048 characters: one text object
		strings.Repeat("a log line *x*\n", 273),          // 4,095 bytes: cut at a line's end
		strings.Repeat("a", 2999) + "é" + "\n*b*_c_ :d:", // a cut beside a character of two bytes
	} {
		line := req(thread.OpLine)
		line.Text = thread.Inert(written)
		r := p.Post(ctx, line)
		if !r.Delivered {
			t.Fatalf("line %.40q: %+v (refused: %v)", written, r, f.Refused())
		}
		msgs := f.Messages()
		m := msgs[len(msgs)-1]
		if m.Rendered != written {
			t.Errorf("line %.60q shows as %.60q", written, m.Rendered)
		}
		if strings.Contains(m.Blocks, `"emoji":true`) || strings.Contains(m.Blocks, `"mrkdwn"`) {
			t.Errorf("line %.40q: blocks %.200s, want plain_text without emoji", written, m.Blocks)
		}
		if m.ThreadTS != line.ThreadTS || m.Channel != line.Channel {
			t.Errorf("line posted in %s/%s, want %s/%s", m.Channel, m.ThreadTS, line.Channel, line.ThreadTS)
		}
		// The notification's text, where blocks are not shown, is plain too.
		if c := f.Last("chat.postMessage"); c.Args["text"] != line.Text || c.Args["mrkdwn"] != "false" || c.Args["link_names"] == "true" {
			t.Errorf("line %.40q: text %.40q, mrkdwn %q, link_names %q; want the line, mrkdwn false, no link_names",
				written, c.Args["text"], c.Args["mrkdwn"], c.Args["link_names"])
		}
	}
}

// A line longer than one text object holds (3,000 characters) and without
// a line's end to cut at shows in two blocks, stacked: nothing is lost.
func TestLongLineWithoutBreaks(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newPoster(t, f)
	line := req(thread.OpLine)
	line.Text = strings.Repeat("x", 4096)
	if r := p.Post(ctx, line); !r.Delivered {
		t.Fatalf("line = %+v (refused: %v)", r, f.Refused())
	}
	m := f.Messages()[0]
	if want := line.Text[:3000] + "\n" + line.Text[3000:]; m.Rendered != want {
		t.Fatalf("a line of 4,096 x shows as %d characters, want it whole in two blocks", len(m.Rendered))
	}
	// Nor is an entity cut: the first block ends before it.
	line.Text = thread.Inert(strings.Repeat("y", 2998) + "&" + strings.Repeat("z", 1000))
	if r := p.Post(ctx, line); !r.Delivered {
		t.Fatalf("line = %+v (refused: %v)", r, f.Refused())
	}
	m = f.Messages()[1]
	if want := strings.Repeat("y", 2998) + "\n&" + strings.Repeat("z", 1000); m.Rendered != want {
		t.Fatalf("a line with & at the cut shows as %.20q…%.20q, want the & whole after the cut", m.Rendered[:20], m.Rendered[2990:])
	}
}

// An approval request shows each call (its arguments made inert by the
// runner), within Block Kit's bounds, with an Approve and a Deny button
// naming the run and the approval.
func TestApprovalShowsButtons(t *testing.T) {
	t.Parallel()
	f := newFake(t)
	p := newPoster(t, f)
	ask := req(thread.OpApproval)
	ask.Expires = "2026-12-04 10:00 UTC"
	ask.Approvals = []thread.Approval{{ID: "apr_1", Tool: "http_request", Arguments: thread.Inert(`{"url":"https://pay.example/"}`)},
		{ID: "apr_2", Tool: "apply_patch", Arguments: strings.Repeat("x", 5000)},
		{ID: "apr_3", Tool: "http_request", Arguments: "{}", Secret: "STRIPE", Host: "api.stripe.com", Method: "POST"}}
	if r := p.Post(ctx, ask); !r.Delivered {
		t.Fatalf("approval = %+v", r)
	}
	m := f.Last("chat.postMessage")
	var blocks []struct {
		Type     string `json:"type"`
		Text     *struct{ Text string }
		Elements []struct {
			ActionID string `json:"action_id"`
			Value    string `json:"value"`
		}
	}
	if err := json.Unmarshal([]byte(m.Args["blocks"]), &blocks); err != nil {
		t.Fatalf("blocks %s: %v", m.Args["blocks"], err)
	}
	var buttons []string
	for _, b := range blocks {
		if b.Text != nil && len(b.Text.Text) > post.MaxTextObject {
			t.Errorf("a text of %d characters, more than Block Kit takes", len(b.Text.Text))
		}
		for _, e := range b.Elements {
			buttons = append(buttons, e.ActionID+"="+e.Value)
		}
	}
	want := []string{thread.ApproveAction + "=run_01TEST apr_1", thread.DenyAction + "=run_01TEST apr_1",
		thread.ApproveAction + "=run_01TEST apr_2", thread.DenyAction + "=run_01TEST apr_2",
		thread.ApproveAction + "=run_01TEST apr_3", thread.DenyAction + "=run_01TEST apr_3"}
	if !slices.Equal(buttons, want) || m.Args["thread_ts"] != ask.ThreadTS ||
		!strings.Contains(m.Args["text"], ask.Expires) {
		t.Fatalf("message %+v: buttons %v, want %v in the thread", m.Args, buttons, want)
	}
	if !strings.Contains(m.Args["blocks"], "wants to use the secret STRIPE for POST api.stripe.com") {
		t.Errorf("the secret's approval does not say which secret, method and host: %s", m.Args["blocks"])
	}
	if r := p.Post(ctx, req(thread.OpApproval)); r.Delivered {
		t.Fatal("an approval request without approvals was posted")
	}
}
