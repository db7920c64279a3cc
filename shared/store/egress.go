package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/run"
)

// A run's egress log lives in a partition of its own, EGR#<run id>, not
// under RUN#<run id>: the webtools function writes it, and its role may
// write items whose partition key begins with EGR# only (infra/stack), so
// it can write no run, event or checkpoint. Entries are not run events: a
// completion callback is sent after run.ended, and a run's event log
// closes there.

// PrefixEgress begins the partition key of a run's egress log, for the
// stack's IAM condition on dynamodb:LeadingKeys.
const PrefixEgress = prefixEgress

const (
	prefixEgress   = "EGR#"
	prefixEgressE  = "E#"  // an entry: E#<id, time first>
	skEgressSum    = "SUM" // the counts GET /v1/runs/{id} shows
	maxEgressWrite = 99    // puts a transaction holds beside the summary
)

type egressRecord struct {
	PK         string    `dynamodbav:"pk"`
	SK         string    `dynamodbav:"sk"`
	At         time.Time `dynamodbav:"at"`
	Tool       string    `dynamodbav:"tool"`
	Method     string    `dynamodbav:"method"`
	Host       string    `dynamodbav:"host"`
	Port       int       `dynamodbav:"port"`
	Status     int       `dynamodbav:"status"`
	BytesIn    int64     `dynamodbav:"bytesIn"`
	BytesOut   int64     `dynamodbav:"bytesOut"`
	DurationMS int64     `dynamodbav:"durMs"`
	Secrets    []string  `dynamodbav:"secrets,omitempty"`
	Refused    bool      `dynamodbav:"refused"`
	Rule       string    `dynamodbav:"rule,omitempty"`
	Error      string    `dynamodbav:"error,omitempty"`
	Sandbox    bool      `dynamodbav:"sandbox,omitempty"`
}

func (r egressRecord) entry() run.Egress {
	secrets := r.Secrets
	if secrets == nil {
		secrets = []string{}
	}
	return run.Egress{Time: r.At, Tool: r.Tool, Method: r.Method, Host: r.Host, Port: r.Port, Status: r.Status,
		BytesIn: r.BytesIn, BytesOut: r.BytesOut, DurationMS: r.DurationMS, Secrets: secrets,
		Refused: r.Refused, Rule: r.Rule, Error: r.Error, Sandbox: r.Sandbox}
}

type egressSumRecord struct {
	Requests int64 `dynamodbav:"requests"`
	Refused  int64 `dynamodbav:"refused"`
	BytesIn  int64 `dynamodbav:"bytesIn"`
	BytesOut int64 `dynamodbav:"bytesOut"`
}

// EgressPage is one page of a run's egress log, oldest first; Next is the
// cursor of the following page, "" at the end.
type EgressPage struct {
	Egress []run.Egress
	Next   string
}

// maxEgressText bounds the free-text fields an entry keeps (host, error).
const maxEgressText = 512

// RecordEgress appends entries to run runID's egress log and counts them in
// its summary, each batch of up to 99 entries in one transaction: the
// entries and the counts are written together or not at all. It does not
// check that the run exists (the webtools function, which may write no run
// item, records for runs it has just read); it refuses entries without a
// time or a tool with fault.RequestInvalid.
func (s *Store) RecordEgress(ctx context.Context, runID string, entries []run.Egress) error {
	for len(entries) > 0 {
		n := min(len(entries), maxEgressWrite)
		if err := s.recordEgress(ctx, runID, entries[:n]); err != nil {
			return fmt.Errorf("record egress of run %s: %w", runID, err)
		}
		entries = entries[n:]
	}
	return nil
}

