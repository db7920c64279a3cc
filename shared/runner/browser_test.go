//go:build linux

package runner_test

import (
	"context"
	"strings"
	"sync"
	"testing"

	afrun "github.com/agentsfleet/agentsfleet/shared/run"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestBrowserRefusalNamesTheSetting: without sandboxes with a browser, a
// Definition allowing a display tool is refused before the model with the
// code of today, and the message says what to set (Config.NoBrowser).
func TestBrowserRefusalNamesTheSetting(t *testing.T) {
	t.Parallel()
	const why = "set AGENTSFLEET_SANDBOX_BROWSER_TASK_DEFINITION (cdk deploy -c sandboxBrowser=true)"
	e := newEnv(t, appendThrice, func(c *runner.Config) { c.NoBrowser = why })
	id := e.start(e.fleet(definition("shots", "bash", "screenshot")), "take a picture")
	if err := e.runner.Run(ctx, id); err != nil {
		t.Fatal(err)
	}
	run, end := e.ended(id)
	if run.Status != store.StatusFailed || end.Error == nil || end.Error.Code != afrun.CodeDefinition ||
		!strings.Contains(end.Error.Message, `tool "screenshot" is not available in this deployment`) || !strings.Contains(end.Error.Message, why) {
		t.Fatalf("run %s, ended %+v; want %s naming the tool and %q", run.Status, end.Error, afrun.CodeDefinition, why)
	}
	if e.modelHit != 0 {
		t.Errorf("the model was called %d times", e.modelHit)
	}
}

// TestBrowserSandboxChosenByTheLauncher: a launcher that can give
// sandboxes with a browser makes the runner accept a Definition allowing a
// display tool (Config.Display comes from it), and the run asks its
// sandbox for one; a Definition without a display tool asks for a plain
// one.
func TestBrowserSandboxChosenByTheLauncher(t *testing.T) {
	t.Parallel()
	var b *browsing
	e := newEnv(t, `
[[turn]]
[[turn.tool_call]]
name = "bash"
arguments = { command = "true" }
[[turn]]
text = "looked"
`, func(c *runner.Config) {
		b = &browsing{Launcher: c.Sandboxes}
		c.Sandboxes = b
	})
	for _, tt := range []struct {
		fleet   string
		tools   []string
		browser bool
	}{
		{"shots", []string{"bash", "browser_open", "screenshot"}, true},
		{"plain", []string{"bash"}, false},
	} {
		id := e.start(e.fleet(definition(tt.fleet, tt.tools...)), "look")
		if err := e.runner.Run(ctx, id); err != nil {
			t.Fatal(err)
		}
		if run, end := e.ended(id); run.Status != store.StatusSucceeded {
			t.Fatalf("fleet %s: run %s, ended %+v; want it accepted and succeeded", tt.fleet, run.Status, end.Error)
		}
		spec, ok := b.spec(id)
		if !ok || spec.Browser != tt.browser {
			t.Errorf("fleet %s: the sandbox asked for %+v (asked: %v), want Browser %v", tt.fleet, spec, ok, tt.browser)
		}
	}
}

// browsing is a launcher that says it gives sandboxes with a browser
// (launch.Browsers) and notes what each run asks of its sandbox.
type browsing struct {
	launch.Launcher
	mu    sync.Mutex
	specs map[string]launch.Spec
}

func (b *browsing) Browser() bool { return true }

func (b *browsing) Acquire(ctx context.Context, spec launch.Spec) (*launch.Sandbox, error) {
	b.mu.Lock()
	if b.specs == nil {
		b.specs = map[string]launch.Spec{}
	}
	b.specs[spec.RunID] = spec
	b.mu.Unlock()
	return b.Launcher.Acquire(ctx, spec)
}

func (b *browsing) spec(runID string) (launch.Spec, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	s, ok := b.specs[runID]
	return s, ok
}
