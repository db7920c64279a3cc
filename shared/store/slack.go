package store

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/agentsfleet/agentsfleet/shared/fault"
)

// Slack's state: which fleet a channel's mentions reach (its route), and,
// for each thread a run from Slack answered in, that thread's newest run, so
// that a reply in the thread reaches the same fleet. Both items live in the
// channel's partition, SLACK#<channel>.

// ChannelRoute is the fleet a Slack channel's mentions reach.
type ChannelRoute struct {
	Channel   string
	Fleet     string
	UpdatedAt time.Time
}

// SlackThread is a Slack thread that runs answered in: the newest of them.
type SlackThread struct {
	Channel   string
	ThreadTS  string
	RunID     string
	Fleet     string
	UpdatedAt time.Time
}

type routeRecord struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Kind      string    `dynamodbav:"kind"`
	Channel   string    `dynamodbav:"channel"`
	Fleet     string    `dynamodbav:"fleet"`
	UpdatedAt time.Time `dynamodbav:"updatedAt"`
}

type threadRecord struct {
	PK        string    `dynamodbav:"pk"`
	SK        string    `dynamodbav:"sk"`
	Kind      string    `dynamodbav:"kind"`
	Channel   string    `dynamodbav:"channel"`
	ThreadTS  string    `dynamodbav:"threadTs"`
	RunID     string    `dynamodbav:"runId"`
	Fleet     string    `dynamodbav:"fleet"`
	UpdatedAt time.Time `dynamodbav:"updatedAt"`
}

func routeKey(channel string) map[string]types.AttributeValue {
	return key(prefixSlack+channel, skSlackRoute)
}

func threadKey(channel, ts string) map[string]types.AttributeValue {
	return key(prefixSlack+channel, prefixThread+ts)
}

