package settings_test

import (
	"context"
	"go/parser"
	"go/token"
	"log/slog"
	"maps"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"sync"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/apifn"
	"github.com/agentsfleet/agentsfleet/shared/deploy/runnerfn"
	"github.com/agentsfleet/agentsfleet/shared/deploy/schedulefn"
	"github.com/agentsfleet/agentsfleet/shared/deploy/settings"
	"github.com/agentsfleet/agentsfleet/shared/deploy/slackfn"
	"github.com/agentsfleet/agentsfleet/shared/deploy/webtoolsfn"
	"github.com/agentsfleet/agentsfleet/shared/setting"
)

// build builds function with the settings of getenv.
func build(function string, getenv func(string) string) error {
	ctx := context.Background()
	e := deploy.Env{Getenv: getenv, AWS: aws.Config{Region: "us-east-1"}, Log: slog.New(slog.DiscardHandler)}
	var err error
	switch function {
	case "api":
		_, err = apifn.New(ctx, e)
	case "runner":
		_, err = runnerfn.New(ctx, e)
	case "schedule":
		_, err = schedulefn.New(ctx, e)
	case "slack":
		_, err = slackfn.New(ctx, e)
	case "webtools":
		_, err = webtoolsfn.New(ctx, e)
	}
	return err
}

