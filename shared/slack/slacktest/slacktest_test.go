package slacktest_test

import (
	"context"
	"strings"
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

// The new methods refuse as Slack does, and answer as it does.
func TestEphemeralAndUserGroups(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t, "xoxb-right")
	api := s.Client()
	text := slack.MsgOptionText("only you", false)
	_, errNoChannel := api.PostEphemeralContext(ctx, "", "U0USER123", text)
	_, errNoUser := api.PostEphemeralContext(ctx, "C0123ABCD", "", text)
	_, errNoText := api.PostEphemeralContext(ctx, "C0123ABCD", "U0USER123")
	s.Members("C0MEMBERS", "U0INSIDE1")
	_, errOutside := api.PostEphemeralContext(ctx, "C0MEMBERS", "U0USER123", text)
	_, errNoGroup := api.GetUserGroupMembersContext(ctx, "S0NOSUCH1")
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"postEphemeral without a channel", errNoChannel, "channel_not_found"},
		{"postEphemeral without a user", errNoUser, "user_not_found"},
		{"postEphemeral without text", errNoText, "no_text"},
		{"postEphemeral to someone not in the channel", errOutside, "user_not_in_channel"},
		{"usergroups.users.list of no group", errNoGroup, "no_such_subteam"},
	} {
		if tt.err == nil || tt.err.Error() != tt.want {
			t.Errorf("%s: got %v, want %s", tt.name, tt.err, tt.want)
		}
	}
	if _, err := api.PostEphemeralContext(ctx, "C0MEMBERS", "U0INSIDE1", text, slack.MsgOptionTS("1796123395.000100")); err != nil {
		t.Fatal(err)
	}
	if m := s.Messages(); len(m) != 1 || !m[0].Ephemeral || m[0].User != "U0INSIDE1" || m[0].ThreadTS != "1796123395.000100" || m[0].Rendered != "only you" {
		t.Fatalf("messages = %+v, want the ephemeral one for U0INSIDE1 in the thread", m)
	}
	s.AddUserGroup("S0ONCALL1", "U0A", "U0B")
	if got, err := api.GetUserGroupMembersContext(ctx, "S0ONCALL1"); err != nil || len(got) != 2 || got[0] != "U0A" || got[1] != "U0B" {
		t.Fatalf("members = %v, %v", got, err)
	}
}

// Rendered is what Slack would show: the fake formats what Slack formats.
func TestRendered(t *testing.T) {
	t.Parallel()
	s := slacktest.New(t, "xoxb-right")
	api := s.Client()
	const written = "*bold* _it_ ~gone~ `code` :tada: &lt;!here&gt; a &amp; b"
	plain := func(emoji bool) slack.MsgOption {
		return slack.MsgOptionBlocks(slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, written, emoji, false), nil, nil))
	}
	for _, tt := range []struct {
		name string
		opts []slack.MsgOption
		want string
	}{
		{"mrkdwn text", []slack.MsgOption{slack.MsgOptionText(written, false)}, "«bold:bold» «italic:it» «strike:gone» «code:code» «emoji:tada» <!here> a & b"},
		{"text with mrkdwn false", []slack.MsgOption{slack.MsgOptionText(written, false), slack.MsgOptionDisableMarkdown()}, "*bold* _it_ ~gone~ `code` «emoji:tada» <!here> a & b"},
		{"plain_text with emoji", []slack.MsgOption{plain(true)}, "*bold* _it_ ~gone~ `code` «emoji:tada» <!here> a & b"},
		{"plain_text without emoji", []slack.MsgOption{plain(false)}, "*bold* _it_ ~gone~ `code` :tada: <!here> a & b"},
		{"a mention", []slack.MsgOption{slack.MsgOptionText("hi <@U0USER123>", false)}, "hi «link:@U0USER123»"},
	} {
		if _, _, err := api.PostMessageContext(ctx, "C0123ABCD", tt.opts...); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		m := s.Messages()
		if got := m[len(m)-1].Rendered; got != tt.want {
			t.Errorf("%s: rendered %q, want %q", tt.name, got, tt.want)
		}
	}
	// Block Kit's limits.
	long := slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("é", 3001), false, false), nil, nil)
	if _, _, err := api.PostMessageContext(ctx, "C0123ABCD", slack.MsgOptionBlocks(long)); err == nil || err.Error() != "invalid_blocks" {
		t.Errorf("a text object of 3,001 characters: %v, want invalid_blocks", err)
	}
	ok := slack.NewSectionBlock(slack.NewTextBlockObject(slack.PlainTextType, strings.Repeat("é", 3000), false, false), nil, nil)
	if _, _, err := api.PostMessageContext(ctx, "C0123ABCD", slack.MsgOptionBlocks(ok)); err != nil {
		t.Errorf("a text object of 3,000 characters: %v", err)
	}
}
