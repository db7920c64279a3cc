package slack

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/fleet"
)

// Ephemeraler is a Poster that can also post a message only one person in
// a channel sees (chat.postEphemeral): how the Handler tells someone it
// refused why. A Poster without it leaves refusals to the log.
type Ephemeraler interface {
	// Ephemeral posts text to user alone, in the thread threadTS of
	// channel ("" for the channel itself).
	Ephemeral(ctx context.Context, channel, threadTS, user, text string) error
}

// GroupLister lists the members of a Slack user group
// (usergroups.users.list, the usergroups:read scope). The Handler finds it
// on its Poster; without it, an access list that names a user group lets
// none of its members in.
type GroupLister interface {
	GroupMembers(ctx context.Context, group string) ([]string, error)
}

var (
	_ Ephemeraler = (*WebPoster)(nil)
	_ GroupLister = (*WebPoster)(nil)
)

// GroupTTL is how long the Handler keeps a user group's members before it
// asks Slack again: someone removed from a group may still start or stop
// runs for that long.
const GroupTTL = time.Minute

// groups caches user groups' members. Safe for concurrent use.
type groups struct {
	mu   sync.Mutex
	seen map[string]groupEntry
}

type groupEntry struct {
	members []string
	at      time.Time
}

// errNoGroups is why a user group cannot be read by a Handler whose Poster
// lists none.
var errNoGroups = errors.New("this deployment's Slack connection cannot list user groups")

// access is the Slack access lists of fleetName's current Definition: the
// zero SlackAccess (everyone) for a fleet that does not exist, which
// start.Run then reports as it does.
func (h *Handler) access(ctx context.Context, fleetName string) (fleet.SlackAccess, error) {
	rev, err := h.cfg.Store.CurrentRevision(ctx, fleetName)
	if errors.Is(err, fault.FleetNotFound) || errors.Is(err, fault.RequestInvalid) {
		return fleet.SlackAccess{}, nil
	}
	if err != nil {
		return fleet.SlackAccess{}, err
	}
	def, err := fleet.ParseJSON(rev.Definition)
	if err != nil {
		return fleet.SlackAccess{}, fmt.Errorf("read fleet %s's Definition: %w", fleetName, err)
	}
	return def.SlackAccess, nil
}

// onList reports whether user is on list: a nil list lets everyone in;
// otherwise user's id must be on it, or user must be a member of a user
// group on it. err is why a group on the list could not be read (the
// answer is then false: a check that cannot be made refuses).
func (h *Handler) onList(ctx context.Context, list []string, user string) (bool, error) {
	if list == nil {
		return true, nil
	}
	if user == "" {
		return false, nil
	}
	if slices.Contains(list, user) {
		return true, nil
	}
	var first error
	for _, id := range list {
		if !fleet.IsSlackGroup(id) {
			continue
		}
		members, err := h.groupMembers(ctx, id)
		if err != nil {
			h.log.Warn("slack: a user group of an access list could not be read", "group", id, "error", err)
			if first == nil {
				first = fmt.Errorf("the members of the user group %s could not be read: %w", id, err)
			}
			continue
		}
		if slices.Contains(members, user) {
			return true, nil
		}
	}
	return false, first
}

// groupMembers is a user group's members, from the cache when it is
// younger than GroupTTL.
func (h *Handler) groupMembers(ctx context.Context, id string) ([]string, error) {
	lister, ok := h.cfg.Post.(GroupLister)
	if !ok {
		return nil, errNoGroups
	}
	now := h.cfg.Now()
	h.groups.mu.Lock()
	e, ok := h.groups.seen[id]
	h.groups.mu.Unlock()
	if ok && now.Sub(e.at) < GroupTTL {
		return e.members, nil
	}
	ctx, cancel := context.WithTimeout(ctx, ReplyTimeout)
	defer cancel()
	members, err := lister.GroupMembers(ctx, id)
	if err != nil {
		return nil, err
	}
	h.groups.mu.Lock()
	if h.groups.seen == nil {
		h.groups.seen = map[string]groupEntry{}
	}
	h.groups.seen[id] = groupEntry{members, now}
	h.groups.mu.Unlock()
	return members, nil
}