// checkChannel accepts a Slack conversation id: C…, G… or D… followed by
// upper-case letters and digits, as Slack writes them.
func checkChannel(channel string) error {
	ok := len(channel) >= 2 && len(channel) <= 64
	for i := 0; ok && i < len(channel); i++ {
		c := channel[i]
		ok = (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')
	}
	if !ok {
		return fault.New(fault.RequestInvalid,
			"Slack channel %q: want the channel's id, upper-case letters and digits such as C0123456789 (Slack shows it at the bottom of the channel's details), not its name", channel)
	}
	return nil
}

// checkThreadTS accepts a Slack message timestamp, such as 1700000000.000100.
func checkThreadTS(ts string) error {
	ok := len(ts) >= 1 && len(ts) <= 32
	for i := 0; ok && i < len(ts); i++ {
		ok = (ts[i] >= '0' && ts[i] <= '9') || ts[i] == '.'
	}
	if !ok {
		return fault.New(fault.RequestInvalid, "Slack thread ts %q: want a message timestamp such as 1700000000.000100", ts)
	}
	return nil
}

// PutSlackRoute makes the mentions in a Slack channel reach fleet, replacing
// the channel's route if it had one. The fleet must exist
// (fault.FleetNotFound), checked in the transaction that writes the route;
// a channel that is not a Slack channel id, or a fleet name that cannot be
// one, fails with fault.RequestInvalid. A paused fleet may be routed to: its
// mentions are answered that it is paused.
//
// among, when given, are the fleets whose channels the caller may take (an
// API key's fleets, at most MaxKeyFleets): a channel that has a route
// already is routed anew only when that route reaches one of them, checked
// in the same transaction, else fault.ScopeMissing. A channel without a
// route may be taken by anyone who may route to fleet.
func (s *Store) PutSlackRoute(ctx context.Context, channel, fleet string, among ...string) (ChannelRoute, error) {
	if err := checkChannel(channel); err != nil {
		return ChannelRoute{}, fmt.Errorf("route Slack channel: %w", err)
	}
	if err := checkName("fleet name", fleet); err != nil {
		return ChannelRoute{}, fmt.Errorf("route Slack channel %s: %w", channel, err)
	}
	rec := routeRecord{PK: prefixSlack + channel, SK: skSlackRoute, Kind: "slackRoute", Channel: channel, Fleet: fleet,
		UpdatedAt: s.now().UTC()}
	item, err := marshal(rec)
	if err != nil {
		return ChannelRoute{}, fmt.Errorf("route Slack channel %s: %w", channel, err)
	}
	t := s.newTxn()
	t.check("fleet item", fleetKey(fleet), newWrite().exists(),
		failWith(fault.New(fault.FleetNotFound, "there is no fleet %s to route Slack channel %s to", fleet, channel)))
	var guard *write
	if len(among) > 0 {
		if len(among) > MaxKeyFleets {
			return ChannelRoute{}, fmt.Errorf("route Slack channel %s: %w", channel,
				fault.New(fault.RequestInvalid, "at most %d fleets may guard a route, not %d", MaxKeyFleets, len(among)))
		}
		guard = newWrite()
		guard.either("attribute_not_exists("+guard.n(AttrPK)+")", guard.in("fleet", among...))
	}
	t.put("route", item, guard, failWith(fault.New(fault.ScopeMissing,
		"Slack channel %s is routed to a fleet this key does not serve; only a key serving that fleet may route it elsewhere", channel)))
	if err := s.commit(ctx, t); err != nil {
		return ChannelRoute{}, fmt.Errorf("route Slack channel %s to fleet %s: %w", channel, fleet, err)
	}
	return ChannelRoute{Channel: channel, Fleet: fleet, UpdatedAt: rec.UpdatedAt}, nil
}

// SlackRoute returns the route of a Slack channel; ok is false when the
// channel has none (the deployment's default fleet applies then). The
// route's fleet may have been deleted since: starting its run says so.
func (s *Store) SlackRoute(ctx context.Context, channel string) (route ChannelRoute, ok bool, err error) {
	if err := checkChannel(channel); err != nil {
		return ChannelRoute{}, false, fmt.Errorf("get route of Slack channel: %w", err)
	}
	var rec routeRecord
	found, err := s.getRecord(ctx, routeKey(channel), &rec)
	if err != nil {
		return ChannelRoute{}, false, fmt.Errorf("get route of Slack channel %s: %w", channel, err)
	}
	if !found {
		return ChannelRoute{}, false, nil
	}
	return ChannelRoute{Channel: rec.Channel, Fleet: rec.Fleet, UpdatedAt: rec.UpdatedAt}, true, nil
}

// RecordSlackThread records that run runID, of fleet, answers in the Slack
// thread (channel, threadTS), so that replies in the thread reach the fleet
// again. The record keeps the newest run: it is one conditional write that
// replaces the record only with a run id that sorts after the one it holds
// (run ids sort by creation), so concurrent or late calls never put an
// older run back. Recording an older run than the one held does nothing and
// is not an error. Safe to call again for the same run.
func (s *Store) RecordSlackThread(ctx context.Context, channel, threadTS, runID, fleet string) error {
	if err := checkChannel(channel); err != nil {
		return fmt.Errorf("record Slack thread: %w", err)
	}
	if err := checkThreadTS(threadTS); err != nil {
		return fmt.Errorf("record Slack thread in %s: %w", channel, err)
	}
	if err := checkName("run id", runID); err != nil {
		return fmt.Errorf("record Slack thread %s/%s: %w", channel, threadTS, err)
	}
	if err := checkName("fleet name", fleet); err != nil {
		return fmt.Errorf("record Slack thread %s/%s: %w", channel, threadTS, err)
	}
	rec := threadRecord{PK: prefixSlack + channel, SK: prefixThread + threadTS, Kind: "slackThread", Channel: channel,
		ThreadTS: threadTS, RunID: runID, Fleet: fleet, UpdatedAt: s.now().UTC()}
	item, err := marshal(rec)
	if err != nil {
		return fmt.Errorf("record Slack thread %s/%s: %w", channel, threadTS, err)
	}
	e := newExpr()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(" + e.n(AttrPK) + ") OR " + e.n("runId") + " <= " + e.s(runID)),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
	})
	if _, failed := conditionFailed(err); failed {
		return nil // a newer run holds the thread
	}
	if err != nil {
		return fmt.Errorf("record Slack thread %s/%s: %w", channel, threadTS, err)
	}
	return nil
}

