package store

import (
	"context"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// Fleet is a named agent and the state the Store keeps about it.
type Fleet struct {
	Name     string
	Paused   bool
	Revision int64  // current Definition revision (1, 2, 3, …)
	Hash     string // hash of the current revision's Definition
	// Schedules the fleet holds, and how many of them it created itself.
	Schedules, FleetSchedules int
	CreatedAt, UpdatedAt      time.Time
}

// Revision is one applied Definition. The Store keeps the Definition as the
// canonical JSON bytes and hash that package fleet produces; it does not
// read them.
type Revision struct {
	Fleet      string
	Number     int64
	Definition []byte
	Hash       string
	CreatedAt  time.Time
	// Origin is who made the revision, from where, and why.
	Origin Origin
}

// Origin is who made a revision and from where: the history
// GET /v1/fleets/{name}/revisions shows. The Store keeps it as given; the
// caller vouches for it (the API from the request's key, Slack from a
// verified request's user).
type Origin struct {
	// By is who: an API key id, a Slack user id, or "" for this machine.
	By string
	// Via is from where: OriginAPI, OriginCLI, OriginSlack or OriginLocal.
	Via string
	// Improvement is the improvement chat the revision was applied from.
	Improvement string
	// Restored is the revision this one restored, 0 for none.
	Restored int64
}

// The places a revision comes from (Origin.Via).
const (
	OriginAPI   = "api"   // the HTTP API, with the key Origin.By names
	OriginCLI   = "cli"   // the HTTP API from agentsfleet's CLI, with the key Origin.By names
	OriginSlack = "slack" // an improvement chat's Apply button, pressed by the Slack user Origin.By names
	OriginLocal = "local" // this machine: agentsfleet run, agentsfleet dev's examples
)

// NewFleet is what CreateFleet needs: a unique name and the first
// Definition, which becomes revision 1.
type NewFleet struct {
	Name       string
	Definition []byte // canonical JSON
	Hash       string
	Origin     Origin
}

type fleetRecord struct {
	PK         string    `dynamodbav:"pk"`
	SK         string    `dynamodbav:"sk"`
	GSI1PK     string    `dynamodbav:"gsi1pk"`
	GSI1SK     string    `dynamodbav:"gsi1sk"`
	Kind       string    `dynamodbav:"kind"`
	Name       string    `dynamodbav:"name"`
	Paused     bool      `dynamodbav:"paused"`
	Rev        int64     `dynamodbav:"rev"`
	Hash       string    `dynamodbav:"hash"`
	SchedTotal int       `dynamodbav:"schedTotal"`
	SchedFleet int       `dynamodbav:"schedFleet"`
	CreatedAt  time.Time `dynamodbav:"createdAt"`
	UpdatedAt  time.Time `dynamodbav:"updatedAt"`
}

func (r fleetRecord) fleet() Fleet {
	return Fleet{Name: r.Name, Paused: r.Paused, Revision: r.Rev, Hash: r.Hash,
		Schedules: r.SchedTotal, FleetSchedules: r.SchedFleet, CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
}

type revisionRecord struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Kind      string    `dynamodbav:"kind"`
	Fleet     string    `dynamodbav:"fleet"`
	Rev       int64     `dynamodbav:"rev"`
	Def       []byte    `dynamodbav:"def"`
	Hash      string    `dynamodbav:"hash"`
	CreatedAt time.Time `dynamodbav:"createdAt"`
	By        string    `dynamodbav:"by,omitempty"`
	Via       string    `dynamodbav:"via,omitempty"`
	Improve   string    `dynamodbav:"improvement,omitempty"`
	Restored  int64     `dynamodbav:"restored,omitempty"`
}

func (r revisionRecord) revision() Revision {
	return Revision{Fleet: r.Fleet, Number: r.Rev, Definition: r.Def, Hash: r.Hash, CreatedAt: r.CreatedAt,
		Origin: Origin{By: r.By, Via: r.Via, Improvement: r.Improve, Restored: r.Restored}}
}

func newRevisionRecord(fleet string, n int64, def []byte, hash string, o Origin, now time.Time) revisionRecord {
	return revisionRecord{PK: prefixFleet + fleet, SK: revSK(n), Kind: "revision", Fleet: fleet, Rev: n,
		Def: def, Hash: hash, CreatedAt: now, By: o.By, Via: o.Via, Improve: o.Improvement, Restored: o.Restored}
}

func fleetKey(name string) map[string]types.AttributeValue { return key(prefixFleet+name, skFleet) }

func revKey(fleet string, n int64) map[string]types.AttributeValue {
	return key(prefixFleet+fleet, revSK(n))
}

func revSK(n int64) string { return fmt.Sprintf("%s%010d", prefixRev, n) }

// checkName refuses names that cannot be part of a key. The grammar of fleet
// names belongs to package fleet; the Store only needs them to be short,
// printable and free of the key separator '#'.
func checkName(what, name string) error {
	if name == "" || len(name) > 128 || strings.ContainsRune(name, '#') ||
		strings.ContainsFunc(name, func(r rune) bool { return !unicode.IsPrint(r) || unicode.IsSpace(r) }) {
		return fault.New(fault.RequestInvalid, "%s %q: want 1 to 128 printable characters without spaces or '#'", what, name)
	}
	return nil
}

func checkDefinition(def []byte, hash string) error {
	if len(def) == 0 || hash == "" {
		return fault.New(fault.DefinitionInvalid, "a revision needs the Definition and its hash")
	}
	if len(def) > MaxBlobBytes {
		return fault.New(fault.DefinitionInvalid, "the Definition is %d bytes; at most %d fit", len(def), MaxBlobBytes)
	}
	return nil
}

// CreateFleet creates a fleet with its first Definition as revision 1, in one
// transaction. A name already taken fails with fault.FleetExists.
func (s *Store) CreateFleet(ctx context.Context, nf NewFleet) (Fleet, error) {
	if err := checkName("fleet name", nf.Name); err != nil {
		return Fleet{}, fmt.Errorf("create fleet: %w", err)
	}
	if err := checkDefinition(nf.Definition, nf.Hash); err != nil {
		return Fleet{}, fmt.Errorf("create fleet %s: %w", nf.Name, err)
	}
	now := s.now().UTC()
	fr := fleetRecord{PK: prefixFleet + nf.Name, SK: skFleet, GSI1PK: gsi1AllFleets, GSI1SK: prefixFleet + nf.Name,
		Kind: "fleet", Name: nf.Name, Rev: 1, Hash: nf.Hash, CreatedAt: now, UpdatedAt: now}
	rr := newRevisionRecord(nf.Name, 1, nf.Definition, nf.Hash, nf.Origin, now)
	fi, err := marshal(fr)
	if err != nil {
		return Fleet{}, fmt.Errorf("create fleet %s: %w", nf.Name, err)
	}
	ri, err := marshal(rr)
	if err != nil {
		return Fleet{}, fmt.Errorf("create fleet %s: %w", nf.Name, err)
	}
	t := s.newTxn()
	t.put("fleet item", fi, newWrite().absent(), failWith(fault.FleetExists))
	t.put("revision 1", ri, nil, nil)
	if err := s.commit(ctx, t); err != nil {
		return Fleet{}, fmt.Errorf("create fleet %s: %w", nf.Name, err)
	}
	return fr.fleet(), nil
}

// GetFleet returns the fleet named name, or fault.FleetNotFound.
func (s *Store) GetFleet(ctx context.Context, name string) (Fleet, error) {
	r, err := s.getFleet(ctx, name)
	if err != nil {
		return Fleet{}, fmt.Errorf("get fleet %s: %w", name, err)
	}
	return r.fleet(), nil
}

func (s *Store) getFleet(ctx context.Context, name string) (fleetRecord, error) {
	var r fleetRecord
	found, err := s.getRecord(ctx, fleetKey(name), &r)
	if err != nil {
		return r, err
	}
	if !found {
		return r, fault.FleetNotFound
	}
	return r, nil
}

// FleetPage is one page of ListFleets. Next is empty on the last page.
type FleetPage struct {
	Fleets []Fleet
	Next   string
}

// ListFleets returns fleets in name order, limit a page (0 means 50, at most
// 100), from the opaque cursor a previous page returned ("" for the first).
// It reads GSI1, which DynamoDB updates eventually: a fleet created a moment
// ago may be missing from the list for that moment.
func (s *Store) ListFleets(ctx context.Context, cursor string, limit int) (FleetPage, error) {
	start, err := decodeCursor(cursor, gsi1AllFleets, AttrGSI1PK, AttrGSI1SK, AttrPK, AttrSK)
	if err != nil {
		return FleetPage{}, fmt.Errorf("list fleets: %w", err)
	}
	e := newExpr()
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName:                 &s.table,
		IndexName:                 aws.String(IndexGSI1),
		KeyConditionExpression:    aws.String(e.n(AttrGSI1PK) + " = " + e.s(gsi1AllFleets)),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ExclusiveStartKey:         start,
		Limit:                     aws.Int32(pageSize(limit, 50, 100)),
	})
	if err != nil {
		return FleetPage{}, fmt.Errorf("list fleets: %w", err)
	}
	page := FleetPage{Fleets: make([]Fleet, 0, len(out.Items)), Next: encodeCursor(out.LastEvaluatedKey)}
	for _, item := range out.Items {
		var r fleetRecord
		if err := unmarshal(item, &r); err != nil {
			return FleetPage{}, fmt.Errorf("list fleets: %w", err)
		}
		page.Fleets = append(page.Fleets, r.fleet())
	}
	return page, nil
}