// deployments are settings each function starts with, between them
// taking every branch that reads a setting.
var deployments = map[string][]map[string]string{
	"api": {
		{"AGENTSFLEET_TABLE": "t", "AGENTSFLEET_FUNCTION_RUNNER": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w",
			"AGENTSFLEET_SCHEDULE_GROUP": "g", "AGENTSFLEET_SCHEDULE_TARGET_ARN": "arn:aws:lambda:us-east-1:123456789012:function:s",
			"AGENTSFLEET_SCHEDULE_ROLE_ARN": "arn:aws:iam::123456789012:role/s", "AGENTSFLEET_TEST_ALLOW_ADDR": "127.0.0.1:8080"},
	},
	"runner": {
		{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w", "AGENTSFLEET_FUNCTION_SLACK": "s",
			"AGENTSFLEET_CHECKPOINT_BUCKET": "b", "AGENTSFLEET_MODEL_PROVIDER": "anthropic", "AGENTSFLEET_MODEL": "m",
			"AGENTSFLEET_MODEL_KEYS_ARN":  "arn:aws:secretsmanager:us-east-1:123456789012:secret:k",
			"AGENTSFLEET_SANDBOX_CLUSTER": "c", "AGENTSFLEET_SANDBOX_TASK_DEFINITION": "td", "AGENTSFLEET_SANDBOX_SUBNETS": "subnet-1",
			"AGENTSFLEET_SANDBOX_SECURITY_GROUPS": "sg-1", "AGENTSFLEET_SANDBOX_PUBLIC_IP": "false", "AGENTSFLEET_SANDBOX_WARM": "small=1",
			"AGENTSFLEET_SANDBOX_TOKEN_KEY_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:k",
			"AGENTSFLEET_SCHEDULE_GROUP":        "g", "AGENTSFLEET_SCHEDULE_TARGET_ARN": "arn:aws:lambda:us-east-1:123456789012:function:s",
			"AGENTSFLEET_SCHEDULE_ROLE_ARN": "arn:aws:iam::123456789012:role/s", "AGENTSFLEET_TEST_ALLOW_ADDR": "127.0.0.1:8080"},
		{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w", "AGENTSFLEET_MODEL_PROVIDER": "openai"},
		{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w", "AGENTSFLEET_MODEL_PROVIDER": "scripted"},
	},
	"schedule": {
		{"AGENTSFLEET_TABLE": "t", "AGENTSFLEET_FUNCTION_RUNNER": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w",
			"AGENTSFLEET_SCHEDULE_GROUP": "g", "AGENTSFLEET_SCHEDULE_TARGET_ARN": "arn:aws:lambda:us-east-1:123456789012:function:s",
			"AGENTSFLEET_SCHEDULE_ROLE_ARN": "arn:aws:iam::123456789012:role/s"},
	},
	"slack": {
		{"AGENTSFLEET_TABLE": "t", "AGENTSFLEET_FUNCTION_RUNNER": "r", "AGENTSFLEET_SLACK_SIGNING_SECRET_ARN": "arn:s",
			"AGENTSFLEET_SLACK_BOT_TOKEN_ARN": "arn:t", "AGENTSFLEET_SLACK_DEFAULT_FLEET": "f", "AGENTSFLEET_SLACK_API_URL": "http://127.0.0.1:1/api/"},
		{"AGENTSFLEET_TABLE": "t", "AGENTSFLEET_FUNCTION_RUNNER": "r", "AGENTSFLEET_SLACK_SIGNING_SECRET": "s", "AGENTSFLEET_SLACK_BOT_TOKEN": "xoxb-1"},
	},
	"webtools": {
		{"AGENTSFLEET_TABLE": "t", "AGENTSFLEET_SEARCH_BACKEND": "brave", "AGENTSFLEET_SEARCH_API_KEY_SECRET": "search", "AGENTSFLEET_TEST_ALLOW_ADDR": "127.0.0.1:8080"},
		{"AGENTSFLEET_TABLE": "t", "AGENTSFLEET_SEARCH_BACKEND": "searxng", "AGENTSFLEET_SEARCH_URL": "http://127.0.0.1:1/", "AGENTSFLEET_SEARCH_API_KEY": "k"},
	},
}

// TestSettingsAreWhatIsRead: each function's builder reads exactly the
// variables Settings lists for it (the union over deployments that take
// every branch), and starts with each of them, so that the list the
// stack's tests hold the template to is the truth.
func TestSettingsAreWhatIsRead(t *testing.T) {
	t.Parallel()
	for _, fn := range deploy.Functions {
		var mu sync.Mutex
		read := map[string]bool{}
		for _, env := range deployments[fn] {
			getenv := func(k string) string {
				mu.Lock()
				defer mu.Unlock()
				read[k] = true
				return env[k]
			}
			if err := build(fn, getenv); err != nil {
				t.Fatalf("%s with %v: %v", fn, env, err)
			}
		}
		// The webtools main reads its mode switch itself.
		if fn == "webtools" {
			read[setting.LambdaRuntimeAPI] = true
		}
		got := slices.Sorted(maps.Keys(read))
		want := setting.Names(settings.Of(fn))
		sort.Strings(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s reads %q,\n settings.Of(%q) lists %q", fn, got, fn, want)
		}
	}
	if settings.Of("nope") != nil {
		t.Error("Settings of no function is not nil")
	}
}

// TestRequiredSettings: a function without one of its required settings
// does not start, and the error names it.
func TestRequiredSettings(t *testing.T) {
	t.Parallel()
	for _, fn := range deploy.Functions {
		env := deployments[fn][0]
		for _, v := range settings.Of(fn) {
			if !v.Required {
				continue
			}
			drop := map[string]bool{v.Name: true, v.Or: true}
			err := build(fn, func(k string) string {
				if drop[k] {
					return ""
				}
				return env[k]
			})
			if err == nil || !regexp.MustCompile(`\b`+v.Name+`\b`).MatchString(err.Error()) {
				t.Errorf("%s without %s: %v, want an error naming it", fn, v.Name, err)
			}
		}
	}
}

// agentsfleetVar is a variable of agentsfleet's own, or the providers'.
var agentsfleetVar = regexp.MustCompile(`\b(AGENTSFLEET|ANTHROPIC|OPENAI)_[A-Z0-9_]*[A-Z0-9]\b`)

// TestMainsDocumentTheirSettings: each main's doc comment names every
// setting its function reads, and no other of agentsfleet's.
func TestMainsDocumentTheirSettings(t *testing.T) {
	t.Parallel()
	for _, fn := range deploy.Functions {
		path := filepath.Join("..", "..", "..", "functions", fn, "main.go")
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ParseComments|parser.PackageClauseOnly)
		if err != nil || f.Doc == nil {
			t.Fatalf("%s: %v (or no doc comment)", path, err)
		}
		doc := f.Doc.Text()
		named := map[string]bool{}
		for _, name := range agentsfleetVar.FindAllString(doc, -1) {
			named[name] = true
		}
		reads := map[string]bool{}
		for _, v := range settings.Of(fn) {
			reads[v.Name] = true
			if !named[v.Name] && !v.ByLambda() {
				t.Errorf("%s does not document %s, which %s reads", path, v.Name, fn)
			}
		}
		for name := range named {
			if !reads[name] {
				t.Errorf("%s documents %s, which %s does not read", path, name, fn)
			}
		}
	}
}
