package slack_test

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentsfleet/agentsfleet/shared/improve"
	"github.com/agentsfleet/agentsfleet/shared/improve/agent"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/model/scripted"
	slackpost "github.com/agentsfleet/agentsfleet/shared/slack/post"
	"github.com/agentsfleet/agentsfleet/shared/slack/slacktest"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// dropRead proposes the slack env's fleet without its read tool.
const dropRead = `[[turn]]
[[turn.tool_call]]
name = "propose_definition"
[turn.tool_call.arguments]
summary = "no more reading"
definition = '''
name = "ops"
instructions = "Help the team."
[x-agentsfleet]
tools = []
[x-agentsfleet.slack]
allow_apply = ["U0APPLIER"]
'''

[[turn]]
text = "Proposed: read is removed."
`

// withChats registers the runner function as its main does (runs ignored
// here, chats' turns by the real agent on a script) and the slack
// function's thread poster over the fake Slack.
func withChats(t *testing.T, e *env, script string) {
	t.Helper()
	m, err := scripted.Parse([]byte(script), "chat.toml")
	if err != nil {
		t.Fatal(err)
	}
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	a, err := agent.New(agent.Config{Store: e.store, Model: m, DefaultModel: "scripted", Invoker: e.local, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	runs := func(context.Context, []byte) ([]byte, error) { return nil, nil }
	e.local.Register(invoke.Runner, improve.Dispatch(runs, a.Handle))
	p, err := slackpost.New(slackpost.Config{Slack: e.slack.Client(), Records: e.store, Log: quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.local.Register(invoke.Slack, p.Invoke)
}

// improveButton is the Apply (or Discard) button of chat id, pressed in
// channelID by user.
func improveButton(t *testing.T, action, id, channelID, user string) events.APIGatewayV2HTTPRequest {
	req := load(t, "interactivity.json")
	form, _ := url.ParseQuery(string(body(t, req)))
	r := strings.NewReplacer("agentsfleet_stop", action, "run_0000000000placeholder00", id,
		`"user":{"id":"U0USER123"`, `"user":{"id":"`+user+`"`, channel, channelID)
	setBody(&req, []byte("payload="+url.QueryEscape(r.Replace(form.Get("payload")))))
	return req
}

// settledChat waits for the chat of the test thread to stop thinking.
func (e *env) settledChat() store.Improvement {
	e.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		if id, ok, err := e.store.ChatOfThread(ctx, channel, threadTS); err == nil && ok {
			if imp, err := e.store.GetImprovement(ctx, id); err == nil && imp.Status != store.ImproveThinking {
				return imp
			}
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.t.Fatal("no chat in the thread settled within 30 s")
	return store.Improvement{}
}

func (e *env) messages(ephemeral bool, user string) []slacktest.Message {
	var out []slacktest.Message
	for _, m := range e.slack.Messages() {
		if m.Ephemeral == ephemeral && (user == "" || m.User == user) {
			out = append(out, m)
		}
	}
	return out
}

// `@agentsfleet improve ops …` in a thread starts a chat there; its
// proposal comes back as a message with the diff and Apply / Discard
// buttons; only someone on the fleet's allow_apply, in the chat's own
// channel, applies it; a reply in the thread is the chat's.
func TestImproveFromSlack(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	withChats(t, e, dropRead)
	e.fleet("ops", "[x-agentsfleet.slack]\nallow_apply = [\"U0APPLIER\"]\n")
	mention := edit(t, load(t, "app_mention.json"), func(_, in map[string]any) { in["text"] = "<@U0APPBOT1> improve ops stop it reading" })
	e.deliver(mention)
	e.deliver(mention) // Slack's retry starts no second chat
	imp := e.settledChat()
	if imp.Status != store.ImproveProposed || imp.Fleet != "ops" || imp.Origin.By != "U0USER123" || imp.Origin.Via != store.OriginSlack {
		t.Fatalf("chat = %+v, want a proposal about ops started by U0USER123 from Slack", imp)
	}
	var proposal *slacktest.Message
	for _, m := range e.messages(false, "") {
		if strings.Contains(m.Blocks, "agentsfleet_improve_apply") {
			proposal = &m
		}
	}
	if proposal == nil || proposal.ThreadTS != threadTS || !strings.Contains(proposal.Text, `-  "read",`) ||
		!strings.Contains(proposal.Blocks, "agentsfleet_improve_discard") || !strings.Contains(proposal.Text, "Proposed: read is removed.") {
		t.Fatalf("messages = %+v, want the proposal with its diff and both buttons in the thread", e.slack.Messages())
	}

	// Not on allow_apply: refused, told so alone.
	e.deliver(improveButton(t, "agentsfleet_improve_apply", imp.ID, channel, "U0USER123"))
	// On it, but from another channel: refused.
	e.deliver(improveButton(t, "agentsfleet_improve_apply", imp.ID, "C0ELSEWHERE", "U0APPLIER"))
	if f, _ := e.store.GetFleet(ctx, "ops"); f.Revision != 1 {
		t.Fatalf("fleet at revision %d after refused presses, want 1", f.Revision)
	}
	if w := e.messages(true, "U0USER123"); len(w) != 1 || !strings.Contains(w[0].Text, "allow_apply") {
		t.Fatalf("ephemerals to U0USER123 = %+v, want one refusal naming allow_apply", w)
	}
	e.deliver(improveButton(t, "agentsfleet_improve_apply", imp.ID, channel, "U0APPLIER"))
	rev, err := e.store.CurrentRevision(ctx, "ops")
	if err != nil || rev.Number != 2 || rev.Origin.By != "U0APPLIER" || rev.Origin.Via != store.OriginSlack || rev.Origin.Improvement != imp.ID {
		t.Fatalf("revision = %+v, %v; want 2, applied from the chat by U0APPLIER in Slack", rev, err)
	}
	// A reply in the thread is the chat's, and the chat is closed now.
	reply := edit(t, load(t, "thread_reply.json"), func(o, _ map[string]any) { o["event_id"] = "Ev0CHATREPLY" })
	e.deliver(reply)
	posts := e.slack.Posts()
	if last := posts[len(posts)-1]; !strings.Contains(last.Text, "chat is closed") || len(e.runs("ops")) != 0 {
		t.Fatalf("after a reply: last post %q, %d runs; want the chat's closed answer and no run", last.Text, len(e.runs("ops")))
	}
}

// A fleet that sets no allow_apply applies nothing from Slack, whoever
// presses; Discard takes the list too.
func TestImproveFromSlackWithoutAllowApply(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	withChats(t, e, strings.Replace(dropRead, "[x-agentsfleet.slack]\nallow_apply = [\"U0APPLIER\"]\n", "", 1))
	e.fleet("ops")
	e.deliver(edit(t, load(t, "app_mention.json"), func(_, in map[string]any) { in["text"] = "<@U0APPBOT1> improve ops" }))
	imp := e.settledChat()
	if imp.Status != store.ImproveProposed {
		t.Fatalf("chat = %+v, want proposed", imp)
	}
	e.deliver(improveButton(t, "agentsfleet_improve_apply", imp.ID, channel, "U0USER123"))
	e.deliver(improveButton(t, "agentsfleet_improve_discard", imp.ID, channel, "U0USER123"))
	got, _ := e.store.GetImprovement(ctx, imp.ID)
	f, _ := e.store.GetFleet(ctx, "ops")
	if f.Revision != 1 || got.Status != store.ImproveProposed {
		t.Fatalf("fleet at %d, chat %s; want both untouched", f.Revision, got.Status)
	}
	if w := e.messages(true, "U0USER123"); len(w) != 2 || !strings.Contains(w[0].Text, "Nobody may apply") {
		t.Fatalf("ephemerals = %+v, want two saying nobody may apply from Slack", w)
	}
}

// Someone who may not start the fleet's runs starts no chat about it.
func TestImproveFromSlackNeedsAllowStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	withChats(t, e, dropRead)
	e.fleet("ops", "[x-agentsfleet.slack]\nallow_start = [\"U0OTHER1\"]\nallow_apply = [\"U0USER123\"]\n")
	e.deliver(edit(t, load(t, "app_mention.json"), func(_, in map[string]any) { in["text"] = "<@U0APPBOT1> improve ops" }))
	if _, ok, err := e.store.ChatOfThread(ctx, channel, threadTS); err != nil || ok {
		t.Fatalf("a chat started by someone not on allow_start (%v)", err)
	}
	if w := e.messages(true, "U0USER123"); len(w) != 1 || !strings.Contains(w[0].Text, "allow_start") {
		t.Fatalf("ephemerals = %+v, want one refusal naming allow_start", w)
	}
}
