package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/agentsfleet/agentsfleet/shared/api"
	"github.com/agentsfleet/agentsfleet/shared/deploy"
	"github.com/agentsfleet/agentsfleet/shared/deploy/apifn"
)

// build is what main builds, with the settings of env.
func build(env func(string) string, log *slog.Logger) (*api.API, error) {
	return apifn.New(context.Background(), deploy.Env{Getenv: env, AWS: aws.Config{Region: "eu-west-1"}, Log: log})
}

func TestBuildSaysWhatIsMissing(t *testing.T) {
	t.Parallel()
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	base := map[string]string{"AGENTSFLEET_TABLE": "t", "AGENTSFLEET_FUNCTION_RUNNER": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w"}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	for _, tt := range []struct {
		name string
		drop string
		add  map[string]string
		want string
	}{
		{"no table", "AGENTSFLEET_TABLE", nil, "AGENTSFLEET_TABLE"},
		{"no runner", "AGENTSFLEET_FUNCTION_RUNNER", nil, "AGENTSFLEET_FUNCTION_RUNNER"},
		{"half the schedule settings", "", map[string]string{"AGENTSFLEET_SCHEDULE_GROUP": "g"}, "go together"},
	} {
		m := map[string]string{}
		for k, v := range base {
			if k != tt.drop {
				m[k] = v
			}
		}
		for k, v := range tt.add {
			m[k] = v
		}
		if _, err := build(env(m), log); err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: build = %v, want an error naming %s", tt.name, err, tt.want)
		}
	}
	all := map[string]string{"AGENTSFLEET_SCHEDULE_GROUP": "agentsfleet", "AGENTSFLEET_SCHEDULE_TARGET_ARN": "arn:aws:lambda:eu-west-1:123456789012:function:schedule",
		"AGENTSFLEET_SCHEDULE_ROLE_ARN": "arn:aws:iam::123456789012:role/scheduler"}
	for k, v := range base {
		all[k] = v
	}
	if a, err := build(env(all), log); err != nil || a == nil {
		t.Fatalf("build with every setting = %v, %v", a, err)
	}
}
