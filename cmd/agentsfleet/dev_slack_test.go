package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/agentsfleet/agentsfleet/shared/slack"
)

// TestDevSlackThread drives `agentsfleet dev` through Slack's edge only: a
// signed app_mention (the payload of events/slack) reaches /slack/events on
// dev's port, and the thread, as a local fake of the Slack Web API sees it,
// shows the run working and then its answer.
func TestDevSlackThread(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var seen []string // method: text
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseMultipartForm(1 << 20)
		r.ParseForm()
		method := strings.TrimPrefix(r.URL.Path, "/api/")
		mu.Lock()
		seen = append(seen, method+": "+r.Form.Get("text")+r.Form.Get("markdown_text"))
		n := len(seen)
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"ok": true, "channel": %q, "ts": "1796123400.%06d"}`, r.Form.Get("channel"), n)
	}))
	defer fake.Close()

	const signing = "8f742231b10e8888abcd99yyyzzz85a5"
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		done <- dev(ctx, []string{"--workdir", openDir(t), "--state", t.TempDir(), "--table", "dev-slack"}, pw, io.Discard,
			runEnv(map[string]string{"AGENTSFLEET_ADDR": "127.0.0.1:0", "AGENTSFLEET_SANDBOX_WARM": "small=0",
				"AGENTSFLEET_SLACK_SIGNING_SECRET": signing, "AGENTSFLEET_SLACK_BOT_TOKEN": "xoxb-test",
				"AGENTSFLEET_SLACK_API_URL": fake.URL + "/api/", "AGENTSFLEET_SLACK_DEFAULT_FLEET": "minimal"}))
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

	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		mu.Lock()
		all := strings.Join(seen, "\n")
		mu.Unlock()
		if strings.Contains(all, "Working on it") && strings.Contains(all, "chat.update: Done.") {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the thread never showed the run working and answered:\n%s", all)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}
