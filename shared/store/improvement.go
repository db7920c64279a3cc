package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// The statuses of an improvement chat (Improvement.Status).
const (
	ImproveOpen      = "open"      // the agent answered; no proposal stands
	ImproveThinking  = "thinking"  // a turn is under way: the agent is answering the last message
	ImproveProposed  = "proposed"  // the agent's proposal waits for a person to apply or discard it
	ImproveApplied   = "applied"   // the proposal became a revision (Improvement.Applied); closed
	ImproveDiscarded = "discarded" // a person discarded the chat; closed
	ImproveStale     = "stale"     // the fleet changed since the proposal's from_revision; a new message asks for another
	ImproveFailed    = "failed"    // the last turn failed (Improvement.Error); a new message tries again
)

// talkable are the statuses a new message may be posted in.
var talkable = []string{ImproveOpen, ImproveProposed, ImproveStale, ImproveFailed}

// Proposal is the new Definition an improvement chat's agent proposes.
type Proposal struct {
	// From is the revision the proposal was made against; applying it is
	// conditional on the fleet still being at From.
	From int64
	// Definition is the proposed Definition as TOML, Hash its fleet hash.
	Definition string
	Hash       string
	// Canonical is the Definition as canonical JSON, the form a revision
	// keeps.
	Canonical []byte
	Summary   string
	Diff      string
}

// ChatThread is the Slack thread a chat started from Slack lives in.
type ChatThread struct {
	Channel, ThreadTS string
}

// Improvement is an improvement chat's record: its state, its latest
// proposal, and who started it. Its conversation is an ImprovementLog.
type Improvement struct {
	ID     string
	Fleet  string
	Status string
	// Turn counts the messages people posted; the turn under way while
	// Status is ImproveThinking.
	Turn     int64
	Origin   Origin
	Slack    ChatThread
	Error    string
	Proposal *Proposal
	// Applied is the revision the proposal became, 0 until applied.
	Applied              int64
	CreatedAt, UpdatedAt time.Time
}

// ImprovementLog is a chat's conversation, as two blobs the Store keeps
// and does not read: what people see, and what the agent's model sees.
// Together they are at most MaxBlobBytes.
type ImprovementLog struct {
	Messages     []byte
	Conversation []byte
}

type improveRecord struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Kind      string    `dynamodbav:"kind"`
	ID        string    `dynamodbav:"id"`
	Fleet     string    `dynamodbav:"fleet"`
	Status    string    `dynamodbav:"status"`
	Turn      int64     `dynamodbav:"turn"`
	By        string    `dynamodbav:"by,omitempty"`
	Via       string    `dynamodbav:"via,omitempty"`
	Channel   string    `dynamodbav:"channel,omitempty"`
	ThreadTs  string    `dynamodbav:"threadTs,omitempty"`
	Error     string    `dynamodbav:"error,omitempty"`
	PropFrom  int64     `dynamodbav:"propFrom,omitempty"`
	PropDef   string    `dynamodbav:"propDef,omitempty"`
	PropHash  string    `dynamodbav:"propHash,omitempty"`
	PropCanon []byte    `dynamodbav:"propCanon,omitempty"`
	PropSum   string    `dynamodbav:"propSummary,omitempty"`
	PropDiff  string    `dynamodbav:"propDiff,omitempty"`
	Applied   int64     `dynamodbav:"applied,omitempty"`
	CreatedAt time.Time `dynamodbav:"createdAt"`
	UpdatedAt time.Time `dynamodbav:"updatedAt"`
}

func (r improveRecord) improvement() Improvement {
	imp := Improvement{ID: r.ID, Fleet: r.Fleet, Status: r.Status, Turn: r.Turn, Origin: Origin{By: r.By, Via: r.Via},
		Slack: ChatThread{Channel: r.Channel, ThreadTS: r.ThreadTs}, Error: r.Error, Applied: r.Applied,
		CreatedAt: r.CreatedAt, UpdatedAt: r.UpdatedAt}
	if r.PropHash != "" {
		imp.Proposal = &Proposal{From: r.PropFrom, Definition: r.PropDef, Hash: r.PropHash, Canonical: r.PropCanon,
			Summary: r.PropSum, Diff: r.PropDiff}
	}
	return imp
}

