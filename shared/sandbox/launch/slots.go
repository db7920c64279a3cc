package launch

import (
	"errors"
	"sync"
)

// ErrClosed is Slots.Hold's error after Close.
var ErrClosed = errors.New("the launcher is closed")

// Slots keeps what a launcher holds for each run's sandbox (a process, a
// task), one slot a run: a run's Acquires and Releases take its slot in
// turn, while different runs go on at once. The zero Slots is ready to use
// and safe for concurrent use.
type Slots[T any] struct {
	mu     sync.Mutex
	m      map[string]*slot[T]
	closed bool
}

type slot[T any] struct {
	mu   sync.Mutex
	gone bool // taken: the Slots forgot it
	v    *T   // nil: no sandbox
}

// Hold calls f with the run's value (nil when it has none), holding the
// run's slot, and keeps what f returns; nil forgets the run. It fails with
// ErrClosed, calling nothing, after Close.
func (s *Slots[T]) Hold(runID string, f func(cur *T) *T) error {
	for {
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return ErrClosed
		}
		if s.m == nil {
			s.m = map[string]*slot[T]{}
		}
		sl := s.m[runID]
		if sl == nil {
			sl = &slot[T]{}
			s.m[runID] = sl
		}
		s.mu.Unlock()

		sl.mu.Lock()
		if sl.gone { // taken while we waited: take the new slot
			sl.mu.Unlock()
			continue
		}
		sl.v = f(sl.v)
		if sl.v == nil {
			sl.gone = true
			s.forget(runID, sl)
		}
		sl.mu.Unlock()
		return nil
	}
}

func (s *Slots[T]) forget(runID string, sl *slot[T]) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m[runID] == sl {
		delete(s.m, runID)
	}
}

// Take forgets the run and, when it had a value, calls f with it while
// holding its slot, so that an Acquire of the run waiting for the slot
// starts anew after f. It reports whether the run had a value.
func (s *Slots[T]) Take(runID string, f func(v *T)) bool {
	s.mu.Lock()
	sl := s.m[runID]
	delete(s.m, runID)
	s.mu.Unlock()
	if sl == nil {
		return false
	}
	return sl.take(f)
}

func (sl *slot[T]) take(f func(v *T)) bool {
	sl.mu.Lock()
	defer sl.mu.Unlock()
	sl.gone = true
	v := sl.v
	sl.v = nil
	if v == nil {
		return false
	}
	f(v)
	return true
}

// Peek calls f with the run's value, or nil, holding its slot.
func (s *Slots[T]) Peek(runID string, f func(v *T)) {
	s.mu.Lock()
	sl := s.m[runID]
	s.mu.Unlock()
	if sl == nil {
		f(nil)
		return
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	f(sl.v)
}

// Each calls f with every run's value, holding each slot in turn; runs
// without one are skipped.
func (s *Slots[T]) Each(f func(v *T)) {
	s.mu.Lock()
	all := make([]*slot[T], 0, len(s.m))
	for _, sl := range s.m {
		all = append(all, sl)
	}
	s.mu.Unlock()
	for _, sl := range all {
		sl.mu.Lock()
		if sl.v != nil {
			f(sl.v)
		}
		sl.mu.Unlock()
	}
}

// Close takes every run, calling f for each value at once, and waits; a
// later Hold fails with ErrClosed. It is safe to call more than once.
func (s *Slots[T]) Close(f func(v *T)) {
	s.mu.Lock()
	s.closed = true
	all := s.m
	s.m = nil
	s.mu.Unlock()
	var wg sync.WaitGroup
	for _, sl := range all {
		wg.Go(func() { sl.take(f) })
	}
	wg.Wait()
}
