//go:build linux

package runner_test

import (
	"testing"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestCutAnswerSucceeds: an answer that hits the model's output limit with
// no tool call ends the run succeeded, the answer followed by a note that
// it was cut (README.md, "Limits and error codes"): no error code.
func TestCutAnswerSucceeds(t *testing.T) {
	t.Parallel()
	e := newEnv(t, `
[[turn]]
text = "The report, as far as it got"
stop = "max_tokens"
`)
	d := e.fleet(definition("cut-answer", "bash"))
	id := e.start(d, "write the report")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	const want = "The report, as far as it got\n\n[The answer was cut at the model's output limit.]"
	if run.Status != store.StatusSucceeded || end.Status != afrun.StatusSucceeded || end.Error != nil || end.Answer != want {
		t.Fatalf("run %s, ended %+v; want succeeded, no error, answer %q", run.Status, end, want)
	}
}