type improveLogRecord struct {
	PK       string `dynamodbav:"pk"`
	SK       string `dynamodbav:"sk"`
	Kind     string `dynamodbav:"kind"`
	Messages []byte `dynamodbav:"messages"`
	Conv     []byte `dynamodbav:"conv"`
}

func improveKey(id string) map[string]types.AttributeValue { return key(prefixImprove+id, skImprove) }
func improveLogKey(id string) map[string]types.AttributeValue {
	return key(prefixImprove+id, skImproveLog)
}

// NewImprovement is what CreateImprovement needs: the fleet, who starts the
// chat and from where, and its first message as a log.
type NewImprovement struct {
	Fleet  string
	Origin Origin
	Slack  ChatThread
	Log    ImprovementLog
}

func (s *Store) logItem(id string, l ImprovementLog) (map[string]types.AttributeValue, error) {
	if len(l.Messages)+len(l.Conversation) > MaxBlobBytes {
		return nil, fault.New(fault.RequestInvalid, "the chat is %d bytes long; at most %d fit: start a new chat",
			len(l.Messages)+len(l.Conversation), MaxBlobBytes)
	}
	return marshal(improveLogRecord{PK: prefixImprove + id, SK: skImproveLog, Kind: "improvement log",
		Messages: l.Messages, Conv: l.Conversation})
}

// CreateImprovement starts a chat about ni.Fleet, thinking about its first
// message (turn 1), in one transaction with a check that the fleet exists
// (fault.FleetNotFound).
func (s *Store) CreateImprovement(ctx context.Context, ni NewImprovement) (Improvement, error) {
	now := s.now().UTC()
	id := newID("imp_", now)
	r := improveRecord{PK: prefixImprove + id, SK: skImprove, Kind: "improvement", ID: id, Fleet: ni.Fleet,
		Status: ImproveThinking, Turn: 1, By: ni.Origin.By, Via: ni.Origin.Via, Channel: ni.Slack.Channel,
		ThreadTs: ni.Slack.ThreadTS, CreatedAt: now, UpdatedAt: now}
	item, err := marshal(r)
	if err != nil {
		return Improvement{}, fmt.Errorf("create improvement of fleet %s: %w", ni.Fleet, err)
	}
	logItem, err := s.logItem(id, ni.Log)
	if err != nil {
		return Improvement{}, fmt.Errorf("create improvement of fleet %s: %w", ni.Fleet, err)
	}
	t := s.newTxn()
	t.check("fleet item", fleetKey(ni.Fleet), newWrite().exists(), failWith(fault.FleetNotFound))
	t.put("improvement item", item, nil, nil)
	t.put("improvement log", logItem, nil, nil)
	if err := s.commit(ctx, t); err != nil {
		return Improvement{}, fmt.Errorf("create improvement of fleet %s: %w", ni.Fleet, err)
	}
	return r.improvement(), nil
}

// GetImprovement returns the chat id, or fault.ImproveNotFound.
func (s *Store) GetImprovement(ctx context.Context, id string) (Improvement, error) {
	var r improveRecord
	found, err := s.getRecord(ctx, improveKey(id), &r)
	if err == nil && !found {
		err = fault.ImproveNotFound
	}
	if err != nil {
		return Improvement{}, fmt.Errorf("get improvement %s: %w", id, err)
	}
	return r.improvement(), nil
}