// PauseFleet pauses a fleet: its schedules do not fire, cron_run fails with
// fault.FleetPaused and no run starts. Pausing a paused fleet is no error.
func (s *Store) PauseFleet(ctx context.Context, name string) (Fleet, error) {
	return s.setPaused(ctx, name, true)
}

// ResumeFleet undoes PauseFleet. Resuming an active fleet is no error.
func (s *Store) ResumeFleet(ctx context.Context, name string) (Fleet, error) {
	return s.setPaused(ctx, name, false)
}

func (s *Store) setPaused(ctx context.Context, name string, paused bool) (Fleet, error) {
	verb := map[bool]string{true: "pause", false: "resume"}[paused]
	e := newExpr()
	out, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{
		TableName:                 &s.table,
		Key:                       fleetKey(name),
		UpdateExpression:          aws.String("SET " + e.n("paused") + " = " + e.b(paused) + ", " + e.n("updatedAt") + " = " + e.t(s.now())),
		ConditionExpression:       aws.String("attribute_exists(" + e.n(AttrPK) + ")"),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ReturnValues:              types.ReturnValueAllNew,
	})
	if _, ok := conditionFailed(err); ok {
		return Fleet{}, fmt.Errorf("%s fleet %s: %w", verb, name, fault.FleetNotFound)
	}
	if err != nil {
		return Fleet{}, fmt.Errorf("%s fleet %s: %w", verb, name, err)
	}
	var r fleetRecord
	if err := unmarshal(out.Attributes, &r); err != nil {
		return Fleet{}, fmt.Errorf("%s fleet %s: %w", verb, name, err)
	}
	return r.fleet(), nil
}

