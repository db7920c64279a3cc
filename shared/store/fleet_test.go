package store_test

import (
	"bytes"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func TestCreateFleet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "taken")
	tests := []struct {
		name string
		nf   store.NewFleet
		want fault.Code
	}{
		{"new", store.NewFleet{Name: "ops", Definition: []byte(`{}`), Hash: "h"}, fault.Code{}},
		{"name taken", store.NewFleet{Name: "taken", Definition: []byte(`{}`), Hash: "h"}, fault.FleetExists},
		{"empty name", store.NewFleet{Name: "", Definition: []byte(`{}`), Hash: "h"}, fault.RequestInvalid},
		{"name with #", store.NewFleet{Name: "a#b", Definition: []byte(`{}`), Hash: "h"}, fault.RequestInvalid},
		{"name with space", store.NewFleet{Name: "a b", Definition: []byte(`{}`), Hash: "h"}, fault.RequestInvalid},
		{"no definition", store.NewFleet{Name: "nodef", Hash: "h"}, fault.DefinitionInvalid},
		{"no hash", store.NewFleet{Name: "nohash", Definition: []byte(`{}`)}, fault.DefinitionInvalid},
		{"definition too big", store.NewFleet{Name: "big", Definition: bytes.Repeat([]byte("x"), store.MaxBlobBytes+1), Hash: "h"}, fault.DefinitionInvalid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f, err := e.CreateFleet(ctx, tt.nf)
			wantCode(t, err, tt.want)
			if err == nil && (f.Name != tt.nf.Name || f.Revision != 1 || f.Paused) {
				t.Fatalf("CreateFleet = %+v, want %s at revision 1, active", f, tt.nf.Name)
			}
		})
	}
}

func TestCreateFleetRaceHasOneWinner(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	errs := make([]error, 8)
	parallel(len(errs), func(i int) {
		_, errs[i] = e.CreateFleet(ctx, store.NewFleet{Name: "same", Definition: []byte(`{}`), Hash: "h"})
	})
	won := 0
	for _, err := range errs {
		switch {
		case err == nil:
			won++
		case !errorsIs(err, fault.FleetExists):
			t.Fatalf("CreateFleet: %v, want nil or %s", err, fault.FleetExists.ID())
		}
	}
	if won != 1 {
		t.Fatalf("%d creators won, want 1", won)
	}
}

func TestGetPauseResumeFleet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	_, err := e.GetFleet(ctx, "nope")
	wantCode(t, err, fault.FleetNotFound)
	_, err = e.PauseFleet(ctx, "nope")
	wantCode(t, err, fault.FleetNotFound)

	e.clock.Advance(time.Minute)
	f, err := e.PauseFleet(ctx, "ops")
	if err != nil || !f.Paused || !f.UpdatedAt.Equal(e.clock.Now()) {
		t.Fatalf("PauseFleet = %+v, %v; want paused, updated now", f, err)
	}
	if f, err = e.PauseFleet(ctx, "ops"); err != nil || !f.Paused {
		t.Fatalf("PauseFleet again = %+v, %v; want paused, no error", f, err)
	}
	if got, _ := e.GetFleet(ctx, "ops"); !got.Paused {
		t.Fatal("GetFleet after pause: not paused")
	}
	if f, err = e.ResumeFleet(ctx, "ops"); err != nil || f.Paused {
		t.Fatalf("ResumeFleet = %+v, %v; want active", f, err)
	}
}

func TestListFleetsPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var want []string
	for i := range 7 {
		name := fmt.Sprintf("fleet-%02d", i)
		e.fleet(t, name)
		want = append(want, name)
	}
	var got []string
	cursor := ""
	for pages := 0; ; pages++ {
		if pages > 10 {
			t.Fatal("ListFleets does not end")
		}
		page, err := e.ListFleets(ctx, cursor, 3)
		if err != nil {
			t.Fatalf("ListFleets: %v", err)
		}
		for _, f := range page.Fleets {
			got = append(got, f.Name)
			if f.Revision != 1 || f.Hash != "h1" {
				t.Fatalf("listed fleet %+v, want revision 1 and hash h1 projected", f)
			}
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("ListFleets = %v, want %v", got, want)
	}
	_, err := e.ListFleets(ctx, "not-a-cursor", 3)
	wantCode(t, err, fault.RequestInvalid)
}

func TestRevisions(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r2, err := e.AppendRevision(ctx, "ops", []byte(`{"v":2}`), "h2", store.Origin{})
	if err != nil || r2.Number != 2 {
		t.Fatalf("AppendRevision = %+v, %v; want revision 2", r2, err)
	}
	cur, err := e.CurrentRevision(ctx, "ops")
	if err != nil || cur.Number != 2 || string(cur.Definition) != `{"v":2}` || cur.Hash != "h2" {
		t.Fatalf("CurrentRevision = %+v, %v; want revision 2", cur, err)
	}
	r1, err := e.GetRevision(ctx, "ops", 1)
	if err != nil || r1.Number != 1 || string(r1.Definition) != `{"name":"ops"}` {
		t.Fatalf("GetRevision(1) = %+v, %v", r1, err)
	}
	f, _ := e.GetFleet(ctx, "ops")
	if f.Revision != 2 || f.Hash != "h2" {
		t.Fatalf("fleet = revision %d hash %s, want 2 h2", f.Revision, f.Hash)
	}
	tests := []struct {
		name  string
		fleet string
		n     int64
		want  fault.Code
	}{
		{"no such revision", "ops", 3, fault.RevisionNotFound},
		{"revision 0", "ops", 0, fault.RevisionNotFound},
		{"no such fleet", "nope", 1, fault.FleetNotFound},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := e.GetRevision(ctx, tt.fleet, tt.n)
			wantCode(t, err, tt.want)
		})
	}
	_, err = e.AppendRevision(ctx, "nope", []byte(`{}`), "h", store.Origin{})
	wantCode(t, err, fault.FleetNotFound)
	_, err = e.AppendRevision(ctx, "ops", nil, "h", store.Origin{})
	wantCode(t, err, fault.DefinitionInvalid)
}

func TestConcurrentRevisionsAreGapFree(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	const n = 12
	got := make([]int64, n)
	parallel(n, func(i int) {
		r, err := e.AppendRevision(ctx, "ops", []byte(fmt.Sprintf(`{"i":%d}`, i)), fmt.Sprint("h", i), store.Origin{})
		if err != nil {
			t.Errorf("AppendRevision: %v", err)
		}
		got[i] = r.Number
	})
	slices.Sort(got)
	for i, g := range got {
		if g != int64(i+2) {
			t.Fatalf("revision numbers = %v, want 2..%d each once", got, n+1)
		}
	}
	// Each number holds the Definition of the append that got it.
	for i := range n {
		r, err := e.GetRevision(ctx, "ops", int64(i+2))
		if err != nil || !strings.HasPrefix(string(r.Definition), `{"i":`) || r.Hash != "h"+strings.TrimSuffix(strings.TrimPrefix(string(r.Definition), `{"i":`), "}") {
			t.Fatalf("revision %d = %+v, %v; hash and Definition do not match", i+2, r, err)
		}
	}
}
