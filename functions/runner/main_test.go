package main

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"strings"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/runner"
)

// The sample event is the payload the runner takes.
func TestSampleEvent(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("../../events/runner/invoke.json")
	if err != nil {
		t.Fatal(err)
	}
	var p runner.Payload
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil || p.RunID == "" {
		t.Fatalf("events/runner/invoke.json: %v, %+v", err, p)
	}
}

func TestSettingsAreChecked(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		env  map[string]string
		want string
	}{
		{map[string]string{}, "AGENTSFLEET_TABLE is not set"},
		{map[string]string{"AGENTSFLEET_TABLE": "t"}, "AGENTSFLEET_FUNCTION_WEBTOOLS"},
		{map[string]string{"AGENTSFLEET_TABLE": "t", "AWS_LAMBDA_FUNCTION_NAME": "r", "AGENTSFLEET_FUNCTION_WEBTOOLS": "w",
			"AGENTSFLEET_MODEL_PROVIDER": "palm"}, `AGENTSFLEET_MODEL_PROVIDER="palm"`},
	} {
		_, err := newRunner(context.Background(), func(k string) string { return tc.env[k] }, slog.New(slog.DiscardHandler))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("newRunner(%v) = %v, want an error with %q", tc.env, err, tc.want)
		}
	}
}
