package lazy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
)

func TestMadeOnceOnFirstGet(t *testing.T) {
	var makes atomic.Int32
	v := New(func(context.Context) (int, error) { return int(makes.Add(1)), nil })
	if makes.Load() != 0 {
		t.Fatal("New made the value; it must wait for the first Get")
	}
	var wg sync.WaitGroup
	for range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if got, err := v.Get(context.Background()); got != 1 || err != nil {
				t.Errorf("Get = %d, %v; want 1, nil", got, err)
			}
		}()
	}
	wg.Wait()
	if n := makes.Load(); n != 1 {
		t.Errorf("made %d times by 16 concurrent Gets, want once", n)
	}
}

func TestFailedMakeIsRetried(t *testing.T) {
	fail := errors.New("throttled")
	calls := 0
	v := New(func(context.Context) (string, error) {
		calls++
		if calls == 1 {
			return "partial", fail
		}
		return "ok", nil
	})
	if got, err := v.Get(context.Background()); !errors.Is(err, fail) || got != "" {
		t.Fatalf("first Get = %q, %v; want the zero value and the make's error", got, err)
	}
	if got, err := v.Get(context.Background()); got != "ok" || err != nil {
		t.Fatalf("second Get = %q, %v; want ok, nil", got, err)
	}
	if _, _ = v.Get(context.Background()); calls != 2 {
		t.Errorf("make called %d times, want 2 (kept after it succeeded)", calls)
	}
}