// mayStart says whether m's author may start runs of fleetName; when not,
// it has told them why (once per event) and ok is false. err is only for
// what a retry may cure.
func (h *Handler) mayStart(ctx context.Context, m message, fleetName string) (ok bool, err error) {
	acc, err := h.access(ctx, fleetName)
	if err != nil {
		return false, err
	}
	ok, why := h.onList(ctx, acc.AllowStart, m.user)
	if ok {
		return true, nil
	}
	text := fmt.Sprintf("You may not start runs of %s here: its Definition lets only the people and user groups in its "+
		"[x-agentsfleet.slack] allow_start do that. Ask one of them, or whoever applies %s's Definition to add you.", fleetName, fleetName)
	if why != nil {
		text = fmt.Sprintf("I could not check whether you may start runs of %s, so I did not: %v. "+
			"The Slack app needs the usergroups:read scope; ask whoever runs agentsfleet.", fleetName, why)
	}
	h.log.Info("slack: a run refused: not on the fleet's allow_start", "fleet", fleetName, "user", m.user, "channel", m.channel, "event_id", m.eventID)
	_, claimed, err := h.cfg.Store.ClaimIdempotencyKey(ctx, answerScope, m.eventID, "", 0)
	if err != nil {
		return false, err
	}
	if claimed {
		h.whisper(ctx, m.channel, m.threadTS, m.user, text)
	}
	return false, nil
}

// mayStop says whether user may stop a run of fleetName that starter
// started: the starter always may, others as the fleet's StopList says.
// When not, text is what to tell them.
func (h *Handler) mayStop(ctx context.Context, fleetName, runID, starter, user string) (ok bool, text string, err error) {
	if user != "" && user == starter {
		return true, "", nil
	}
	acc, err := h.access(ctx, fleetName)
	if err != nil {
		return false, "", err
	}
	ok, why := h.onList(ctx, acc.StopList(), user)
	if ok {
		return true, "", nil
	}
	if why != nil {
		return false, fmt.Sprintf("I could not check whether you may stop run %s, so I did not: %v. "+
			"The Slack app needs the usergroups:read scope; ask whoever runs agentsfleet.", runID, why), nil
	}
	return false, fmt.Sprintf("You may not stop run %s: only the person who started it, and the people and user groups in %s's "+
		"[x-agentsfleet.slack] allow_stop (else allow_start), may.", runID, fleetName), nil
}

// whisper posts text to user alone, within ReplyTimeout, logging a
// failure; without an Ephemeraler it only logs.
func (h *Handler) whisper(ctx context.Context, channel, threadTS, user, text string) {
	e, ok := h.cfg.Post.(Ephemeraler)
	if !ok || user == "" {
		h.log.Warn("slack: no ephemeral poster; the refusal is not posted", "channel", channel, "user", user, "text", text)
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), ReplyTimeout)
	defer cancel()
	if err := e.Ephemeral(ctx, channel, threadTS, user, text); err != nil {
		h.log.Error("slack: refusal not posted", "channel", channel, "user", user, "error", err)
	}
}

// optIn is an access list that lets nobody in until the fleet sets it
// (allow_apply, allow_approve), and what to tell those it keeps out.
type optIn struct {
	list func(fleet.SlackAccess) []string
	key  string // the list's key in [x-agentsfleet.slack]
	// act is what being on the list lets one do ("apply %s's
	// proposals"), and nobody what to say where the fleet sets no list;
	// %s is the fleet's name in both.
	act, nobody string
}

// optedIn says whether user is on fleetName's list o; when not, text is
// what to tell them.
func (h *Handler) optedIn(ctx context.Context, fleetName, user string, o optIn) (ok bool, text string, err error) {
	acc, err := h.access(ctx, fleetName)
	if err != nil {
		return false, "", err
	}
	list := o.list(acc)
	if list == nil {
		return false, fmt.Sprintf(o.nobody, fleetName), nil
	}
	ok, why := h.onList(ctx, list, user)
	act := fmt.Sprintf(o.act, fleetName)
	switch {
	case ok:
		return true, "", nil
	case why != nil:
		return false, fmt.Sprintf("I could not check whether you may %s, so I did not: %v.", act, why), nil
	}
	return false, fmt.Sprintf("You may not %s: only the people and user groups in its [x-agentsfleet.slack] %s may.", act, o.key), nil
}