// SlackThreadRun returns the newest run recorded for a Slack thread; ok is
// false when no run answered in it.
func (s *Store) SlackThreadRun(ctx context.Context, channel, threadTS string) (th SlackThread, ok bool, err error) {
	if err := checkChannel(channel); err != nil {
		return SlackThread{}, false, fmt.Errorf("get Slack thread: %w", err)
	}
	if err := checkThreadTS(threadTS); err != nil {
		return SlackThread{}, false, fmt.Errorf("get Slack thread in %s: %w", channel, err)
	}
	var rec threadRecord
	found, err := s.getRecord(ctx, threadKey(channel, threadTS), &rec)
	if err != nil {
		return SlackThread{}, false, fmt.Errorf("get Slack thread %s/%s: %w", channel, threadTS, err)
	}
	if !found {
		return SlackThread{}, false, nil
	}
	return SlackThread{Channel: rec.Channel, ThreadTS: rec.ThreadTS, RunID: rec.RunID, Fleet: rec.Fleet, UpdatedAt: rec.UpdatedAt}, true, nil
}

// prefixChatThread keys the record of a Slack thread an improvement chat
// lives in, beside the channel's route and run threads.
const prefixChatThread = "CHAT#"

type chatThreadRecord struct {
	PK          string `dynamodbav:"pk"`
	SK          string `dynamodbav:"sk"`
	Kind        string `dynamodbav:"kind"`
	Improvement string `dynamodbav:"improvement"`
}

// RecordChatThread records that the improvement chat id lives in the
// Slack thread (channel, threadTS), so that replies there are its
// messages. A thread holds one chat: the first recorded keeps it, and
// recording another there is fault.RequestInvalid.
func (s *Store) RecordChatThread(ctx context.Context, channel, threadTS, id string) error {
	if err := checkChannel(channel); err != nil {
		return fmt.Errorf("record chat thread: %w", err)
	}
	if err := checkThreadTS(threadTS); err != nil {
		return fmt.Errorf("record chat thread in %s: %w", channel, err)
	}
	item, err := marshal(chatThreadRecord{PK: prefixSlack + channel, SK: prefixChatThread + threadTS, Kind: "slackChatThread", Improvement: id})
	if err != nil {
		return fmt.Errorf("record chat thread: %w", err)
	}
	e := newExpr()
	_, err = s.db.PutItem(ctx, &dynamodb.PutItemInput{TableName: &s.table, Item: item,
		ConditionExpression:       aws.String("attribute_not_exists(" + e.n(AttrPK) + ") OR " + e.n("improvement") + " = " + e.s(id)),
		ExpressionAttributeNames:  e.nameMap(),
		ExpressionAttributeValues: e.valueMap(),
	})
	if _, failed := conditionFailed(err); failed {
		return fault.New(fault.RequestInvalid, "this Slack thread holds another improvement chat already; start one in a new thread")
	}
	if err != nil {
		return fmt.Errorf("record chat thread %s/%s: %w", channel, threadTS, err)
	}
	return nil
}

// ChatOfThread returns the improvement chat of a Slack thread; ok is false
// when none lives there.
func (s *Store) ChatOfThread(ctx context.Context, channel, threadTS string) (id string, ok bool, err error) {
	if checkChannel(channel) != nil || checkThreadTS(threadTS) != nil {
		return "", false, nil
	}
	var r chatThreadRecord
	found, err := s.getRecord(ctx, key(prefixSlack+channel, prefixChatThread+threadTS), &r)
	if err != nil {
		return "", false, fmt.Errorf("get chat thread %s/%s: %w", channel, threadTS, err)
	}
	return r.Improvement, found, nil
}
