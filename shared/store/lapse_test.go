package store_test

import (
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// TestListLapsed: the sweep finds what nobody executes — a run queued
// past the grace and never taken, a lease that ran out, a lease released
// and not taken again, a child whose lease ran out — and leaves alone a
// holder that renews, a run too young, one that ended, one waiting for a
// person, a child that ended, and a child still held.
func TestListLapsed(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	t0 := e.clock.Now()
	lease := func(id, holder string) {
		t.Helper()
		if _, err := e.AcquireLease(ctx, id, holder, time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	queued := e.run(t, "ops", false)
	dead := e.running(t, "ops")
	lease(dead.ID, "inv_dead")
	alive := e.running(t, "ops")
	lease(alive.ID, "inv_alive")
	released := e.running(t, "ops")
	lease(released.ID, "inv_handed_over")
	if err := e.ReleaseLease(ctx, released.ID, "inv_handed_over"); err != nil {
		t.Fatal(err)
	}
	ended := e.running(t, "ops")
	lease(ended.ID, "inv_ended")
	if _, err := e.Transition(ctx, ended.ID, store.StatusSucceeded, ""); err != nil {
		t.Fatal(err)
	}
	waiting := e.running(t, "ops")
	if _, err := e.Transition(ctx, waiting.ID, store.StatusWaiting, ""); err != nil {
		t.Fatal(err)
	}
	parent := e.running(t, "ops")
	lease(parent.ID, "inv_parent")
	deadKid, err := startChild(e, parent.ID, "", "dies", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquireChildLease(ctx, parent.ID, deadKid.ID, "inv_kid", time.Minute); err != nil {
		t.Fatal(err)
	}
	liveKid, err := startChild(e, parent.ID, "", "lives", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.AcquireChildLease(ctx, parent.ID, liveKid.ID, "inv_live_kid", time.Minute); err != nil {
		t.Fatal(err)
	}
	doneKid, err := startChild(e, parent.ID, "", "done", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.FinishChild(ctx, parent.ID, doneKid.ID, store.ChildDone, "ok"); err != nil {
		t.Fatal(err)
	}

	// Three minutes, the live holders renewing every 20 seconds (a third
	// of their lease), the others silent.
	for range 9 {
		e.clock.Advance(20 * time.Second)
		for id, holder := range map[string]string{alive.ID: "inv_alive", parent.ID: "inv_parent"} {
			if _, err := e.RenewLease(ctx, id, holder, time.Minute); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := e.RenewChildLease(ctx, parent.ID, liveKid.ID, "inv_live_kid", time.Minute); err != nil {
			t.Fatal(err)
		}
	}
	young := e.run(t, "ops", false) // queued a moment ago

	grace := time.Minute
	got, err := e.ListLapsed(ctx, e.clock.Now().Add(-grace), 0)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]store.Lapsed{
		queued.ID:                    {RunID: queued.ID, Since: t0},
		dead.ID:                      {RunID: dead.ID, Since: t0.Add(time.Minute), Holder: "inv_dead"},
		released.ID:                  {RunID: released.ID, Since: t0},
		parent.ID + "/" + deadKid.ID: {RunID: parent.ID, ChildID: deadKid.ID, Since: t0.Add(time.Minute), Holder: "inv_kid"},
	}
	seen := map[string]store.Lapsed{}
	for _, l := range got {
		k := l.RunID
		if l.ChildID != "" {
			k += "/" + l.ChildID
		}
		seen[k] = l
	}
	for k, w := range want {
		g, ok := seen[k]
		if !ok {
			t.Errorf("%s not found; got %+v", k, got)
			continue
		}
		if g.Holder != w.Holder || !g.Since.Equal(w.Since) || g.ChildID != w.ChildID {
			t.Errorf("%s = %+v, want %+v", k, g, w)
		}
	}
	for k, g := range seen {
		if _, ok := want[k]; !ok {
			t.Errorf("%s found (%+v); want it left alone (alive %s, young %s, ended %s, waiting %s, parent %s, kids %s %s)",
				k, g, alive.ID, young.ID, ended.ID, waiting.ID, parent.ID, liveKid.ID, doneKid.ID)
		}
	}
	if !slices.IsSortedFunc(got, func(a, b store.Lapsed) int { return a.Since.Compare(b.Since) }) {
		t.Errorf("not oldest first: %+v", got)
	}

	// One page at a time: the oldest come first.
	page, err := e.ListLapsed(ctx, e.clock.Now().Add(-grace), 2)
	if err != nil || len(page) != 2 || !page[0].Since.Equal(t0) || !page[1].Since.Equal(t0) {
		t.Fatalf("ListLapsed(limit 2) = %+v, %v; want the two left at %v", page, err, t0)
	}

	// Taken over: out of the list until the new holder stops renewing.
	if _, err := e.AcquireLease(ctx, dead.ID, "inv_sweep", time.Minute); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Transition(ctx, queued.ID, store.StatusCancelled, ""); err != nil {
		t.Fatal(err)
	}
	got, err = e.ListLapsed(ctx, e.clock.Now(), 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range got {
		if l.RunID == dead.ID || l.RunID == queued.ID || l.RunID == alive.ID {
			t.Errorf("after the takeover and the cancel: %+v is still listed", l)
		}
	}
	if !slices.ContainsFunc(got, func(l store.Lapsed) bool { return l.RunID == young.ID }) {
		t.Errorf("with no grace the young queued run is listed too: %+v", got)
	}
}

// TestAcquireLeaseNamesLapsedHolder: taking a lease that ran out names the
// holder that let it lapse, for the runner to count; a free, released or
// own lease names nobody. A child's takeovers are counted as a run's.
func TestAcquireLeaseNamesLapsedHolder(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.fleet(t, "ops")
	r := e.running(t, "ops")
	steps := []struct {
		holder  string
		advance time.Duration
		release bool
		want    string
	}{
		{"a", 0, false, ""},                // free
		{"a", 30 * time.Second, false, ""}, // own
		{"b", 61 * time.Second, true, "a"}, // a's ran out; b releases it
		{"c", 0, false, ""},                // released
		{"d", 2 * time.Minute, false, "c"}, // c's ran out
	}
	for i, st := range steps {
		e.clock.Advance(st.advance)
		got, err := e.AcquireLease(ctx, r.ID, st.holder, time.Minute)
		if err != nil || got.LapsedHolder != st.want || got.LeaseHolder != st.holder {
			t.Fatalf("step %d: AcquireLease(%s) = holder %q, lapsed %q, %v; want lapsed %q", i, st.holder, got.LeaseHolder, got.LapsedHolder, err, st.want)
		}
		if st.release {
			if err := e.ReleaseLease(ctx, r.ID, st.holder); err != nil {
				t.Fatal(err)
			}
		}
	}
	if got, _ := e.GetRun(ctx, r.ID); got.LapsedHolder != "" {
		t.Errorf("GetRun's LapsedHolder = %q, want it empty (set by AcquireLease alone)", got.LapsedHolder)
	}

	kid, err := startChild(e, r.ID, "", "task", nil)
	if err != nil {
		t.Fatal(err)
	}
	if c, err := e.AcquireChildLease(ctx, r.ID, kid.ID, "k1", time.Minute); err != nil || c.LapsedHolder != "" {
		t.Fatalf("AcquireChildLease(k1) = %+v, %v", c, err)
	}
	e.clock.Advance(2 * time.Minute)
	c, err := e.AcquireChildLease(ctx, r.ID, kid.ID, "k2", time.Minute)
	if err != nil || c.LapsedHolder != "k1" {
		t.Fatalf("AcquireChildLease(k2) after k1's lapsed = %q, %v; want k1", c.LapsedHolder, err)
	}
	for want := 1; want <= 2; want++ {
		if n, err := e.NoteChildTakeover(ctx, r.ID, kid.ID, "k2"); err != nil || n != want {
			t.Fatalf("NoteChildTakeover = %d, %v; want %d", n, err, want)
		}
	}
	_, err = e.NoteChildTakeover(ctx, r.ID, kid.ID, "k1")
	wantCode(t, err, fault.RunLeaseHeld)
	if n, err := e.NoteTakeover(ctx, r.ID, "d"); err != nil || n != 1 {
		t.Fatalf("the run's own count = %d, %v; want 1, apart from its child's", n, err)
	}
}

// TestCreateTableAddsGSI2: a table made before the sweep's index gets it.
func TestCreateTableAddsGSI2(t *testing.T) {
	t.Parallel()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	name := awstest.UniqueName(t, "tbl")
	old := store.CreateTableInput(name)
	old.GlobalSecondaryIndexes = old.GlobalSecondaryIndexes[:1]
	old.AttributeDefinitions = slices.DeleteFunc(old.AttributeDefinitions, func(a types.AttributeDefinition) bool {
		n := aws.ToString(a.AttributeName)
		return n == store.AttrGSI2PK || n == store.AttrGSI2SK
	})
	if _, err := db.CreateTable(ctx, old); err != nil {
		t.Fatal(err)
	}
	if err := store.CreateTable(ctx, db, name); err != nil {
		t.Fatalf("CreateTable over a table without %s: %v", store.IndexGSI2, err)
	}
	out, err := db.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: &name})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range out.Table.GlobalSecondaryIndexes {
		names = append(names, aws.ToString(g.IndexName))
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{store.IndexGSI1, store.IndexGSI2}) {
		t.Fatalf("indexes = %v, want %s and %s", names, store.IndexGSI1, store.IndexGSI2)
	}
	s := store.New(db, name)
	if _, err := s.ListLapsed(ctx, time.Now(), 0); err != nil {
		t.Fatalf("ListLapsed on the upgraded table: %v", err)
	}
}