// AppendRevision applies a new Definition to the fleet: it writes revision
// N+1 and makes it the fleet's current revision in one transaction, so
// revision numbers run 1, 2, 3, … without gaps and two concurrent appends
// never get the same number (the loser retries with the next). Runs already
// started keep the revision they pinned. o says who made it and from where.
func (s *Store) AppendRevision(ctx context.Context, fleet string, def []byte, hash string, o Origin) (Revision, error) {
	if err := checkDefinition(def, hash); err != nil {
		return Revision{}, fmt.Errorf("append revision to fleet %s: %w", fleet, err)
	}
	var rev Revision
	err := s.retry(ctx, func() error {
		fr, err := s.getFleet(ctx, fleet)
		if err != nil {
			return err
		}
		now := s.now().UTC()
		rr := newRevisionRecord(fleet, fr.Rev+1, def, hash, o, now)
		ri, err := marshal(rr)
		if err != nil {
			return err
		}
		t := s.newTxn()
		w := newWrite()
		w.set("rev", w.i(rr.Rev)).set("hash", w.s(hash)).set("updatedAt", w.t(now)).is("rev", w.i(fr.Rev))
		// Another append won revision N+1 (or the fleet went away).
		t.update("fleet item", fleetKey(fleet), w, failWith(errRetry))
		t.put("revision", ri, nil, nil)
		if err := s.commit(ctx, t); err != nil {
			return err
		}
		rev = rr.revision()
		return nil
	})
	if err != nil {
		return Revision{}, fmt.Errorf("append revision to fleet %s: %w", fleet, err)
	}
	return rev, nil
}

// CurrentRevision returns the fleet's current revision.
func (s *Store) CurrentRevision(ctx context.Context, fleet string) (Revision, error) {
	fr, err := s.getFleet(ctx, fleet)
	if err != nil {
		return Revision{}, fmt.Errorf("get current revision of fleet %s: %w", fleet, err)
	}
	return s.GetRevision(ctx, fleet, fr.Rev)
}

// GetRevision returns revision n of the fleet: fault.FleetNotFound for an
// unknown fleet, fault.RevisionNotFound for a revision it never had.
func (s *Store) GetRevision(ctx context.Context, fleet string, n int64) (Revision, error) {
	var rr revisionRecord
	found, err := s.getRecord(ctx, revKey(fleet, n), &rr)
	if err == nil && !found {
		if _, err = s.getFleet(ctx, fleet); err == nil {
			err = fault.RevisionNotFound
		}
	}
	if err != nil {
		return Revision{}, fmt.Errorf("get revision %d of fleet %s: %w", n, fleet, err)
	}
	return rr.revision(), nil
}