// GetImprovementLog returns the chat's conversation.
func (s *Store) GetImprovementLog(ctx context.Context, id string) (ImprovementLog, error) {
	var r improveLogRecord
	found, err := s.getRecord(ctx, improveLogKey(id), &r)
	if err == nil && !found {
		err = fault.ImproveNotFound
	}
	if err != nil {
		return ImprovementLog{}, fmt.Errorf("get the log of improvement %s: %w", id, err)
	}
	return ImprovementLog{Messages: r.Messages, Conversation: r.Conv}, nil
}

// BeginTurn records a person's message: the chat, last seen at turn seen,
// moves to ImproveThinking at turn seen+1 with log as its conversation. It
// fails with fault.ImproveBusy while a turn is under way or when another
// message came first (the turn moved on), and fault.ImproveClosed once the
// chat was applied or discarded.
func (s *Store) BeginTurn(ctx context.Context, id string, seen int64, log ImprovementLog) (Improvement, error) {
	logItem, err := s.logItem(id, log)
	if err != nil {
		return Improvement{}, fmt.Errorf("post to improvement %s: %w", id, err)
	}
	now := s.now().UTC()
	w := newWrite()
	w.set("status", w.s(ImproveThinking)).set("turn", w.i(seen+1)).set("updatedAt", w.t(now)).remove("error")
	w.exists().when(w.in("status", talkable...)).is("turn", w.i(seen))
	t := s.newTxn()
	t.update("improvement item", improveKey(id), w, s.turnFailure)
	t.put("improvement log", logItem, nil, nil)
	if err := s.commit(ctx, t); err != nil {
		return Improvement{}, fmt.Errorf("post to improvement %s: %w", id, err)
	}
	return s.GetImprovement(ctx, id)
}

// turnFailure says why a chat refused a new message.
func (s *Store) turnFailure(old map[string]types.AttributeValue) error {
	if old == nil {
		return fault.ImproveNotFound
	}
	var r improveRecord
	if err := unmarshal(old, &r); err != nil {
		return err
	}
	switch r.Status {
	case ImproveApplied, ImproveDiscarded:
		return fault.New(fault.ImproveClosed, "the chat is %s; start a new one", r.Status)
	case ImproveThinking:
		return fault.ImproveBusy
	}
	return fault.New(fault.ImproveBusy, "another message was posted to the chat meanwhile; read it again and post again")
}

// ErrTurnOver says a turn's end was refused: the chat is no longer
// thinking about that turn (another invocation ended it, or a person
// discarded the chat). The turn's work is dropped.
var ErrTurnOver = errors.New("store: the improvement turn is over")

// TurnEnd is how a turn ended: the chat's new status, the error of a
// failed turn, the proposal of a turn that made one, and the conversation.
type TurnEnd struct {
	Status   string
	Error    string
	Proposal *Proposal
	Log      ImprovementLog
}

// EndTurn ends turn of the chat as e says, if the chat is still thinking
// about that turn; otherwise ErrTurnOver.
func (s *Store) EndTurn(ctx context.Context, id string, turn int64, e TurnEnd) error {
	logItem, err := s.logItem(id, e.Log)
	if err != nil {
		// Too long to keep: the turn fails, the conversation stays as it was.
		e = TurnEnd{Status: ImproveFailed, Error: err.Error()}
		logItem = nil
	}
	w := newWrite()
	w.set("status", w.s(e.Status)).set("updatedAt", w.t(s.now().UTC()))
	if e.Error != "" {
		w.set("error", w.s(e.Error))
	}
	if p := e.Proposal; p != nil {
		w.set("propFrom", w.i(p.From)).set("propDef", w.s(p.Definition)).set("propHash", w.s(p.Hash)).
			set("propCanon", w.v(&types.AttributeValueMemberB{Value: p.Canonical})).
			set("propSummary", w.s(p.Summary)).set("propDiff", w.s(p.Diff))
	}
	w.exists().is("status", w.s(ImproveThinking)).is("turn", w.i(turn))
	t := s.newTxn()
	t.update("improvement item", improveKey(id), w, failWith(ErrTurnOver))
	if logItem != nil {
		t.put("improvement log", logItem, nil, nil)
	}
	if err := s.commit(ctx, t); err != nil {
		return fmt.Errorf("end turn %d of improvement %s: %w", turn, id, err)
	}
	return nil
}

