package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/runnerfn"
	"github.com/agentsfleet/agentsfleet/shared/improve"
	"github.com/agentsfleet/agentsfleet/shared/run"
)

// The sample events are the payloads the runner takes: a run's and a
// child agent's.
func TestSampleEvents(t *testing.T) {
	t.Parallel()
	for name, child := range map[string]bool{"invoke.json": false, "child.json": true} {
		b, err := os.ReadFile("../../events/runner/" + name)
		if err != nil {
			t.Fatal(err)
		}
		var p run.Payload
		dec := json.NewDecoder(strings.NewReader(string(b)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&p); err != nil || p.RunID == "" || (p.ChildID != "") != child {
			t.Fatalf("events/runner/%s: %v, %+v", name, err, p)
		}
	}
}

// newRunner is what main builds, with the settings of env.
// An improvement chat's turn is the runner's payload too.
func TestSampleImproveEvent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../events/runner/improve.json")
	if err != nil {
		t.Fatal(err)
	}
	var p improve.Payload
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.ImprovementID == "" || p.Turn != 1 {
		t.Fatalf("events/runner/improve.json: %v, %+v", err, p)
	}
}

func newRunner(env map[string]string) (*runnerfn.Function, error) {
	return runnerfn.New(context.Background(), deploy.Env{Getenv: func(k string) string { return env[k] },
		AWS: aws.Config{Region: "us-east-1"}, Log: slog.New(slog.DiscardHandler)})
}

func TestSettingsAreChecked(t *testing.T) {
	t.Parallel()
	sandboxes := map[string]string{"AGENTSFLEET_SANDBOX_CLUSTER": "c", "AGENTSFLEET_SANDBOX_TASK_DEFINITION": "td",
		"AGENTSFLEET_SANDBOX_SECURITY_GROUPS": "sg-1"}
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "AGENTSFLEET_TABLE, AWS_LAMBDA_FUNCTION_NAME, AGENTSFLEET_FUNCTION_WEBTOOLS not set"},
		{map[string]string{"AGENTSFLEET_TABLE": "t"}, "AGENTSFLEET_FUNCTION_WEBTOOLS"},
		{map[string]string{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w",
			"AGENTSFLEET_MODEL_PROVIDER": "palm"}, `AGENTSFLEET_MODEL_PROVIDER="palm"`},
		// The sandbox settings are checked before anything is made.
		{merge(sandboxes, map[string]string{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w"}),
			"AGENTSFLEET_SANDBOX_SUBNETS not set"},
		{map[string]string{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w",
			"AGENTSFLEET_SANDBOX_WARM": "huge=1"}, "AGENTSFLEET_SANDBOX_WARM"},
		// Sandboxes need the key of their tokens.
		{merge(sandboxes, map[string]string{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w",
			"AGENTSFLEET_SANDBOX_SUBNETS": "subnet-a"}), "AGENTSFLEET_SANDBOX_TOKEN_KEY_ARN"},
	} {
		if _, err := newRunner(tc.env); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newRunner(%v) = %v, want an error with %q", tc.env, err, tc.want)
		}
	}
	all := merge(sandboxes, map[string]string{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w",
		"AGENTSFLEET_SANDBOX_SUBNETS": "subnet-a", "AGENTSFLEET_MODEL_PROVIDER": "scripted", "AGENTSFLEET_CHECKPOINT_BUCKET": "b",
		"AGENTSFLEET_SANDBOX_TOKEN_KEY_ARN": "arn:aws:secretsmanager:us-east-1:1:secret:k"})
	if r, err := newRunner(all); err != nil || r == nil {
		t.Fatalf("newRunner with every setting = %v, %v", r, err)
	}
}

func merge(ms ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range ms {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}
