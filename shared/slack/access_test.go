package slack_test

import (
	"net/url"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/slack/slacktest"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// ephemerals returns the messages only one person saw.
func (f *fakeSlack) ephemerals() []slacktest.Message {
	var out []slacktest.Message
	for _, m := range f.Messages() {
		if m.Ephemeral {
			out = append(out, m)
		}
	}
	return out
}

// mentionBy is events/slack/app_mention.json written by user, as event id.
func mentionBy(t *testing.T, id, user, ts string) events.APIGatewayV2HTTPRequest {
	return edit(t, load(t, "app_mention.json"), func(o, in map[string]any) {
		o["event_id"], in["user"], in["ts"], in["event_ts"] = id, user, ts, ts
	})
}

// stopBy is the Stop button of runID in the test channel, pressed by user.
func stopBy(t *testing.T, runID, user string) events.APIGatewayV2HTTPRequest {
	req := stopRequest(t, runID, channel)
	form, _ := url.ParseQuery(string(body(t, req)))
	payload := strings.Replace(form.Get("payload"), `"user":{"id":"U0USER123"`, `"user":{"id":"`+user+`"`, 1)
	setBody(&req, []byte("payload="+url.QueryEscape(payload)))
	return req
}

// A direct message reaches a fleet only where a route says, never the
// deployment's default fleet: anyone in the workspace can write to the app.
func TestDirectMessagesGoOnlyWhereARouteSays(t *testing.T) {
	t.Parallel()
	e := newEnv(t, func(c *slack.Config) { c.DefaultFleet = "ops" })
	e.fleet("ops")
	dm := func(id string) events.APIGatewayV2HTTPRequest {
		return edit(t, load(t, "thread_reply.json"), func(o, in map[string]any) {
			o["event_id"], in["channel"], in["channel_type"], in["text"] = id, "D0DIRECT1", "im", "delete the prod table"
			delete(in, "thread_ts")
		})
	}
	e.deliver(dm("Ev0DM0001"))
	e.deliver(dm("Ev0DM0001")) // Slack's retry
	if runs := e.runs("ops"); len(runs) != 0 {
		t.Fatalf("a direct message without a route started %d runs of the default fleet, want none", len(runs))
	}
	if posts := e.slack.Posts(); len(posts) != 1 || posts[0].Channel != "D0DIRECT1" || !strings.Contains(posts[0].Text, "agentsfleet slack route D0DIRECT1 FLEET") {
		t.Fatalf("posts = %+v, want one answer in the DM saying how to route it", posts)
	}
	// A mention in a channel still reaches the default fleet.
	e.deliver(mentionBy(t, "Ev0MENTION1", "U0USER123", "1796123399.000001"))
	if runs := e.runs("ops"); len(runs) != 1 {
		t.Fatalf("a mention in an unrouted channel started %d runs of the default fleet, want 1", len(runs))
	}
	if _, err := e.store.PutSlackRoute(ctx, "D0DIRECT1", "ops"); err != nil {
		t.Fatal(err)
	}
	e.deliver(dm("Ev0DM0002"))
	if runs := e.runs("ops"); len(runs) != 2 {
		t.Fatalf("a routed direct message: %d runs, want 2", len(runs))
	}
}

func TestAllowStart(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fleet("ops", "[x-agentsfleet.slack]\nallow_start = [\"U0ALLOWED\", \"S0ONCALL\"]\n")
	e.fleet("lost", "[x-agentsfleet.slack]\nallow_start = [\"S0GONE01\"]\n")
	e.slack.AddUserGroup("S0ONCALL", "U0MEMBER1", "U0MEMBER2")
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	// Someone on neither list: no run, one message only they see, however
	// often Slack delivers the event.
	e.deliver(load(t, "app_mention.json"))
	e.deliver(load(t, "retried_delivery.json"))
	if runs := e.runs("ops"); len(runs) != 0 {
		t.Fatalf("a mention by U0USER123 started %d runs; want none, U0USER123 is not on allow_start", len(runs))
	}
	eph := e.slack.ephemerals()
	if len(eph) != 1 || eph[0].User != "U0USER123" || eph[0].Channel != channel || eph[0].ThreadTS != threadTS || !strings.Contains(eph[0].Text, "allow_start") {
		t.Fatalf("ephemeral messages = %+v, want one to U0USER123 in the thread naming allow_start", eph)
	}
	if posts := e.slack.Posts(); len(posts) != 0 {
		t.Fatalf("the refusal was posted for everyone: %+v", posts)
	}
	// A user on the list, and a member of a group on it, may.
	e.deliver(mentionBy(t, "Ev0ALLOWED1", "U0ALLOWED", "1796123399.000001"))
	e.deliver(mentionBy(t, "Ev0MEMBER01", "U0MEMBER2", "1796123399.000002"))
	runs := e.runs("ops")
	if len(runs) != 2 {
		t.Fatalf("mentions by U0ALLOWED and a member of S0ONCALL started %d runs, want 2", len(runs))
	}
	// A reply in a run's thread starts a run too: the same list applies.
	end(t, e.store, runs[0].ID)
	end(t, e.store, runs[1].ID)
	e.deliver(edit(t, load(t, "thread_reply.json"), func(o, in map[string]any) {
		in["thread_ts"] = "1796123399.000001"
	}))
	if runs := e.runs("ops"); len(runs) != 2 {
		t.Fatalf("a reply by U0USER123 in U0ALLOWED's thread started a run (%d runs), want none", len(runs))
	}
	if eph := e.slack.ephemerals(); len(eph) != 2 || eph[1].ThreadTS != "1796123399.000001" {
		t.Fatalf("ephemeral messages = %+v, want a second one in the reply's thread", eph)
	}
	// A group Slack will not list refuses everyone but the listed users,
	// and says the check could not be made.
	if _, err := e.store.PutSlackRoute(ctx, "C0LOST001", "lost"); err != nil {
		t.Fatal(err)
	}
	e.deliver(edit(t, mentionBy(t, "Ev0LOST001", "U0MEMBER1", "1796123399.000003"), func(_, in map[string]any) { in["channel"] = "C0LOST001" }))
	if runs := e.runs("lost"); len(runs) != 0 {
		t.Fatalf("an unreadable group let a run start (%d runs)", len(runs))
	}
	if eph := e.slack.ephemerals(); len(eph) != 3 || !strings.Contains(eph[2].Text, "could not check") || !strings.Contains(eph[2].Text, "S0GONE01") {
		t.Fatalf("ephemeral messages = %+v, want one saying S0GONE01 could not be read", eph)
	}
}

func TestStopAccess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, nil)
	e.fleet("ops", "[x-agentsfleet.slack]\nallow_start = [\"U0USER123\", \"U0OTHER01\"]\nallow_stop = [\"S0LEADS\"]\n")
	e.slack.AddUserGroup("S0LEADS", "U0LEAD001")
	if _, err := e.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	e.deliver(load(t, "app_mention.json")) // by U0USER123
	runs := e.runs("ops")
	if len(runs) != 1 {
		t.Fatalf("%d runs", len(runs))
	}
	id := runs[0].ID
	// U0OTHER01 may start runs, not stop others'; a stranger neither.
	for _, who := range []string{"U0OTHER01", "U0STRANGE"} {
		e.deliver(stopBy(t, id, who))
		if r := e.run(id); r.Status != store.StatusQueued {
			t.Fatalf("a Stop by %s moved the run to %s", who, r.Status)
		}
	}
	eph := e.slack.ephemerals()
	if len(eph) != 2 || eph[0].User != "U0OTHER01" || eph[1].User != "U0STRANGE" || !strings.Contains(eph[0].Text, "allow_stop") || eph[0].ThreadTS != threadTS {
		t.Fatalf("ephemeral messages = %+v, want one each to U0OTHER01 and U0STRANGE in the thread", eph)
	}
	if posts := e.slack.Posts(); len(posts) != 0 {
		t.Fatalf("a refused Stop was answered for everyone: %+v", posts)
	}
	// A member of a group on allow_stop may.
	e.deliver(stopBy(t, id, "U0LEAD001"))
	if r := e.run(id); r.Status != store.StatusCancelled || !strings.Contains(r.StatusReason, "U0LEAD001") {
		t.Fatalf("a Stop by U0LEAD001 left the run %s (%q)", r.Status, r.StatusReason)
	}
	// The starter may always stop their own run, on the list or not.
	e2 := newEnv(t, nil)
	e2.fleet("ops", "[x-agentsfleet.slack]\nallow_stop = [\"U0LEAD001\"]\n")
	if _, err := e2.store.PutSlackRoute(ctx, channel, "ops"); err != nil {
		t.Fatal(err)
	}
	e2.deliver(load(t, "app_mention.json"))
	id = e2.runs("ops")[0].ID
	e2.deliver(stopBy(t, id, "U0OTHER01"))
	if r := e2.run(id); r.Status != store.StatusQueued {
		t.Fatalf("a Stop by U0OTHER01 moved the run to %s", r.Status)
	}
	e2.deliver(stopBy(t, id, "U0USER123"))
	if r := e2.run(id); r.Status != store.StatusCancelled {
		t.Fatalf("the starter's Stop left the run %s", r.Status)
	}
}
