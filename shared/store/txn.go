package store

import (
	"context"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// A transaction is built item by item: each item is added with what it is
// and with what the failure of its own condition means. DynamoDB answers a
// cancelled TransactWriteItems with one reason per item, by position; txn
// keeps each item's failure beside it, so the positions are read in one
// place (commit) and adding an item anywhere cannot blame the wrong one.

// onFail says what the failure of an item's condition means, given the item
// as it was (nil when DynamoDB sent none back): the error to return
// (errRetry to run the operation again), or nil when it cannot say, and
// the next failed item is asked.
type onFail func(old map[string]types.AttributeValue) error

// failWith is the onFail of a condition whose failure always means err.
func failWith(err error) onFail {
	return func(map[string]types.AttributeValue) error { return err }
}

// txnItem is one item of a txn: what it is (for an error no failure
// explains), the request, and what its condition's failure means.
type txnItem struct {
	what string
	item types.TransactWriteItem
	fail onFail
}

// txn is a TransactWriteItems under construction; commit runs it. It is not
// safe for concurrent use.
type txn struct {
	table string
	items []txnItem
}

func (s *Store) newTxn() *txn { return &txn{table: s.table} }

// put adds a put of item; w holds its condition (nil: none).
func (t *txn) put(what string, item map[string]types.AttributeValue, w *write, fail onFail) {
	p := &types.Put{TableName: &t.table, Item: item}
	if w != nil && w.conditional() {
		p.ConditionExpression, p.ExpressionAttributeNames, p.ExpressionAttributeValues = w.condition(), w.nameMap(), w.valueMap()
		p.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	t.add(what, types.TransactWriteItem{Put: p}, fail)
}

// update adds an update of the item at k as w says. An update with nothing
// to set or remove is a check of w's condition alone.
func (t *txn) update(what string, k map[string]types.AttributeValue, w *write, fail onFail) {
	if len(w.sets) == 0 && len(w.removes) == 0 {
		t.check(what, k, w, fail)
		return
	}
	u := &types.Update{TableName: &t.table, Key: k, UpdateExpression: w.update(),
		ExpressionAttributeNames: w.nameMap(), ExpressionAttributeValues: w.valueMap()}
	if w.conditional() {
		u.ConditionExpression = w.condition()
		u.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	t.add(what, types.TransactWriteItem{Update: u}, fail)
}

// check adds a check of w's condition on the item at k, writing nothing.
func (t *txn) check(what string, k map[string]types.AttributeValue, w *write, fail onFail) {
	t.add(what, types.TransactWriteItem{ConditionCheck: &types.ConditionCheck{TableName: &t.table, Key: k,
		ConditionExpression: w.condition(), ExpressionAttributeNames: w.nameMap(), ExpressionAttributeValues: w.valueMap(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld}}, fail)
}

// delete adds a delete of the item at k under w's condition.
func (t *txn) delete(what string, k map[string]types.AttributeValue, w *write, fail onFail) {
	d := &types.Delete{TableName: &t.table, Key: k}
	if w.conditional() {
		d.ConditionExpression, d.ExpressionAttributeNames, d.ExpressionAttributeValues = w.condition(), w.nameMap(), w.valueMap()
		d.ReturnValuesOnConditionCheckFailure = types.ReturnValuesOnConditionCheckFailureAllOld
	}
	t.add(what, types.TransactWriteItem{Delete: d}, fail)
}

func (t *txn) add(what string, item types.TransactWriteItem, fail onFail) {
	t.items = append(t.items, txnItem{what: what, item: item, fail: fail})
}

// commit runs t. A cancellation caused only by conflicting transactions is
// run again. A cancellation by failed conditions returns the error of the
// first failed item, in the order they were added, whose onFail explains
// it; when none does, the cancellation, naming the first failed item.
func (s *Store) commit(ctx context.Context, t *txn) error {
	items := make([]types.TransactWriteItem, len(t.items))
	for i, it := range t.items {
		items[i] = it.item
	}
	err := s.retry(ctx, func() error {
		_, err := s.db.TransactWriteItems(ctx, &dynamodb.TransactWriteItemsInput{TransactItems: items})
		if reasons, ok := canceled(err); ok && conflicted(reasons) {
			return errRetry
		}
		return err
	})
	reasons, ok := canceled(err)
	if !ok {
		return err
	}
	unexplained := ""
	for i, it := range t.items {
		if i >= len(reasons) || aws.ToString(reasons[i].Code) != "ConditionalCheckFailed" {
			continue
		}
		if it.fail != nil {
			if ferr := it.fail(reasons[i].Item); ferr != nil {
				return ferr
			}
		}
		if unexplained == "" {
			unexplained = it.what
		}
	}
	if unexplained != "" {
		return fmt.Errorf("%s failed its condition: %w", unexplained, err)
	}
	return err
}

// write is one item's update and condition, built clause by clause over
// the placeholders of its expr: the keywords and separators (SET, REMOVE,
// commas, AND) are put in here, never by the caller.
type write struct {
	*expr
	sets, removes, conds []string
}

func newWrite() *write { return &write{expr: newExpr()} }

// set adds "#attr = val" to the update (val a placeholder of w).
func (w *write) set(attr, val string) *write {
	w.sets = append(w.sets, w.n(attr)+" = "+val)
	return w
}

// incr adds "#attr = #attr + by" to the update (by may be negative).
func (w *write) incr(attr string, by int64) *write {
	op := " + "
	if by < 0 {
		op, by = " - ", -by
	}
	p := w.n(attr)
	w.sets = append(w.sets, p+" = "+p+op+w.i(by))
	return w
}

// remove adds attr to the update's REMOVE clause.
func (w *write) remove(attr string) *write {
	w.removes = append(w.removes, w.n(attr))
	return w
}

// when adds clause, built with w's placeholders, to the condition (all
// clauses must hold).
func (w *write) when(clause string) *write {
	w.conds = append(w.conds, clause)
	return w
}

// either requires clause a or clause b to hold.
func (w *write) either(a, b string) *write { return w.when("(" + a + " OR " + b + ")") }

// exists requires the item to exist.
func (w *write) exists() *write { return w.when("attribute_exists(" + w.n(AttrPK) + ")") }

// absent requires the item not to exist.
func (w *write) absent() *write { return w.when("attribute_not_exists(" + w.n(AttrPK) + ")") }

// is requires attr to equal val (a placeholder of w).
func (w *write) is(attr, val string) *write { return w.when(w.n(attr) + " = " + val) }

// below requires the number attr to be less than n.
func (w *write) below(attr string, n int64) *write { return w.when(w.n(attr) + " < " + w.i(n)) }

// above requires the number attr to be greater than n.
func (w *write) above(attr string, n int64) *write { return w.when(w.n(attr) + " > " + w.i(n)) }

func (w *write) conditional() bool { return len(w.conds) > 0 }

func (w *write) condition() *string {
	if len(w.conds) == 0 {
		return nil
	}
	return aws.String(strings.Join(w.conds, " AND "))
}

func (w *write) update() *string {
	var b strings.Builder
	if len(w.sets) > 0 {
		b.WriteString("SET " + strings.Join(w.sets, ", "))
	}
	if len(w.removes) > 0 {
		if b.Len() > 0 {
			b.WriteByte(' ')
		}
		b.WriteString("REMOVE " + strings.Join(w.removes, ", "))
	}
	return aws.String(b.String())
}

// tokens adds t to the item's token totals (which an item written before
// there were any does not have: see add).
func (w *write) tokens(t Tokens) *write {
	if t.Input != 0 {
		w.add("inTok", t.Input)
	}
	if t.Output != 0 {
		w.add("outTok", t.Output)
	}
	return w
}

// spend adds to w the update and condition that add b to the item's
// spending and keep what is left from going below zero.
func (w *write) spend(b Budget) *write {
	tu, tl, cu, cl := w.n("tokUsed"), w.n("tokLeft"), w.n("callUsed"), w.n("callLeft")
	t, c := w.i(b.Tokens), w.i(b.ToolCalls)
	w.sets = append(w.sets, tu+" = "+tu+" + "+t, tl+" = "+tl+" - "+t, cu+" = "+cu+" + "+c, cl+" = "+cl+" - "+c)
	return w.when(tl + " >= " + t).when(cl + " >= " + c)
}
