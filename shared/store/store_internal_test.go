package store

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

func TestNewIDSortsByTime(t *testing.T) {
	t.Parallel()
	base := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	var ids []string
	for i := range 50 {
		ids = append(ids, newID("run_", base.Add(time.Duration(i)*time.Millisecond)))
	}
	if !slices.IsSorted(ids) {
		t.Fatalf("ids made in time order do not sort: %v", ids)
	}
	seen := map[string]bool{}
	for range 1000 {
		id := newID("x_", base)
		if len(id) != len("x_")+26 || seen[id] || strings.ContainsAny(id[2:], "ilou") {
			t.Fatalf("newID = %q: want 26 Crockford characters, unique", id)
		}
		seen[id] = true
	}
}

func TestCursorRoundTripAndTampering(t *testing.T) {
	t.Parallel()
	lek := map[string]types.AttributeValue{
		AttrGSI1PK: str("FLEET#ops"), AttrGSI1SK: str("RUN#run_1"), AttrPK: str("RUN#run_1"), AttrSK: str("RUN"),
	}
	c := encodeCursor(lek)
	got, err := decodeCursor(c, "FLEET#ops", AttrGSI1PK, AttrGSI1SK, AttrPK, AttrSK)
	if err != nil || len(got) != 4 {
		t.Fatalf("decodeCursor = %v, %v", got, err)
	}
	tests := []struct {
		name, cursor, partition string
	}{
		{"other partition", c, "FLEET#other"},
		{"not base64", "!!!", "FLEET#ops"},
		{"not json", "bm90IGpzb24", "FLEET#ops"},
		{"missing attribute", encodeCursor(map[string]types.AttributeValue{AttrGSI1PK: str("FLEET#ops")}), "FLEET#ops"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := decodeCursor(tt.cursor, tt.partition, AttrGSI1PK, AttrGSI1SK, AttrPK, AttrSK)
			if !errors.Is(err, fault.RequestInvalid) {
				t.Fatalf("decodeCursor = %v, want %s", err, fault.RequestInvalid.ID())
			}
		})
	}
	if got, err := decodeCursor("", "x", AttrPK); got != nil || err != nil {
		t.Fatalf("empty cursor = %v, %v; want nil, nil", got, err)
	}
}

func TestCanMove(t *testing.T) {
	t.Parallel()
	all := []Status{StatusQueued, StatusRunning, StatusWaiting, StatusSucceeded, StatusFailed, StatusCancelled}
	for _, from := range all {
		for _, to := range all {
			if from.Terminal() && CanMove(from, to) {
				t.Errorf("CanMove(%s, %s) = true; final statuses are final", from, to)
			}
			if to == StatusQueued && CanMove(from, to) {
				t.Errorf("CanMove(%s, queued) = true; nothing goes back to queued", from)
			}
		}
	}
}
