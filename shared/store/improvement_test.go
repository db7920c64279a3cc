package store_test

import (
	"errors"
	"testing"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

func proposal(from int64, hash string) *store.Proposal {
	return &store.Proposal{From: from, Definition: "name = \"ops\"\n", Hash: hash, Canonical: []byte(`{"v":"` + hash + `"}`),
		Summary: "s", Diff: "d"}
}

// newChat makes a chat of fleet ops whose first turn ended with a proposal
// against revision 1.
func newChat(t *testing.T, e *env) store.Improvement {
	t.Helper()
	imp, err := e.CreateImprovement(ctx, store.NewImprovement{Fleet: "ops", Origin: store.Origin{By: "key_a", Via: store.OriginAPI},
		Log: store.ImprovementLog{Messages: []byte(`[]`), Conversation: []byte(`[]`)}})
	if err != nil || imp.Status != store.ImproveThinking || imp.Turn != 1 {
		t.Fatalf("CreateImprovement = %+v, %v; want thinking at turn 1", imp, err)
	}
	if err := e.EndTurn(ctx, imp.ID, 1, store.TurnEnd{Status: store.ImproveProposed, Proposal: proposal(1, "h2")}); err != nil {
		t.Fatal(err)
	}
	return imp
}

func TestImprovementTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, err := e.CreateImprovement(ctx, store.NewImprovement{Fleet: "ops"})
	wantCode(t, err, fault.FleetNotFound)
	e.fleet(t, "ops")
	imp := newChat(t, e)
	// The turn is over: a second end of it (a duplicate invocation) is dropped.
	if err := e.EndTurn(ctx, imp.ID, 1, store.TurnEnd{Status: store.ImproveOpen}); !errors.Is(err, store.ErrTurnOver) {
		t.Fatalf("EndTurn again = %v, want ErrTurnOver", err)
	}
	// A message posted from a stale view of the chat is refused.
	_, err = e.BeginTurn(ctx, imp.ID, 0, store.ImprovementLog{})
	wantCode(t, err, fault.ImproveBusy)
	got, err := e.BeginTurn(ctx, imp.ID, 1, store.ImprovementLog{Messages: []byte(`["m"]`)})
	if err != nil || got.Status != store.ImproveThinking || got.Turn != 2 || got.Proposal == nil {
		t.Fatalf("BeginTurn = %+v, %v; want thinking at turn 2 keeping the proposal", got, err)
	}
	_, err = e.BeginTurn(ctx, imp.ID, 2, store.ImprovementLog{})
	wantCode(t, err, fault.ImproveBusy)
	_, err = e.ApplyImprovement(ctx, imp.ID, "h2", store.Origin{})
	wantCode(t, err, fault.ImproveBusy)
	log, err := e.GetImprovementLog(ctx, imp.ID)
	if err != nil || string(log.Messages) != `["m"]` {
		t.Fatalf("GetImprovementLog = %q, %v", log.Messages, err)
	}
	_, err = e.GetImprovement(ctx, "imp_nope")
	wantCode(t, err, fault.ImproveNotFound)
}

func TestApplyImprovement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	imp := newChat(t, e)
	// A hash other than the proposal's applies nothing.
	_, err := e.ApplyImprovement(ctx, imp.ID, "other", store.Origin{})
	wantCode(t, err, fault.ImproveBusy)
	rev, err := e.ApplyImprovement(ctx, imp.ID, "h2", store.Origin{By: "key_b", Via: store.OriginAPI})
	if err != nil || rev.Number != 2 || rev.Origin.Improvement != imp.ID || rev.Origin.By != "key_b" {
		t.Fatalf("ApplyImprovement = %+v, %v; want revision 2 from the chat by key_b", rev, err)
	}
	f, _ := e.GetFleet(ctx, "ops")
	if f.Revision != 2 || f.Hash != "h2" {
		t.Fatalf("fleet = %+v, want revision 2 with hash h2", f)
	}
	_, err = e.ApplyImprovement(ctx, imp.ID, "h2", store.Origin{})
	wantCode(t, err, fault.ImproveClosed)
	_, err = e.DiscardImprovement(ctx, imp.ID)
	wantCode(t, err, fault.ImproveClosed)
	page, err := e.ListRevisions(ctx, "ops", "", 0)
	if err != nil || len(page.Revisions) != 2 || page.Revisions[0].Number != 2 || page.Revisions[0].Origin.Improvement != imp.ID {
		t.Fatalf("ListRevisions = %+v, %v; want 2 then 1, 2 from the chat", page, err)
	}
}

// A fleet changed after the proposal was made: applying is refused, the
// fleet keeps the change, and the chat says stale.
func TestApplyStaleImprovement(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	imp := newChat(t, e)
	if _, err := e.AppendRevision(ctx, "ops", []byte(`{"v":"other"}`), "hx", store.Origin{}); err != nil {
		t.Fatal(err)
	}
	_, err := e.ApplyImprovement(ctx, imp.ID, "h2", store.Origin{})
	wantCode(t, err, fault.ImproveStale)
	f, _ := e.GetFleet(ctx, "ops")
	got, _ := e.GetImprovement(ctx, imp.ID)
	if f.Revision != 2 || f.Hash != "hx" || got.Status != store.ImproveStale {
		t.Fatalf("fleet %+v, chat %s; want the fleet's own revision 2 and a stale chat", f, got.Status)
	}
	if _, err := e.GetRevision(ctx, "ops", 3); !errors.Is(err, fault.RevisionNotFound) {
		t.Fatalf("revision 3: %v, want none", err)
	}
	// A stale chat takes a new message, which asks for a new proposal.
	if _, err := e.BeginTurn(ctx, imp.ID, 1, store.ImprovementLog{}); err != nil {
		t.Fatal(err)
	}
	if got, err := e.DiscardImprovement(ctx, imp.ID); err != nil || got.Status != store.ImproveDiscarded {
		t.Fatalf("DiscardImprovement = %+v, %v", got, err)
	}
}

// Two applies of one proposal race: one revision is made.
func TestApplyImprovementRace(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	imp := newChat(t, e)
	errs := make([]error, 4)
	parallel(len(errs), func(i int) { _, errs[i] = e.ApplyImprovement(ctx, imp.ID, "h2", store.Origin{}) })
	won := 0
	for _, err := range errs {
		if err == nil {
			won++
		}
	}
	f, _ := e.GetFleet(ctx, "ops")
	if won != 1 || f.Revision != 2 {
		t.Fatalf("%d applies won (%v), fleet at %d; want one, at 2", won, errs, f.Revision)
	}
}
