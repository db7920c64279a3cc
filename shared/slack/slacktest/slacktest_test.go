package slacktest_test

import (
	"context"
	"testing"

	"github.com/slack-go/slack"

	"github.com/agentsfleet/agentsfleet/shared/slack/slacktest"
)

var ctx = context.Background()

// The fake refuses what Slack refuses, with Slack's codes, through the same
// client the product uses.
func TestRefusesAsSlackDoes(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t, "xoxb-right")
	api := s.Client()
	thread := slack.MsgOptionTS("1796123395.000100")
	text := slack.MsgOptionMarkdownText("hello")
	user, team := slack.MsgOptionRecipientUserID("U0USER123"), slack.MsgOptionRecipientTeamID("T0TEAM123")
	_, _, errWrongToken := slack.New("xoxb-wrong", slack.OptionAPIURL(s.APIURL())).PostMessageContext(ctx, "C0123ABCD", slack.MsgOptionText("x", false))
	_, _, errNoText := api.PostMessageContext(ctx, "C0123ABCD", thread)
	_, _, errNoTeam := api.StartStreamContext(ctx, "C0123ABCD", thread, text)
	_, _, errNoUser := api.StartStreamContext(ctx, "C0123ABCD", thread, text, team)
	_, _, _, errNoMessage := api.UpdateMessageContext(ctx, "C0123ABCD", "1796123395.000100", slack.MsgOptionText("x", false))
	_, _, errUnstarted := api.AppendStreamContext(ctx, "C0123ABCD", "1796123395.000100", text)
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"wrong token", errWrongToken, "invalid_auth"},
		{"postMessage without text", errNoText, "no_text"},
		{"startStream in a channel without recipient_team_id", errNoTeam, "missing_recipient_team_id"},
		{"startStream in a channel without recipient_user_id", errNoUser, "missing_recipient_user_id"},
		{"update of a message never posted", errNoMessage, "message_not_found"},
		{"appendStream of no stream", errUnstarted, "message_not_found"},
	}
	for _, tt := range tests {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.name, tt.err, tt.want)
		}
	}

	// With both recipients in a channel, or none in a DM, a stream starts,
	// takes text, stops, and takes no more.
	for _, ch := range []string{"C0123ABCD", "D0DIRECT1"} {
		opts := []slack.MsgOption{thread, text}
		if ch[0] == 'C' {
			opts = append(opts, user, team)
		}
		_, ts, err := api.StartStreamContext(ctx, ch, opts...)
		if err != nil {
			t.Fatalf("startStream in %s: %v", ch, err)
		}
		if _, _, err := api.AppendStreamContext(ctx, ch, ts, slack.MsgOptionMarkdownText(" world")); err != nil {
			t.Fatalf("appendStream in %s: %v", ch, err)
		}
		if _, _, err := api.StopStreamContext(ctx, ch, ts); err != nil {
			t.Fatalf("stopStream in %s: %v", ch, err)
		}
		if _, _, err := api.AppendStreamContext(ctx, ch, ts, text); err == nil || err.Error() != "message_not_in_streaming_state" {
			t.Fatalf("appendStream after stopStream in %s: got %v, want message_not_in_streaming_state", ch, err)
		}
	}
	msgs := s.Messages()
	if len(msgs) != 2 || msgs[0].Text != "hello world" || msgs[0].Streaming || msgs[0].Recipient != "U0USER123" || msgs[0].RecipientTeam != "T0TEAM123" {
		t.Fatalf("messages = %+v, want the channel's stream whole, stopped, to U0USER123 of T0TEAM123", msgs)
	}

	ref := slack.NewRefToMessage("C0123ABCD", "1796123395.000100")
	if err := api.RemoveReactionContext(ctx, "eyes", ref); err == nil || err.Error() != "no_reaction" {
		t.Fatalf("removing a reaction never added: got %v, want no_reaction", err)
	}
	if err := api.AddReactionContext(ctx, "eyes", ref); err != nil {
		t.Fatal(err)
	}
	if err := api.AddReactionContext(ctx, "eyes", ref); err == nil || err.Error() != "already_reacted" {
		t.Fatalf("adding a reaction twice: got %v, want already_reacted", err)
	}

	s.Refuse("chat.postMessage", "not_in_channel")
	if _, _, err := api.PostMessageContext(ctx, "C0123ABCD", slack.MsgOptionText("x", false)); err == nil || err.Error() != "not_in_channel" {
		t.Fatalf("a refused method: got %v, want not_in_channel", err)
	}
	if got := s.Last("chat.postMessage").Error; got != "not_in_channel" {
		t.Fatalf("the refused call is kept with %q, want not_in_channel", got)
	}
}

func TestUpload(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t, "xoxb-right")
	f, err := s.Client().UploadFileContext(ctx, slack.UploadFileParameters{Content: "the answer", FileSize: 10, Filename: "answer.md",
		Title: "Answer", Channel: "C0123ABCD", ThreadTimestamp: "1796123395.000100", InitialComment: "here"})
	if err != nil || f.Title != "Answer" {
		t.Fatalf("upload = %+v, %v", f, err)
	}
	if got := string(s.Upload()); got != "the answer" {
		t.Fatalf("uploaded %q, want the content", got)
	}
	if c := s.Last("files.completeUploadExternal"); c.Args["channel_id"] != "C0123ABCD" || c.Args["thread_ts"] != "1796123395.000100" {
		t.Fatalf("completeUploadExternal = %+v", c)
	}
}
