package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/agentsfleet/agentsfleet/shared/emulator"
	"github.com/agentsfleet/agentsfleet/shared/mcp/mcptest"
)

const (
	extendFleet  = "e2e-extend"
	extendAsk    = "use every tool this fleet was given"
	extendAnswer = "every extension answered."
	extendToken  = "tok-e2e-extend-7Hq2xP9"
)

// TestDeployedExtensions is a fleet extended every way the Definition
// allows, through the deployed shape: a setup step that reads a secret
// (it downloads the stdio MCP server from the outside server, which
// answers only the secret's bearer), a declared tool, a remote MCP server
// (built with the SDK, reached from the webtools function through the
// test escape hatch, its header's secret filled there) and the stdio MCP
// server the setup step fetched, started confined in the sandbox task.
// The run calls each; its events say what each did, and the secret's value
// appears in none.
func TestDeployedExtensions(t *testing.T) {
	dir := t.TempDir()
	prog := mcptest.BuildStdio(t, dir)
	binary, err := os.ReadFile(prog)
	if err != nil {
		t.Fatal(err)
	}
	remote := mcptest.New()
	mcpHandler := remote.Handler()
	outside := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/mcpstdio":
			if r.Header.Get("Authorization") != "Bearer "+extendToken {
				http.Error(w, "no", http.StatusForbidden)
				return
			}
			w.Write(binary)
		case "/mcp":
			mcpHandler.ServeHTTP(w, r)
		default:
			http.NotFound(w, r)
		}
	}))
	defer outside.Close()

	conv := conversation{marker: extendAsk, next: func(step int, _ []string) turn {
		switch step {
		case 0:
			return turn{calls: []call{
				{"count_words", map[string]any{"text": "one two three"}},
				{"mcp__remote__echo", map[string]any{"text": "hello remote"}},
				{"mcp__remote__whoami", map[string]any{}},
				{"mcp__local__echo", map[string]any{"text": "hello stdio"}},
				{"mcp__local__read", map[string]any{"path": "fetched.txt"}},
			}}
		}
		return turn{text: extendAnswer}
	}}
	dp := deploy(t, outside, nil, conv)

	cfg := aws.Config{Region: emulator.Region, BaseEndpoint: aws.String(dp.moto),
		Credentials: credentials.NewStaticCredentialsProvider("operator", "operator", "")}
	sec, err := secretsmanager.NewFromConfig(cfg).CreateSecret(context.Background(), &secretsmanager.CreateSecretInput{
		Name: aws.String("e2e/extend-token"), SecretString: aws.String(extendToken)})
	if err != nil {
		t.Fatal(err)
	}
	def := fmt.Sprintf(`name = %q
instructions = "You use your tools."
[x-agentsfleet]
tools = ["count_words", "mcp__remote__*", "mcp__local__echo", "mcp__local__read"]
[x-agentsfleet.network]
hosts = ["127.0.0.1"]
[x-agentsfleet.secrets]
TOKEN = %q
[x-agentsfleet.limits]
tool_timeout_seconds = 20
[x-agentsfleet.setup]
command = "curl -sf -H \"Authorization: Bearer $TOKEN\" -o mcpstdio %s/mcpstdio && chmod +x mcpstdio && echo fetched with a token of ${#TOKEN} characters | tee fetched.txt"
secrets = ["TOKEN"]
[[x-agentsfleet.mcp]]
name = "remote"
url = "%s/mcp"
headers = { Authorization = "Bearer «secret:TOKEN»" }
[[x-agentsfleet.mcp]]
name = "local"
command = ["./mcpstdio"]
[[tools.declared]]
name = "count_words"
description = "Counts the words of a text."
command = "printf '%%s' \"$AGENTSFLEET_ARG_TEXT\" | wc -w"
parameters = { type = "object", properties = { text = { type = "string" } }, required = ["text"] }
`, extendFleet, aws.ToString(sec.ARN), outside.URL, outside.URL)
	dp.call(t, "PUT", "/v1/fleets/"+extendFleet, "application/toml", []byte(def), http.StatusOK)
	start, _ := json.Marshal(map[string]any{"input": extendAsk})
	id := dp.call(t, "POST", "/v1/fleets/"+extendFleet+"/runs", "application/json", start, http.StatusAccepted)["run_id"].(string)
	ended := dp.waitRun(t, id)
	events := dp.events(t, id)
	all, _ := json.Marshal(events)
	if ended["status"] != "succeeded" || ended["answer"] != extendAnswer {
		t.Fatalf("the run ended %v; the model fake noted %q; its events: %s", ended, dp.model.problems, all)
	}
	if strings.Contains(string(all), extendToken) {
		t.Errorf("the secret's value is in the run's events: %s", all)
	}
	var setup map[string]any
	for _, e := range events {
		if e["type"] == "setup.ended" {
			setup, _ = e["data"].(map[string]any)
		}
	}
	if setup == nil || fmt.Sprint(setup["exit_code"]) != "0" || !strings.Contains(fmt.Sprint(setup["output"]), fmt.Sprintf("fetched with a token of %d characters", len(extendToken))) {
		t.Errorf("setup.ended = %v, want the setup to have fetched the server with the secret", setup)
	}
	res, types := results(t, events)
	for name, want := range map[string]string{
		"count_words":         "3",
		"mcp__remote__echo":   "hello remote",
		"mcp__remote__whoami": "you sent: Bearer «secret:TOKEN»",
		"mcp__local__echo":    `source="stdio MCP server local (MCP tool echo)"`,
		"mcp__local__read":    fmt.Sprintf("fetched with a token of %d characters", len(extendToken)),
	} {
		if !strings.Contains(res[name], want) {
			t.Errorf("%s's result = %q, want it to hold %q (events %v)", name, res[name], want, types)
		}
	}
	if !strings.Contains(res["mcp__local__echo"], "hello stdio") {
		t.Errorf("the stdio server's echo = %q", res["mcp__local__echo"])
	}
	if !remote.Received("Bearer " + extendToken) {
		t.Errorf("the remote server received %q, want the filled token", remote.Authorizations())
	}
}
