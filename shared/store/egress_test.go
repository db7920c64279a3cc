package store_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/run"
)

// TestEgressRecordPageAndCount writes more entries than a transaction
// holds, pages through them in order and checks the summary counts every
// one; a cursor of another run's log is refused.
func TestEgressRecordPageAndCount(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	at := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var entries []run.Egress
	var want run.EgressSummary
	for i := range 130 {
		en := run.Egress{Time: at.Add(time.Duration(i/3) * time.Millisecond), Tool: "http_request", Method: "GET",
			Host: fmt.Sprintf("h%03d.example", i), Port: 443, Status: 200, BytesIn: int64(i), BytesOut: 2}
		if i%10 == 0 {
			en = run.Egress{Time: en.Time, Tool: "webfetch", Method: "GET", Host: en.Host, Port: 80, Refused: true, Rule: run.RuleHostList}
		}
		entries = append(entries, en)
		want.Add(en)
	}
	if err := e.RecordEgress(ctx, "run_a", entries[:120]); err != nil {
		t.Fatalf("RecordEgress: %v", err)
	}
	if err := e.RecordEgress(ctx, "run_a", entries[120:]); err != nil {
		t.Fatalf("RecordEgress, second batch: %v", err)
	}
	if err := e.RecordEgress(ctx, "run_b", entries[:1]); err != nil {
		t.Fatalf("RecordEgress of another run: %v", err)
	}
	var got []string
	cursor, pages := "", 0
	for {
		page, err := e.ListEgress(ctx, "run_a", cursor, 50)
		if err != nil {
			t.Fatalf("ListEgress page %d: %v", pages, err)
		}
		for _, en := range page.Egress {
			got = append(got, en.Host)
		}
		pages++
		if page.Next == "" {
			break
		}
		if pages == 1 {
			if _, err := e.ListEgress(ctx, "run_b", page.Next, 50); !errors.Is(err, fault.RequestInvalid) {
				t.Errorf("ListEgress of run_b with run_a's cursor: err = %v, want fault.RequestInvalid", err)
			}
		}
		cursor = page.Next
	}
	var wantHosts []string
	for _, en := range entries {
		wantHosts = append(wantHosts, en.Host)
	}
	if !slices.Equal(got, wantHosts) {
		t.Errorf("listed hosts = %v\nwant %v (in the order recorded)", got, wantHosts)
	}
	if pages < 3 {
		t.Errorf("listed 130 entries in %d pages of 50, want at least 3", pages)
	}
	sum, err := e.EgressSummary(ctx, "run_a")
	if err != nil || sum != want {
		t.Errorf("EgressSummary = %+v, %v; want %+v", sum, err, want)
	}
	if sum, err := e.EgressSummary(ctx, "run_none"); err != nil || sum != (run.EgressSummary{}) {
		t.Errorf("EgressSummary of a run without requests = %+v, %v; want zero", sum, err)
	}
}

func TestEgressEntryKeepsItsFields(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	in := run.Egress{Time: time.Date(2026, 3, 1, 9, 0, 0, 123000, time.UTC), Tool: "http_request", Method: "POST",
		Host: "api.example", Port: 8443, Status: 201, BytesIn: 10, BytesOut: 20, DurationMS: 7,
		Secrets: []string{"TOKEN"}, Sandbox: true}
	if err := e.RecordEgress(ctx, "run_f", []run.Egress{in, {Tool: "x"}}); !errors.Is(err, fault.RequestInvalid) {
		t.Errorf("RecordEgress with an entry without a time: err = %v, want fault.RequestInvalid", err)
	}
	if err := e.RecordEgress(ctx, "run_f", []run.Egress{in}); err != nil {
		t.Fatalf("RecordEgress: %v", err)
	}
	page, err := e.ListEgress(ctx, "run_f", "", 0)
	if err != nil || len(page.Egress) != 1 {
		t.Fatalf("ListEgress = %+v, %v; want the one entry (the refused batch wrote nothing)", page, err)
	}
	got := page.Egress[0]
	if !got.Time.Equal(in.Time) || got.Host != in.Host || got.Port != in.Port || got.Status != in.Status ||
		got.BytesIn != 10 || got.BytesOut != 20 || got.DurationMS != 7 || !slices.Equal(got.Secrets, in.Secrets) || !got.Sandbox {
		t.Errorf("entry = %+v, want %+v", got, in)
	}
}