// DiscardImprovement closes a chat without applying anything. A chat
// applied already gives fault.ImproveClosed; discarding twice is no error.
func (s *Store) DiscardImprovement(ctx context.Context, id string) (Improvement, error) {
	w := newWrite()
	w.set("status", w.s(ImproveDiscarded)).set("updatedAt", w.t(s.now().UTC()))
	w.exists().when(w.n("status") + " <> " + w.s(ImproveApplied))
	_, err := s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table, Key: improveKey(id),
		UpdateExpression: w.update(), ConditionExpression: w.condition(),
		ExpressionAttributeNames: w.nameMap(), ExpressionAttributeValues: w.valueMap(),
		ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld})
	if old, ok := conditionFailed(err); ok {
		err = fault.ImproveNotFound
		if old != nil {
			err = fault.New(fault.ImproveClosed, "the chat's proposal was applied already; restore an earlier revision to undo it")
		}
	}
	if err != nil {
		return Improvement{}, fmt.Errorf("discard improvement %s: %w", id, err)
	}
	return s.GetImprovement(ctx, id)
}

// ApplyImprovement makes the chat's proposal, whose hash is hash, the
// fleet's next revision, with o as its origin, in one transaction: only
// while the fleet is still at the proposal's From (else the chat is marked
// stale and the answer is fault.ImproveStale) and the chat still holds that
// proposal (else fault.ImproveBusy, fault.ImproveClosed or
// fault.ImproveNoProposal). Runs already started keep their revision.
func (s *Store) ApplyImprovement(ctx context.Context, id, hash string, o Origin) (Revision, error) {
	imp, err := s.GetImprovement(ctx, id)
	if err != nil {
		return Revision{}, err
	}
	p := imp.Proposal
	if err := applicable(imp, hash); err != nil {
		return Revision{}, fmt.Errorf("apply improvement %s: %w", id, err)
	}
	now := s.now().UTC()
	o.Improvement = id
	rr := newRevisionRecord(imp.Fleet, p.From+1, p.Canonical, p.Hash, o, now)
	ri, err := marshal(rr)
	if err != nil {
		return Revision{}, fmt.Errorf("apply improvement %s: %w", id, err)
	}
	fw := newWrite()
	fw.set("rev", fw.i(rr.Rev)).set("hash", fw.s(p.Hash)).set("updatedAt", fw.t(now)).is("rev", fw.i(p.From))
	iw := newWrite()
	iw.set("status", iw.s(ImproveApplied)).set("applied", iw.i(rr.Rev)).set("updatedAt", iw.t(now))
	iw.is("status", iw.s(ImproveProposed)).is("propHash", iw.s(hash))
	t := s.newTxn()
	t.update("fleet item", fleetKey(imp.Fleet), fw, failWith(fault.ImproveStale))
	t.update("improvement item", improveKey(id), iw, s.applyFailure)
	t.put("revision", ri, nil, nil)
	err = s.commit(ctx, t)
	if errors.Is(err, fault.ImproveStale) {
		s.markStale(ctx, id, hash)
		err = fault.New(fault.ImproveStale, "fleet %s is at revision %s now, not %d, the revision the proposal was made against; nothing was applied: ask the chat for a new proposal",
			imp.Fleet, s.revisionNow(ctx, imp.Fleet), p.From)
	}
	if err != nil {
		return Revision{}, fmt.Errorf("apply improvement %s: %w", id, err)
	}
	return rr.revision(), nil
}

// applyFailure says why the chat's part of an apply failed.
func (s *Store) applyFailure(old map[string]types.AttributeValue) error {
	var r improveRecord
	if old == nil || unmarshal(old, &r) != nil {
		return fault.ImproveNotFound
	}
	return applicable(r.improvement(), "")
}

