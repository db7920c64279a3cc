package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/slack/slacktest"
)

// TestDevSlackThread drives `agentsfleet dev` through Slack's edge only: a
// signed app_mention (the payload of events/slack) reaches /slack/events on
// dev's port, and the thread, as a local fake of the Slack Web API sees it
// (slacktest, refusing what Slack refuses), shows the run working and then
// its answer streamed to the person who asked.
func TestDevSlackThread(t *testing.T) {
	t.Parallel()
	fake := slacktest.New(t, "xoxb-test")

	const signing = "8f742231b10e8888abcd99yyyzzz85a5"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- dev(ctx, []string{"--workdir", openDir(t), "--state", t.TempDir(), "--table", "dev-slack"}, pw, io.Discard,
			runEnv(map[string]string{"AGENTSFLEET_ADDR": "127.0.0.1:0", "AGENTSFLEET_SANDBOX_WARM": "small=0",
				"AGENTSFLEET_SLACK_SIGNING_SECRET": signing, "AGENTSFLEET_SLACK_BOT_TOKEN": "xoxb-test",
				"AGENTSFLEET_SLACK_API_URL": fake.APIURL(), "AGENTSFLEET_SLACK_DEFAULT_FLEET": "minimal"}))
		pw.Close()
	}()
	var base string
	lines := bufio.NewScanner(pr)
	for lines.Scan() {
		line := lines.Text()
		if rest, ok := strings.CutPrefix(line, "API            "); ok {
			base, _, _ = strings.Cut(rest, " ")
		}
		if strings.HasPrefix(line, "Slack ") && !strings.Contains(line, "on the same port") {
			t.Fatalf("dev does not serve Slack: %s", line)
		}
		if strings.HasPrefix(line, "Ctrl-C") {
			break
		}
	}
	go io.Copy(io.Discard, pr)

	raw, err := os.ReadFile(filepath.Join("..", "..", "events", "slack", "app_mention.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ev events.APIGatewayV2HTTPRequest
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	body := []byte(ev.Body)
	ts, sig := slack.Sign(signing, time.Now(), body)
	req, _ := http.NewRequest("POST", base+slack.EventsPath, strings.NewReader(ev.Body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set(slack.TimestampHeader, ts)
	req.Header.Set(slack.SignatureHeader, sig)
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || time.Since(start) > 3*time.Second {
		t.Fatalf("the event was answered %d after %v; want 200 within Slack's 3 s", resp.StatusCode, time.Since(start))
	}
	// An unsigned one is refused.
	bad, _ := http.Post(base+slack.EventsPath, "application/json", strings.NewReader(ev.Body))
	if bad.StatusCode != 401 {
		t.Fatalf("an unsigned event = %d, want 401", bad.StatusCode)
	}
	bad.Body.Close()

	// The answer streams to the person who mentioned the app (the event's
	// user, of its team), as Slack wants in a channel, and nothing Slack
	// would refuse is sent.
	var answer slacktest.Message
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var status string
		answer = slacktest.Message{}
		for _, m := range fake.Messages() {
			if strings.HasPrefix(m.Text, "Working on it") || m.Text == "Done." {
				status = m.Text
			}
			if m.Streamed {
				answer = m
			}
		}
		if status == "Done." && answer.Streamed && !answer.Streaming {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread never showed the run working and its answer streamed: messages %+v, calls %v, refused %v",
				fake.Messages(), fake.Methods(), fake.Refused())
		}
	}
	if answer.Channel != "C0123ABCD" || answer.ThreadTS != "1796123395.000100" || answer.Recipient != "U0USER123" || answer.RecipientTeam != "T0TEAM123" || answer.Text == "" {
		t.Fatalf("the answer = %+v, want it streamed in the mention's thread to U0USER123 of T0TEAM123", answer)
	}
	if r := fake.Refused(); len(r) > 0 {
		t.Fatalf("Slack would have refused %v", r)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
