package store_test

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestChildren(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.running(t, "ops")
	other := e.running(t, "ops")

	c1, err := startChild(e, r.ID, "", "look into the failing test", []string{"read", "grep"})
	if err != nil || c1.Depth != 1 || c1.Status != store.ChildRunning || c1.RunID != r.ID || len(c1.Tools) != 2 {
		t.Fatalf("StartChild = %+v, %v; want a running child at depth 1", c1, err)
	}
	c2, err := startChild(e, r.ID, c1.ID, "read the log", nil)
	if err != nil || c2.Depth != 2 || c2.ParentID != c1.ID {
		t.Fatalf("StartChild(grandchild) = %+v, %v; want depth 2 under %s", c2, err, c1.ID)
	}
	otherChild, err := startChild(e, other.ID, "", "elsewhere", nil)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		runID  string
		parent string
		want   fault.Code
	}{
		{"depth 3", r.ID, c2.ID, fault.ChildDepth},
		{"parent never issued", r.ID, "child_nope", fault.ChildNotFound},
		{"parent of another run", r.ID, otherChild.ID, fault.ChildNotFound},
		{"no run", "run_nope", "", fault.RunNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := startChild(e, tt.runID, tt.parent, "task", nil)
			wantCode(t, err, tt.want)
		})
	}

	got, err := e.GetChild(ctx, r.ID, c2.ID)
	if err != nil || got.Task != "read the log" || got.Depth != 2 {
		t.Fatalf("GetChild = %+v, %v", got, err)
	}
	for _, id := range []string{"child_nope", otherChild.ID, ""} {
		_, err := e.GetChild(ctx, r.ID, id)
		wantCode(t, err, fault.ChildNotFound)
	}
	_, err = e.GetChild(ctx, "run_nope", c1.ID)
	wantCode(t, err, fault.RunNotFound)

	done, _, err := e.FinishChild(ctx, r.ID, c2.ID, store.ChildDone, "the log says OOM")
	if err != nil || done.Status != store.ChildDone || done.Result != "the log says OOM" || done.EndedAt.IsZero() {
		t.Fatalf("FinishChild = %+v, %v", done, err)
	}
	if _, _, err := e.FinishChild(ctx, r.ID, c2.ID, store.ChildFailed, ""); !errors.Is(err, store.ErrChildEnded) {
		t.Fatalf("FinishChild twice = %v, want ErrChildEnded", err)
	}
	_, _, err = e.FinishChild(ctx, r.ID, otherChild.ID, store.ChildDone, "")
	wantCode(t, err, fault.ChildNotFound)
	_, _, err = e.FinishChild(ctx, r.ID, c1.ID, "running", "")
	wantCode(t, err, fault.RequestInvalid)
	if _, err := startChild(e, r.ID, c2.ID, "from a finished parent", nil); !errors.Is(err, fault.ChildDepth) {
		t.Fatalf("StartChild under a depth-2 child = %v, want child_depth_reached", err)
	}
	if run, _ := e.GetRun(ctx, r.ID); run.ChildrenRunning != 1 || run.ChildrenStarted != 2 {
		t.Fatalf("run counts %d running, %d started; want 1, 2", run.ChildrenRunning, run.ChildrenStarted)
	}

	// A child that ended cannot start children.
	c3, _ := startChild(e, r.ID, "", "short", nil)
	if _, _, err := e.FinishChild(ctx, r.ID, c3.ID, store.ChildFailed, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := startChild(e, r.ID, c3.ID, "orphan", nil); !errors.Is(err, store.ErrChildEnded) {
		t.Fatalf("StartChild under an ended parent = %v, want ErrChildEnded", err)
	}

	// When the run ends, the children still working end interrupted.
	ended, err := e.InterruptRunningChildren(ctx, r.ID, nil)
	if err != nil || len(ended) != 1 || ended[0].ID != c1.ID {
		t.Fatalf("InterruptRunningChildren = %+v, %v; want c1", ended, err)
	}
	kids, err := e.ListChildren(ctx, r.ID)
	if err != nil || len(kids) != 3 {
		t.Fatalf("ListChildren = %d, %v; want 3", len(kids), err)
	}
	want := map[string]store.ChildStatus{c1.ID: store.ChildInterrupted, c2.ID: store.ChildDone, c3.ID: store.ChildFailed}
	for _, k := range kids {
		if k.Status != want[k.ID] {
			t.Fatalf("child %s is %s, want %s", k.ID, k.Status, want[k.ID])
		}
	}
	if run, _ := e.GetRun(ctx, r.ID); run.ChildrenRunning != 0 {
		t.Fatalf("run counts %d running after interrupt, want 0", run.ChildrenRunning)
	}

	// A run that is not running starts no children.
	queued := e.run(t, "ops", false)
	if _, err := startChild(e, queued.ID, "", "early", nil); !errors.Is(err, store.ErrRunEnded) {
		t.Fatalf("StartChild of a queued run = %v, want ErrRunEnded", err)
	}
}