// applicable refuses a chat that holds no proposal hash to apply.
func applicable(imp Improvement, hash string) error {
	switch {
	case imp.Status == ImproveApplied || imp.Status == ImproveDiscarded:
		return fault.New(fault.ImproveClosed, "the chat is %s already", imp.Status)
	case imp.Status == ImproveThinking:
		return fault.New(fault.ImproveBusy, "the chat's agent is answering a new message; wait for its proposal")
	case imp.Status == ImproveStale:
		return fault.New(fault.ImproveStale, "the proposal was made against revision %d and the fleet has changed since; ask the chat for a new proposal", imp.Proposal.From)
	case imp.Status != ImproveProposed || imp.Proposal == nil:
		return fault.ImproveNoProposal
	case imp.Proposal.Hash != hash:
		return fault.New(fault.ImproveBusy, "the chat's proposal changed while it was being checked; read it again")
	}
	return nil
}

// markStale records that the chat's proposal hash can no longer apply.
// It is a note for readers: a failure to write it changes nothing, since
// apply checks the fleet's revision itself.
func (s *Store) markStale(ctx context.Context, id, hash string) {
	w := newWrite()
	w.set("status", w.s(ImproveStale)).set("updatedAt", w.t(s.now().UTC()))
	w.is("status", w.s(ImproveProposed)).is("propHash", w.s(hash))
	s.db.UpdateItem(ctx, &dynamodb.UpdateItemInput{TableName: &s.table, Key: improveKey(id),
		UpdateExpression: w.update(), ConditionExpression: w.condition(),
		ExpressionAttributeNames: w.nameMap(), ExpressionAttributeValues: w.valueMap()})
}

func (s *Store) revisionNow(ctx context.Context, fleet string) string {
	f, err := s.GetFleet(ctx, fleet)
	if err != nil {
		return "unknown"
	}
	return fmt.Sprint(f.Revision)
}

// RevisionPage is a page of a fleet's revisions, newest first; Next is
// empty on the last page. Its revisions carry their Definitions.
type RevisionPage struct {
	Revisions []Revision
	Next      string
}

// ListRevisions returns the fleet's revisions newest first, limit a page
// (0 means 20, at most 100), from the cursor a previous page returned.
func (s *Store) ListRevisions(ctx context.Context, fleet, cursor string, limit int) (RevisionPage, error) {
	start, err := decodeCursor(cursor, prefixFleet+fleet, AttrPK, AttrSK)
	if err != nil {
		return RevisionPage{}, fmt.Errorf("list revisions of fleet %s: %w", fleet, err)
	}
	e := newExpr()
	out, err := s.db.Query(ctx, &dynamodb.QueryInput{
		TableName: &s.table,
		KeyConditionExpression: aws.String(e.n(AttrPK) + " = " + e.s(prefixFleet+fleet) +
			" AND begins_with(" + e.n(AttrSK) + ", " + e.s(prefixRev) + ")"),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
		ExclusiveStartKey:         start,
		ScanIndexForward:          aws.Bool(false),
		ConsistentRead:            aws.Bool(true),
		Limit:                     aws.Int32(pageSize(limit, 20, 100)),
	})
	if err != nil {
		return RevisionPage{}, fmt.Errorf("list revisions of fleet %s: %w", fleet, err)
	}
	if len(out.Items) == 0 && cursor == "" {
		return RevisionPage{}, fmt.Errorf("list revisions of fleet %s: %w", fleet, fault.FleetNotFound)
	}
	page := RevisionPage{Revisions: make([]Revision, 0, len(out.Items)), Next: encodeCursor(out.LastEvaluatedKey)}
	for _, item := range out.Items {
		var r revisionRecord
		if err := unmarshal(item, &r); err != nil {
			return RevisionPage{}, fmt.Errorf("list revisions of fleet %s: %w", fleet, err)
		}
		page.Revisions = append(page.Revisions, r.revision())
	}
	return page, nil
}
