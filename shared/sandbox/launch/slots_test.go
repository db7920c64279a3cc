package launch_test

import (
	"errors"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/sandbox/launch"
)

// TestSlots: one run's calls take its slot in turn, different runs' go on
// at once, a taken run starts anew, and Close stops every one.
func TestSlots(t *testing.T) {
	t.Parallel()
	var s launch.Slots[int]
	var inside, most atomic.Int32
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			s.Hold("a", func(cur *int) *int {
				if n := inside.Add(1); n > most.Load() {
					most.Store(n)
				}
				defer inside.Add(-1)
				if cur == nil {
					cur = new(int)
				}
				*cur++
				return cur
			})
		})
	}
	wg.Wait()
	if most.Load() != 1 {
		t.Errorf("%d calls of one run held its slot at once", most.Load())
	}
	var got int
	s.Peek("a", func(v *int) { got = *v })
	if got != 50 {
		t.Errorf("value %d after 50 calls", got)
	}
	if took := s.Take("a", func(v *int) { got = -*v }); !took || got != -50 {
		t.Errorf("Take = %v, %d", took, got)
	}
	s.Hold("a", func(cur *int) *int {
		if cur != nil {
			t.Error("a taken run kept its value")
		}
		return nil // nothing kept: the run is forgotten
	})
	if s.Take("a", func(*int) { t.Error("a forgotten run had a value") }) {
		t.Error("Take found a forgotten run")
	}
	one, two := 1, 2
	s.Hold("x", func(*int) *int { return &one })
	s.Hold("y", func(*int) *int { return &two })
	var closed atomic.Int32
	s.Close(func(v *int) { closed.Add(int32(*v)) })
	if closed.Load() != 3 {
		t.Errorf("Close stopped values summing %d, want 3", closed.Load())
	}
	if err := s.Hold("z", func(*int) *int { t.Error("Hold ran after Close"); return nil }); !errors.Is(err, launch.ErrClosed) {
		t.Errorf("Hold after Close = %v", err)
	}
}

// Each sees every run's value, and none of a run forgotten.
func TestSlotsEach(t *testing.T) {
	t.Parallel()
	var s launch.Slots[int]
	for i, run := range []string{"a", "b", "c"} {
		v := i + 1
		s.Hold(run, func(*int) *int { return &v })
	}
	s.Hold("b", func(*int) *int { return nil })
	sum := 0
	s.Each(func(v *int) { sum += *v })
	if sum != 1+3 {
		t.Errorf("Each summed %d, want 4 (runs a and c)", sum)
	}
}
