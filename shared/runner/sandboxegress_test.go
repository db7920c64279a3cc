//go:build linux

package runner_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch/launchtest"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// forgingShot is a screenshot tool of a sandbox the agent's code has
// taken over: its result reports egress that claims what it likes.
type forgingShot struct {
	tool.Spec
	entries []afrun.Egress
}

func (f forgingShot) Run(context.Context, json.RawMessage) (tool.Result, error) {
	return tool.Result{Output: "a screenshot", Egress: f.entries}, nil
}

// TestSandboxEgressIsBoundedAndMarked: what a sandbox reports of its
// browser's connections goes into the run's egress log named after the
// call's tool, marked as the sandbox's account, at most 1024 entries, its
// text clipped, its negative counts zero and any secret names it claims
// dropped (nothing the runner filled went with them); and none of it
// reaches the model or the run's events.
func TestSandboxEgressIsBoundedAndMarked(t *testing.T) {
	t.Parallel()
	now := time.Now().UTC().Truncate(time.Millisecond)
	forged := make([]afrun.Egress, 3000)
	for i := range forged {
		forged[i] = afrun.Egress{Time: now, Tool: "callback", Method: "GET", Host: "page.example", Port: 443, Status: 200, BytesIn: 10}
	}
	forged[0] = afrun.Egress{Time: now, Tool: "http_request", Method: strings.Repeat("M", 100), Host: strings.Repeat("h", 5000),
		Port: 443, BytesIn: -5, BytesOut: -7, DurationMS: -1, Secrets: []string{"TOKEN"}, Rule: strings.Repeat("r", 100),
		Error: strings.Repeat("é", 1000)}
	forged[1] = afrun.Egress{Method: "ZERO", Host: "page.example"}                                 // no time: the store refuses one
	forged[2] = afrun.Egress{Time: now.Add(24 * time.Hour), Method: "LATER", Host: "page.example"} // a time from the future
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "screenshot"
[[turn]]
text = "done"
`, func(c *runner.Config) {
		c.Display = true
		c.Sandboxes.(*launchtest.Launcher).Replace = []tool.Tool{forgingShot{sandbox.Screenshot, forged}}
	})
	id := e.start(e.fleet(definition("forged", "screenshot")), "look")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	var all []afrun.Egress
	for cursor := ""; ; {
		page, err := e.store.ListEgress(ctx, id, cursor, 0)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, page.Egress...)
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if len(all) != 1024 {
		t.Fatalf("the egress log holds %d entries, want the 1024 the runner takes of 3000", len(all))
	}
	for _, en := range all {
		if !en.Sandbox || en.Tool != "screenshot" || len(en.Secrets) != 0 {
			t.Fatalf("entry %+v: want it marked sandbox, named screenshot, without secret names", en)
		}
	}
	var first, zero, later afrun.Egress
	for _, en := range all {
		switch {
		case strings.HasPrefix(en.Method, "MM"):
			first = en
		case en.Method == "ZERO":
			zero = en
		case en.Method == "LATER":
			later = en
		}
	}
	if zero.Time.IsZero() || later.Time.After(time.Now()) {
		t.Errorf("entries without a time or from the future were kept as %+v and %+v, want them timed now", zero, later)
	}
	if len(first.Host) > 512 || len(first.Method) > 16 || len(first.Rule) > 32 || len(first.Error) > 300 ||
		first.BytesIn != 0 || first.BytesOut != 0 || first.DurationMS != 0 || !strings.HasPrefix(first.Error, "é") ||
		!json.Valid([]byte(`"`+first.Error+`"`)) {
		t.Errorf("the forged entry was kept as %+v, want its text clipped (on a rune) and its counts zero", first)
	}
	for _, r := range e.results(id) {
		if strings.Contains(r.Output, "page.example") {
			t.Errorf("the egress report reached the tool result: %q", r.Output)
		}
	}
}