// startChild starts a child with no share, secrets or hosts, and no key.
func startChild(e *env, runID, parentID, task string, tools []string) (store.Child, error) {
	c, _, err := e.StartChild(ctx, store.NewChild{RunID: runID, ParentID: parentID, Task: task, Tools: tools})
	return c, err
}

func TestConcurrentChildrenRespectCaps(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.running(t, "ops")

	// 10 at once: exactly 4 start, 6 hit the running cap.
	errs := make([]error, 10)
	parallel(len(errs), func(i int) { _, errs[i] = startChild(e, r.ID, "", "task", nil) })
	started := 0
	for _, err := range errs {
		if err == nil {
			started++
		} else {
			wantCode(t, err, fault.ChildCapReached)
		}
	}
	if run, _ := e.GetRun(ctx, r.ID); started != store.MaxChildrenRunning || run.ChildrenRunning != 4 {
		t.Fatalf("%d started, run counts %d running; want 4", started, run.ChildrenRunning)
	}

	// 10 starters loop while 4 finishers end children: never more than 4
	// running, and no more than 16 ever start.
	var (
		mu      sync.Mutex
		running = map[string]bool{}
		total   atomic.Int64
		peak    int
	)
	kids, _ := e.ListChildren(ctx, r.ID)
	for _, k := range kids {
		running[k.ID] = true
	}
	total.Store(int64(len(kids)))
	var capRunning, capTotal atomic.Int64
	stop := make(chan struct{})
	var finishers sync.WaitGroup
	for range 4 {
		finishers.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				var id string
				for k := range running {
					id = k
					break
				}
				delete(running, id)
				mu.Unlock()
				if id == "" {
					time.Sleep(time.Millisecond) // nothing to finish yet
					continue
				}
				if _, _, err := e.FinishChild(ctx, r.ID, id, store.ChildDone, ""); err != nil {
					t.Errorf("FinishChild: %v", err)
				}
			}
		})
	}
	parallel(10, func(int) {
		for range 6 {
			c, err := startChild(e, r.ID, "", "task", nil)
			if err != nil {
				if !errors.Is(err, fault.ChildCapReached) {
					t.Errorf("StartChild: %v", err)
				}
				if strings.Contains(err.Error(), "in all") {
					capTotal.Add(1)
				} else {
					capRunning.Add(1)
				}
				continue
			}
			total.Add(1)
			run, _ := e.GetRun(ctx, r.ID)
			mu.Lock()
			running[c.ID] = true
			peak = max(peak, run.ChildrenRunning)
			mu.Unlock()
		}
	})
	close(stop)
	finishers.Wait()
	run, _ := e.GetRun(ctx, r.ID)
	kids, _ = e.ListChildren(ctx, r.ID)
	t.Logf("started %d, refused %d at the running cap and %d at the total cap; peak running %d",
		total.Load(), capRunning.Load(), capTotal.Load(), peak)
	if total.Load() != store.MaxChildrenTotal || run.ChildrenStarted != 16 || len(kids) != 16 {
		t.Fatalf("started %d, run counts %d, %d listed; want exactly 16", total.Load(), run.ChildrenStarted, len(kids))
	}
	if peak > store.MaxChildrenRunning {
		t.Fatalf("peak running %d, want at most 4", peak)
	}
	if capTotal.Load() == 0 {
		t.Fatal("no start was refused at the 16 total cap; the test did not reach it")
	}
	working := 0
	for _, k := range kids {
		if k.Status == store.ChildRunning {
			working++
		}
	}
	if working != run.ChildrenRunning {
		t.Fatalf("%d children are running, run counts %d", working, run.ChildrenRunning)
	}
}
