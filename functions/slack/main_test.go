package main

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/slackfn"
	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/slack"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestMain(m *testing.M) { awstest.Main(m) }

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// build is the handler main registers, with the settings of getenv and inv
// (nil: Lambda's) calling the runner.
func build(getenv func(string) string, awsCfg aws.Config, inv invoke.Invoker, log *slog.Logger) (invoke.Handler, error) {
	f, err := slackfn.New(context.Background(), deploy.Env{Getenv: getenv, AWS: awsCfg, Log: log, Invoker: inv})
	if err != nil {
		return nil, err
	}
	return invoke.Handler(f.Invoke), nil
}

func TestBuildSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	cfg := awstest.Config(t)
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	base := map[string]string{"AGENTSFLEET_TABLE": "t", "AGENTSFLEET_FUNCTION_RUNNER": "r",
		"AGENTSFLEET_SLACK_SIGNING_SECRET": "s", "AGENTSFLEET_SLACK_BOT_TOKEN": "xoxb-1"}
	without := func(drop string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			if k != drop {
				m[k] = v
			}
		}
		return m
	}
	for _, tt := range []struct{ drop, want string }{
		{"AGENTSFLEET_TABLE", "AGENTSFLEET_TABLE"},
		{"AGENTSFLEET_FUNCTION_RUNNER", "AGENTSFLEET_FUNCTION_RUNNER"},
		{"AGENTSFLEET_SLACK_SIGNING_SECRET", "AGENTSFLEET_SLACK_SIGNING_SECRET_ARN"},
		{"AGENTSFLEET_SLACK_BOT_TOKEN", "AGENTSFLEET_SLACK_BOT_TOKEN_ARN"},
	} {
		if _, err := build(env(without(tt.drop)), cfg, nil, quiet); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("without %s: build = %v, want an error naming %s", tt.drop, err, tt.want)
		}
	}
	// A secret that cannot be read is found on the first request that
	// needs it (build makes no AWS call), which fails naming it, and never
	// shows a value.
	m := without("AGENTSFLEET_SLACK_BOT_TOKEN")
	m["AGENTSFLEET_SLACK_BOT_TOKEN_ARN"] = "no-such-secret"
	f, err := build(env(m), cfg, nil, quiet)
	if err != nil {
		t.Fatalf("build with a token ARN = %v", err)
	}
	raw, _ := json.Marshal(thread.Request{Op: thread.OpLine, RunID: "run_1", Channel: "C1", ThreadTS: "1.2", Text: "a line"})
	for range 2 { // not kept: the second request tries again
		if _, err := f.Invoke(context.Background(), raw); err == nil || !strings.Contains(err.Error(), "AGENTSFLEET_SLACK_BOT_TOKEN_ARN") || !strings.Contains(err.Error(), "no-such-secret") {
			t.Errorf("a thread request with an unreadable token = %v, want an error naming the setting and the secret", err)
		}
	}
	if f, err := build(env(base), cfg, nil, quiet); err != nil || f == nil {
		t.Fatalf("build with every setting = %v, %v", f, err)
	}
}

// TestFunction drives the handler as Lambda would, with the secrets in
// Secrets Manager and Slack's Web API a fake that wants the bot token.
func TestFunction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cfg := awstest.Config(t)
	const signing, token = "signing-from-secrets-manager", "xoxb-from-secrets-manager"
	sm := secretsmanager.NewFromConfig(cfg)
	arn := func(value string) string {
		out, err := sm.CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(awstest.UniqueName(t, "slack")), SecretString: aws.String(value)})
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(out.ARN)
	}
	table := awstest.UniqueName(t, "slackfn")
	db := dynamodb.NewFromConfig(cfg)
	if err := store.CreateTable(ctx, db, table); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var posts []string
	fake := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/api/chat.postMessage" || (r.PostForm.Get("token") != token && r.Header.Get("Authorization") != "Bearer "+token) {
			io.WriteString(w, `{"ok":false,"error":"invalid_auth"}`)
			return
		}
		mu.Lock()
		posts = append(posts, r.PostForm.Get("channel")+" "+r.PostForm.Get("thread_ts")+" "+r.PostForm.Get("text"))
		mu.Unlock()
		io.WriteString(w, `{"ok":true,"channel":"C0123ABCD","ts":"1796123500.000900"}`)
	}))
	defer fake.Close()
	settings := map[string]string{"AGENTSFLEET_TABLE": table, "AGENTSFLEET_FUNCTION_RUNNER": "agentsfleet-runner",
		"AGENTSFLEET_SLACK_SIGNING_SECRET_ARN": arn(signing), "AGENTSFLEET_SLACK_BOT_TOKEN_ARN": arn(token),
		"AGENTSFLEET_SLACK_SIGNING_SECRET": "not-this-one", "AGENTSFLEET_SLACK_API_URL": fake.URL + "/api"}
	local := invoke.NewLocal(nil)
	defer local.Close()
	local.Register(invoke.Runner, func(context.Context, []byte) ([]byte, error) { return nil, nil })
	f, err := build(func(k string) string { return settings[k] }, cfg, local, quiet)
	if err != nil {
		t.Fatal(err)
	}
	call := func(name string) events.APIGatewayV2HTTPResponse {
		t.Helper()
		raw, err := os.ReadFile(filepath.Join("..", "..", "events", "slack", name))
		if err != nil {
			t.Fatal(err)
		}
		var req events.APIGatewayV2HTTPRequest
		json.Unmarshal(raw, &req)
		ts, sig := slack.Sign(signing, time.Now(), []byte(req.Body))
		req.Headers["x-slack-request-timestamp"], req.Headers["x-slack-signature"] = ts, sig
		raw, _ = json.Marshal(req)
		out, err := f.Invoke(ctx, raw)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		var resp events.APIGatewayV2HTTPResponse
		if err := json.Unmarshal(out, &resp); err != nil {
			t.Fatalf("%s: the answer %s: %v", name, out, err)
		}
		return resp
	}
	if resp := call("url_verification.json"); resp.StatusCode != 200 || !strings.Contains(resp.Body, "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P") {
		t.Fatalf("url_verification = %d %s", resp.StatusCode, resp.Body)
	}
	// An unrouted channel, no default fleet: the answer reaches Slack with
	// the token from Secrets Manager.
	if resp := call("app_mention.json"); resp.StatusCode != 200 {
		t.Fatalf("app_mention = %d %s", resp.StatusCode, resp.Body)
	}
	mu.Lock()
	got := append([]string(nil), posts...)
	mu.Unlock()
	if len(got) != 1 || !strings.HasPrefix(got[0], "C0123ABCD 1796123395.000100 ") || !strings.Contains(got[0], "agentsfleet slack route C0123ABCD") {
		t.Fatalf("posts = %q, want the routing answer in the mention's thread", got)
	}
	// The runner's thread requests are posted with the same token.
	raw, _ := json.Marshal(thread.Request{Op: thread.OpLine, RunID: "run_1", Channel: "C0123ABCD", ThreadTS: "1796123395.000100", Text: "a line"})
	out, err := f.Invoke(ctx, raw)
	var resp thread.Response
	if err != nil || json.Unmarshal(out, &resp) != nil || !resp.Delivered {
		t.Fatalf("thread request = %s, %v; want delivered", out, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(posts) != 2 || posts[1] != "C0123ABCD 1796123395.000100 a line" {
		t.Fatalf("posts = %q, want the line in its thread", posts)
	}
	if _, err := f.Invoke(ctx, []byte(`{"hello":1}`)); err == nil {
		t.Fatal("an unknown payload was accepted")
	}
}
