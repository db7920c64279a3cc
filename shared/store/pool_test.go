package store_test

import (
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/store"
)

func (e *env) idle(t testing.TB, size string, n int) []string {
	t.Helper()
	var ids []string
	for i := range n {
		id := fmt.Sprintf("sbx-%s-%d", size, i)
		err := e.PutIdleSandbox(ctx, store.PoolSandbox{ID: id, Size: size, URL: "http://127.0.0.1:" + strconv.Itoa(9000+i),
			Nonce: "nonce-0123456789abcdef-" + id, Started: e.clock.Now().Add(time.Duration(i) * time.Second)})
		if err != nil {
			t.Fatalf("PutIdleSandbox(%s): %v", id, err)
		}
		ids = append(ids, id)
	}
	return ids
}

func TestClaimIdleSandboxConcurrent(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.idle(t, "small", 5)
	e.idle(t, "large", 2) // another size is never handed out for small

	var mu sync.Mutex
	claimedBy := map[string]string{} // sandbox → run
	parallel(20, func(i int) {
		run := fmt.Sprintf("run-%02d", i)
		ps, ok, err := e.ClaimIdleSandbox(ctx, "small", run)
		if err != nil {
			t.Errorf("ClaimIdleSandbox(%s): %v", run, err)
			return
		}
		if !ok {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if prev, dup := claimedBy[ps.ID]; dup {
			t.Errorf("sandbox %s claimed by %s and %s", ps.ID, prev, run)
		}
		claimedBy[ps.ID] = run
		if ps.State != store.PoolClaimed || ps.ClaimedBy != run || ps.Size != "small" {
			t.Errorf("claimed record = %+v, want claimed by %s, size small", ps, run)
		}
	})
	if got, want := len(claimedBy), 5; got != want {
		t.Fatalf("%d claims, want %d: %v", got, want, claimedBy)
	}
	if n, err := e.CountIdle(ctx, "small"); err != nil || n != 0 {
		t.Errorf("CountIdle(small) = %d, %v; want 0", n, err)
	}
	if n, err := e.CountIdle(ctx, "large"); err != nil || n != 2 {
		t.Errorf("CountIdle(large) = %d, %v; want 2", n, err)
	}
	for id, run := range claimedBy {
		ps, ok, err := e.ClaimedSandbox(ctx, "small", run)
		if err != nil || !ok || ps.ID != id {
			t.Errorf("ClaimedSandbox(%s) = %s, %v, %v; want %s", run, ps.ID, ok, err, id)
		}
	}
}

func TestClaimIdleSandboxOldestFirstAndExpiry(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.idle(t, "medium", 3)
	ps, ok, err := e.ClaimIdleSandbox(ctx, "medium", "run-a")
	if err != nil || !ok || ps.ID != ids[0] {
		t.Fatalf("ClaimIdleSandbox = %s, %v, %v; want the oldest, %s", ps.ID, ok, err, ids[0])
	}
	if got, want := ps.ExpiresAt, e.clock.Now().Add(store.ClaimedTTL).Truncate(time.Second); !got.Equal(want) {
		t.Errorf("claimed ExpiresAt = %v, want %v", got, want)
	}
	// Past their idle TTL the others are not claimable (their sandboxd has
	// stopped itself), though moto keeps the records.
	e.clock.Advance(store.DefaultIdleTTL + time.Minute)
	if _, ok, err := e.ClaimIdleSandbox(ctx, "medium", "run-b"); err != nil || ok {
		t.Errorf("ClaimIdleSandbox after expiry: ok %v, err %v; want none", ok, err)
	}
	all, err := e.ListPool(ctx, "medium")
	if err != nil || len(all) != 3 {
		t.Fatalf("ListPool = %d records, %v; want 3", len(all), err)
	}
}

func TestPoolSandboxTTLAttribute(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started := e.clock.Now()
	expires := started.Add(10 * time.Minute)
	if err := e.PutIdleSandbox(ctx, store.PoolSandbox{ID: "sbx-ttl", Size: "small", URL: "http://127.0.0.1:1", Nonce: "0123456789abcdef",
		Started: started, ExpiresAt: expires}); err != nil {
		t.Fatal(err)
	}
	out, err := e.db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String(e.table), Key: map[string]types.AttributeValue{
		store.AttrPK: &types.AttributeValueMemberS{Value: "POOL#small"},
		store.AttrSK: &types.AttributeValueMemberS{Value: "SBX#sbx-ttl"},
	}})
	if err != nil {
		t.Fatal(err)
	}
	ttl, ok := out.Item[store.AttrTTL].(*types.AttributeValueMemberN)
	if !ok {
		t.Fatalf("item %v has no numeric %s", out.Item, store.AttrTTL)
	}
	if got, want := ttl.Value, strconv.FormatInt(expires.Unix(), 10); got != want {
		t.Errorf("%s = %s, want %s", store.AttrTTL, got, want)
	}
	if st, _ := out.Item["state"].(*types.AttributeValueMemberS); st == nil || st.Value != "idle" {
		t.Errorf("state = %v, want idle", out.Item["state"])
	}
	// A second put of the same sandbox is refused.
	if err := e.PutIdleSandbox(ctx, store.PoolSandbox{ID: "sbx-ttl", Size: "small", Started: started}); err == nil {
		t.Errorf("second PutIdleSandbox: nil error, want one")
	}
}

func TestDropSandbox(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ids := e.idle(t, "small", 2)
	ps, ok, err := e.ClaimIdleSandbox(ctx, "small", "run-a")
	if err != nil || !ok {
		t.Fatalf("ClaimIdleSandbox: %v, %v", ok, err)
	}
	// An idle drop leaves a claimed sandbox alone, and another run's drop too.
	if dropped, err := e.DropIdleSandbox(ctx, "small", ps.ID); err != nil || dropped {
		t.Errorf("DropIdleSandbox(claimed) = %v, %v; want false", dropped, err)
	}
	if dropped, err := e.DropClaimedSandbox(ctx, "small", ps.ID, "run-b"); err != nil || dropped {
		t.Errorf("DropClaimedSandbox(other run) = %v, %v; want false", dropped, err)
	}
	if dropped, err := e.DropClaimedSandbox(ctx, "small", ps.ID, "run-a"); err != nil || !dropped {
		t.Errorf("DropClaimedSandbox(own run) = %v, %v; want true", dropped, err)
	}
	if dropped, err := e.DropIdleSandbox(ctx, "small", ids[1]); err != nil || !dropped {
		t.Errorf("DropIdleSandbox(idle) = %v, %v; want true", dropped, err)
	}
	if dropped, err := e.DropIdleSandbox(ctx, "small", ids[1]); err != nil || dropped {
		t.Errorf("DropIdleSandbox(gone) = %v, %v; want false", dropped, err)
	}
	if all, err := e.ListPool(ctx, "small"); err != nil || len(all) != 0 {
		t.Errorf("ListPool = %v, %v; want empty", all, err)
	}
	if err := e.PutClaimedSandbox(ctx, store.PoolSandbox{ID: "cold", Size: "small", Started: e.clock.Now()}, "run-c"); err != nil {
		t.Fatal(err)
	}
	if ps, ok, err := e.ClaimedSandbox(ctx, "small", "run-c"); err != nil || !ok || ps.ID != "cold" {
		t.Errorf("ClaimedSandbox(run-c) = %+v, %v, %v; want cold", ps, ok, err)
	}
	if n, err := e.CountIdle(ctx, "small"); err != nil || n != 0 {
		t.Errorf("CountIdle = %d, %v; want 0 (a cold start is claimed)", n, err)
	}
}