func (s *Store) recordEgress(ctx context.Context, runID string, entries []run.Egress) error {
	t := s.newTxn()
	var sum run.EgressSummary
	for i, e := range entries {
		if e.Time.IsZero() || e.Tool == "" || runID == "" {
			return fault.New(fault.RequestInvalid, "an egress entry needs a run, a time and a tool")
		}
		item, err := marshal(egressRecord{PK: prefixEgress + runID, SK: egressSK(e.Time, i), At: e.Time.UTC(),
			Tool: e.Tool, Method: e.Method, Host: cut(e.Host, maxEgressText), Port: e.Port, Status: e.Status,
			BytesIn: e.BytesIn, BytesOut: e.BytesOut, DurationMS: e.DurationMS, Secrets: e.Secrets,
			Refused: e.Refused, Rule: e.Rule, Error: cut(e.Error, maxEgressText), Sandbox: e.Sandbox})
		if err != nil {
			return err
		}
		// The key's 80 random bits make a collision all but impossible;
		// the condition makes one fail rather than overwrite.
		t.put("egress entry", item, newWrite().absent(), nil)
		sum.Add(e)
	}
	w := newWrite().add("requests", sum.Requests).add("refused", sum.Refused).
		add("bytesIn", sum.BytesIn).add("bytesOut", sum.BytesOut)
	t.update("egress summary", key(prefixEgress+runID, skEgressSum), w, nil)
	return s.commit(ctx, t)
}

// egressSK sorts entries by time to the microsecond, then by their place
// in the batch (a redirect's hops, often within one microsecond of each
// other on loopback), then by 16 random characters (newID's), so that two
// writers never pick the same key.
func egressSK(t time.Time, i int) string {
	return fmt.Sprintf("%s%016d%02d%s", prefixEgressE, max(t.UnixMicro(), 0), i, newID("", time.Time{})[10:])
}

// add adds "#attr = if_not_exists(#attr, 0) + by" to the update: a counter
// that starts at zero on an item written for the first time.
func (w *write) add(attr string, by int64) *write {
	p := w.n(attr)
	w.sets = append(w.sets, p+" = if_not_exists("+p+", "+w.i(0)+") + "+w.i(by))
	return w
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// ListEgress returns up to limit entries (0 means 100, at most 1000) of run
// runID's egress log, oldest first, from the opaque cursor a previous page
// returned ("" for the first). Reads are strongly consistent. It does not
// check that the run exists: a caller that has read the run first says so.
func (s *Store) ListEgress(ctx context.Context, runID, cursor string, limit int) (EgressPage, error) {
	start, err := decodeCursor(cursor, prefixEgress+runID, AttrPK, AttrSK)
	if err != nil {
		return EgressPage{}, fmt.Errorf("list egress of run %s: %w", runID, err)
	}
	e := newExpr()
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table,
		KeyConditionExpression: aws.String(e.n(AttrPK) + " = " + e.s(prefixEgress+runID) +
			" AND begins_with(" + e.n(AttrSK) + ", " + e.s(prefixEgressE) + ")"),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ExclusiveStartKey:         start,
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(pageSize(limit, 100, 1000)),
	})
	if err != nil {
		return EgressPage{}, fmt.Errorf("list egress of run %s: %w", runID, err)
	}
	page := EgressPage{Egress: make([]run.Egress, 0, len(out.Items)), Next: encodeCursor(out.LastEvaluatedKey)}
	for _, item := range out.Items {
		var r egressRecord
		if err := unmarshal(item, &r); err != nil {
			return EgressPage{}, fmt.Errorf("list egress of run %s: %w", runID, err)
		}
		page.Egress = append(page.Egress, r.entry())
	}
	return page, nil
}

// EgressSummary returns the counts of run runID's egress log; zero for a
// run that made no request.
func (s *Store) EgressSummary(ctx context.Context, runID string) (run.EgressSummary, error) {
	var r egressSumRecord
	if _, err := s.getRecord(ctx, key(prefixEgress+runID, skEgressSum), &r); err != nil {
		return run.EgressSummary{}, fmt.Errorf("egress summary of run %s: %w", runID, err)
	}
	return run.EgressSummary{Requests: r.Requests, Refused: r.Refused, BytesIn: r.BytesIn, BytesOut: r.BytesOut}, nil
}
