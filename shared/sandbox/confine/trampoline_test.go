//go:build linux

package confine

import (
	"fmt"
	"os/exec"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// key caches policies by an id of their fields: changing any field of a
// wirePolicy, or any of its Limits, must change the key.
func TestKeyCoversEveryField(t *testing.T) {
	base := wirePolicy{ReadOnly: []string{"/data"}, Writable: []string{"/work"}, Landlock: true, Seccomp: true}
	want := base.build()
	if got := base.key(); got != want {
		t.Fatalf("key() = %q, want what build writes, %q", got, want)
	}
	var changes []wirePolicy
	v := reflect.ValueOf(base)
	for i := range v.NumField() {
		f := v.Field(i)
		set := func(change func(reflect.Value)) {
			w := base
			w.ReadOnly, w.Writable = slices.Clone(base.ReadOnly), slices.Clone(base.Writable)
			change(reflect.ValueOf(&w).Elem().Field(i))
			changes = append(changes, w)
		}
		switch f.Kind() {
		case reflect.Bool:
			set(func(f reflect.Value) { f.SetBool(!f.Bool()) })
		case reflect.Int:
			set(func(f reflect.Value) { f.SetInt(f.Int() + 1000) })
		case reflect.String:
			set(func(f reflect.Value) { f.SetString("/work/src") })
		case reflect.Slice:
			set(func(f reflect.Value) { f.Set(reflect.Append(f, reflect.ValueOf("/more"))) })
			// The same paths split differently between the lists.
			set(func(f reflect.Value) {
				f.Set(reflect.Append(f, reflect.ValueOf("/data")))
			})
		case reflect.Struct:
			for j := range f.NumField() {
				set(func(f reflect.Value) { f.Field(j).SetUint(1 << 20) })
			}
		default:
			t.Fatalf("field %s: no change written for kind %s", v.Type().Field(i).Name, f.Kind())
		}
	}
	// Moving a path from one list to the other.
	moved := base
	moved.ReadOnly, moved.Writable = nil, []string{"/data", "/work"}
	changes = append(changes, moved)
	for _, w := range changes {
		if got, built := w.key(), w.build(); got != built {
			t.Errorf("%+v: key() = %q, want %q", w, got, built)
		}
	}
}

// The guard lists sandboxd's threads as they are now, including those
// started since the last command, and withGuard builds its filter for them
// rather than return the one it kept.
func TestGuardSeesNewThreads(t *testing.T) {
	key := (&wirePolicy{Seccomp: true}).key()
	if _, err := withGuard(key); err != nil {
		t.Fatal(err)
	}
	before := currentGuard()
	// More goroutines locked to threads than the process has threads: the
	// runtime must start some.
	n := len(before.TIDs) + 4
	started := make(chan int)
	stop := make(chan struct{})
	defer close(stop)
	for range n {
		go func() {
			// Unlocked before it returns, the thread stays, idle: one that
			// went away would change the guard and send later tests cold.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			started <- unix.Gettid()
			<-stop
		}()
	}
	var tids []int
	for range n {
		tids = append(tids, <-started)
	}
	after := currentGuard()
	fresh := 0
	for _, tid := range tids {
		if !slices.Contains(before.TIDs, tid) {
			fresh++
		}
		if tid != after.PID && !slices.Contains(after.TIDs, tid) {
			t.Errorf("thread %d is not in the guard %v", tid, after.TIDs)
		}
	}
	if fresh == 0 {
		t.Fatalf("no thread was started (before %v, locked %v)", before.TIDs, tids)
	}
	// The runtime may start threads of its own meanwhile (more so under
	// the race detector): compare only when none did during the call.
	for attempt := 0; ; attempt++ {
		g := currentGuard()
		enc, err := withGuard(key)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(currentGuard().TIDs, g.TIDs) {
			if attempt == 10 {
				t.Fatal("sandboxd's threads kept changing")
			}
			continue
		}
		if prog, _ := compiledFilter(g); !strings.Contains(enc, "bpf "+prog+"\n") {
			t.Fatal("withGuard did not use the filter built for the current threads")
		}
		return
	}
}

func TestReserveThreads(t *testing.T) {
	ReserveThreads(48)
	if g := currentGuard(); len(g.TIDs)+1 < 48 {
		t.Fatalf("%d threads after reserving 48", len(g.TIDs)+1)
	}
}

// A sandboxd with more threads than its commands' filters name says so
// once, where its commands share its uid (started as nobody here).
func TestGuardWarnsPastItsThreads(t *testing.T) {
	t.Parallel()
	requireRoot(t)
	cmd := exec.Command(helperPath, helperArg, "many-threads")
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: NobodyID, Gid: NobodyID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("helper many-threads: %v, %q", err, out)
	}
	// The ids the filter names are the process's and maxGuardTIDs-1 more.
	if !strings.Contains(string(out), fmt.Sprintf("named %d\n", maxGuardTIDs-1)) || strings.Count(string(out), "more threads than") != 1 {
		t.Fatalf("helper many-threads: %q, want %d threads named besides the process and one warning", out, maxGuardTIDs-1)
	}
}

// A warm trampoline started before sandboxd started a thread has a filter
// that does not name that thread: Start does not use it, and the pool
// refills with trampolines that do.
func TestStaleWarmTrampolineIsNotUsed(t *testing.T) {
	p := &Policy{Env: []string{"STALE_GUARD_TEST=1"}}
	prewarm(t, p)
	stop := make(chan struct{})
	defer close(stop)
	// Hold more threads than the reserve has idle, so that some are new,
	// then reserve idle ones again, so that no more start meanwhile.
	before := currentGuard().TIDs
	var locked sync.WaitGroup
	for range 64 {
		locked.Add(1)
		go func() {
			// Unlocked before it returns, the thread stays: a thread
			// that goes away changes the guard too, and would send the
			// tests after this one cold.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			locked.Done()
			<-stop
		}()
	}
	locked.Wait()
	ReserveThreads(8)
	if after := currentGuard().TIDs; len(after) <= len(before) {
		t.Fatalf("no new thread: %d before, %d after", len(before), len(after))
	}
	run := func() int64 {
		cmd, err := p.Command("true")
		if err != nil {
			t.Fatal(err)
		}
		n := warmStarts.Load()
		if err := Start(cmd); err != nil {
			t.Fatal(err)
		}
		if err := cmd.Wait(); err != nil {
			t.Fatal(err)
		}
		return warmStarts.Load() - n
	}
	if run() != 0 {
		t.Fatal("a trampoline whose filter predates a thread was used")
	}
	prewarm(t, p)
	if run() != 1 {
		t.Fatal("the refilled pool was not used")
	}
}
