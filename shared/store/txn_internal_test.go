package store

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/awstest"
)

// TestTxnBlamesTheFailedItem runs transactions against moto in which one
// item's condition fails, and checks that commit returns that item's error
// (given the item as it was) wherever the item sits and whatever is added
// before it.
func TestTxnBlamesTheFailedItem(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "tbl")
	if err := CreateTable(ctx, db, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	s := New(db, table)
	taken := map[string]types.AttributeValue{AttrPK: str("T#taken"), AttrSK: str("X"), "data": str("old")}
	if _, err := db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &table, Item: taken}); err != nil {
		t.Fatalf("PutItem: %v", err)
	}
	errFirst, errTaken, errLast, errBefore := errors.New("first"), errors.New("taken"), errors.New("last"), errors.New("before")
	fresh := func(name string) map[string]types.AttributeValue {
		return map[string]types.AttributeValue{AttrPK: str("T#" + t.Name() + name), AttrSK: str("X")}
	}
	var gotOld string
	blameTaken := func(old map[string]types.AttributeValue) error {
		if v, ok := old["data"].(*types.AttributeValueMemberS); ok {
			gotOld = v.Value
		}
		return errTaken
	}
	tests := []struct {
		name  string
		build func(tx *txn)
		want  error
	}{
		{"middle of three fails", func(tx *txn) {
			tx.put("first", fresh("a1"), newWrite().absent(), failWith(errFirst))
			tx.put("taken", taken, newWrite().absent(), blameTaken)
			tx.put("last", fresh("c1"), newWrite().absent(), failWith(errLast))
		}, errTaken},
		{"an item inserted before it", func(tx *txn) {
			tx.put("inserted", fresh("d2"), newWrite().absent(), failWith(errBefore))
			tx.put("first", fresh("a2"), newWrite().absent(), failWith(errFirst))
			tx.put("taken", taken, newWrite().absent(), blameTaken)
			tx.put("last", fresh("c2"), newWrite().absent(), failWith(errLast))
		}, errTaken},
		{"unconditional items before it", func(tx *txn) {
			tx.put("plain 1", fresh("p3"), nil, nil)
			tx.put("plain 2", fresh("q3"), nil, nil)
			tx.check("taken", key("T#taken", "X"), newWrite().absent(), blameTaken)
			tx.put("last", fresh("c3"), newWrite().absent(), failWith(errLast))
		}, errTaken},
	}
	for _, tt := range tests {
		gotOld = ""
		tx := s.newTxn()
		tt.build(tx)
		if err := s.commit(ctx, tx); !errors.Is(err, tt.want) {
			t.Errorf("%s: commit = %v, want %v", tt.name, err, tt.want)
		}
		if gotOld != "old" {
			t.Errorf("%s: the failure was given data %q, want the item as it was (%q)", tt.name, gotOld, "old")
		}
	}
}

// TestTxnUnexplainedFailure checks that a failed condition with no onFail
// (or one that cannot say) comes back as the cancellation, naming the item.
func TestTxnUnexplainedFailure(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := dynamodb.NewFromConfig(awstest.Config(t))
	table := awstest.UniqueName(t, "tbl")
	if err := CreateTable(ctx, db, table); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	s := New(db, table)
	tx := s.newTxn()
	tx.put("fresh item", map[string]types.AttributeValue{AttrPK: str("T#fresh"), AttrSK: str("X")}, newWrite().absent(), nil)
	tx.check("missing item", key("T#missing", "X"), newWrite().exists(), func(map[string]types.AttributeValue) error { return nil })
	err := s.commit(ctx, tx)
	if _, ok := canceled(err); !ok || !strings.Contains(err.Error(), "missing item") {
		t.Fatalf("commit = %v, want the cancellation naming %q", err, "missing item")
	}
	if item, err := s.getItem(ctx, key("T#fresh", "X")); err != nil || item != nil {
		t.Fatalf("the fresh item = %v, %v; want nothing written", item, err)
	}
}

func TestWriteExpressions(t *testing.T) {
	t.Parallel()
	w := newWrite().exists()
	w.set("status", w.s("done")).incr("kidsRun", -1).remove(AttrGSI2PK).is("status", w.s("running")).above("kidsRun", 0)
	if got, want := *w.update(), "SET #status = :v0, #kidsRun = #kidsRun - :v1 REMOVE #gsi2pk"; got != want {
		t.Errorf("update = %q, want %q", got, want)
	}
	if got, want := *w.condition(), "attribute_exists(#pk) AND #status = :v2 AND #kidsRun > :v3"; got != want {
		t.Errorf("condition = %q, want %q", got, want)
	}
	e := newWrite().either("a", "b").when("c")
	if got, want := *e.condition(), "(a OR b) AND c"; got != want {
		t.Errorf("condition = %q, want %q", got, want)
	}
}
