//go:build linux

package runner_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/invoke"
	"github.com/agentsfleet/agentsfleet/shared/runner"
	"github.com/agentsfleet/agentsfleet/shared/store"
	"github.com/agentsfleet/agentsfleet/shared/tool"
	"github.com/agentsfleet/agentsfleet/shared/web/wire"
)

// probe is a webtools function that measures how many calls are inside it
// at once, without timing: each call waits inside until as many calls are
// in as the cap allows (or every call of the answer has come in), so that
// calls let through beyond the cap are all inside together and counted.
type probe struct {
	total int // the calls of the answer
	cap   int // how many may be in at once
	mu    sync.Mutex
	cond  *sync.Cond
	in    int // inside now
	most  int // inside at once, at most
	done  int // returned
	// early records a call k that came in while fewer than k+1-cap calls
	// had returned: more than cap calls were under way (or a call jumped
	// the queue), however briefly the others overlapped it.
	early []string
}

func newProbe(total, cap int) *probe {
	p := &probe{total: total, cap: cap}
	p.cond = sync.NewCond(&p.mu)
	return p
}

func (p *probe) handle(ctx context.Context, payload []byte) ([]byte, error) {
	var req wire.Request
	if err := json.Unmarshal(payload, &req); err != nil {
		return nil, err
	}
	var args struct {
		URL string `json:"url"`
	}
	json.Unmarshal(req.Arguments, &args)
	var k int
	fmt.Sscanf(args.URL[strings.LastIndex(args.URL, "/")+1:], "%d", &k)
	p.mu.Lock()
	// Calls 0..k have been let in, in order; at most cap of them may be
	// unreturned.
	if k+1-p.done > p.cap {
		p.early = append(p.early, fmt.Sprintf("call %d came in with %d returned", k, p.done))
	}
	p.in++
	p.most = max(p.most, p.in)
	p.cond.Broadcast()
	for p.in < p.cap && p.in+p.done < p.total {
		p.cond.Wait()
	}
	p.in--
	p.done++
	p.cond.Broadcast()
	p.mu.Unlock()
	return json.Marshal(tool.Text("page " + args.URL))
}

// TestAnswerCallsBounded: of a model answer of 30 concurrent calls (webfetch,
// here to a probe of the webtools function), at most Config.ToolConcurrency
// run at once — by default 8 — the rest queued in the answer's order, and
// the results come back in that order.
func TestAnswerCallsBounded(t *testing.T) {
	t.Parallel()
	const calls = 30
	var script strings.Builder
	script.WriteString("[[turn]]\n")
	for i := range calls {
		fmt.Fprintf(&script, "[[turn.tool_call]]\nname = \"webfetch\"\narguments = { url = \"https://example.com/%d\" }\n", i)
	}
	script.WriteString("[[turn]]\ntext = \"read them all\"\n")
	for _, tc := range []struct {
		name    string
		setting int
		want    int
	}{
		{"default", 0, runner.DefaultToolConcurrency},
		{"three", 3, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, script.String(), func(c *runner.Config) { c.ToolConcurrency = tc.setting })
			p := newProbe(calls, tc.want)
			e.local.Register(invoke.Webtools, p.handle)
			d := e.fleet(definition("reader", "webfetch"))
			id := e.start(d, "read")
			if err := e.runner.Run(ctx, id); err != nil {
				t.Fatal(err)
			}
			if run, _ := e.ended(id); run.Status != store.StatusSucceeded {
				t.Fatalf("run %s", run.Status)
			}
			if p.most != tc.want {
				t.Errorf("at most %d calls ran at once, want %d", p.most, tc.want)
			}
			if len(p.early) > 0 {
				t.Errorf("more than %d calls under way, or out of the answer's order: %v", tc.want, p.early)
			}
			res := e.results(id)
			if len(res) != calls {
				t.Fatalf("%d results, want %d", len(res), calls)
			}
			for i, r := range res {
				if want := fmt.Sprintf("page https://example.com/%d", i); r.Output != want || r.IsError {
					t.Fatalf("result %d = %+v, want %q", i, r, want)
				}
			}
		})
	}
}

// TestToolConcurrencyFromEnv reads the setting and refuses what it cannot
// use, naming it.
func TestToolConcurrencyFromEnv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		value string
		want  int
		err   bool
	}{
		{"", 0, false}, {"1", 1, false}, {" 16 ", 16, false}, {"64", 64, false},
		{"0", 0, true}, {"-2", 0, true}, {"65", 0, true}, {"eight", 0, true},
	} {
		got, err := runner.ToolConcurrencyFromEnv(func(k string) string {
			if k == runner.EnvToolConcurrency {
				return tc.value
			}
			return ""
		})
		if got != tc.want || (err != nil) != tc.err {
			t.Errorf("%s=%q: got %d, %v; want %d, error %v", runner.EnvToolConcurrency, tc.value, got, err, tc.want, tc.err)
		}
		if err != nil && !strings.Contains(err.Error(), runner.EnvToolConcurrency) {
			t.Errorf("the error %q does not name %s", err, runner.EnvToolConcurrency)
		}
	}
}
