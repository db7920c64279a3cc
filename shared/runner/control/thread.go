package control

import (
	"context"
	"errors"

	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/limit"
	"github.com/agentsfleet/agentsfleet/shared/slack/thread"
	"github.com/agentsfleet/agentsfleet/shared/tool"
)

// Thread is what message needs of the runner: the Slack thread of one run,
// which the runner posts to through the slack λ. An error is the
// environment failing unless a method says otherwise.
type Thread interface {
	// Source is where the run was started from, and whether that gave it
	// a thread.
	Source() (source string, ok bool)
	// Count counts one more line of the run's: a *fault.Error
	// (fault.RunMessageCap) past limit.MessageLines.
	Count(ctx context.Context) error
	// Scrub replaces the fleet's secret values in text.
	Scrub(ctx context.Context, text string) (string, error)
	// Post posts text to the thread within MessageDeliveryTimeout (or the
	// runner's setting); a line not taken is an error, which the model
	// sees as not delivered.
	Post(ctx context.Context, text string) error
	// Posted records message.posted with the step: the line as posted
	// (or as written, when it was not screened) and whether Slack took it.
	Posted(text string, delivered bool)
}

func init() {
	implement(MessageSpec, implementation{unbuilt: messageNotBuilt, build: func(c Caller) tool.Tool {
		if c.Thread == nil {
			return nil
		}
		return bind(MessageSpec, poster{c.Thread}.message)
	}})
}

// poster is message for one run.
type poster struct{ th Thread }

// message posts one line to the run's thread: counted first (at most
// limit.MessageLines a run, fault.RunMessageCap past them; a run without
// a thread fails with fault.RunNoThread), the fleet's secret values
// replaced, mentions made inert, then posted. A line not taken is reported
// as not delivered and the run goes on.
func (p poster) message(ctx context.Context, args MessageArgs) (tool.Result, error) {
	if n := len(args.Text); n > MaxMessageBytes {
		return tool.Errorf("message: the text is %d bytes; a line is at most %d", n, MaxMessageBytes), nil
	}
	if source, ok := p.th.Source(); !ok {
		return tool.Errorf("message: %v", fault.New(fault.RunNoThread, "this run was started from %s, so it has no Slack thread to post in; your answer is how it reports", source)), nil
	}
	if err := p.th.Count(ctx); err != nil {
		var fe *fault.Error
		if errors.As(err, &fe) {
			return tool.Errorf("message: %v", fe), nil
		}
		return tool.Result{}, err
	}
	text, err := p.th.Scrub(ctx, args.Text)
	if err != nil {
		// Nothing that might hold a secret leaves: the line is not posted.
		p.th.Posted(args.Text, false)
		return tool.Errorf("message: not delivered: the line could not be screened for the fleet's secrets (%v), so it was not posted; it still counts toward the %d lines", err, limit.MessageLines), nil
	}
	text = thread.Inert(text)
	err = p.th.Post(ctx, text)
	p.th.Posted(text, err == nil)
	if err != nil {
		return tool.Errorf("message: not delivered (%v); it still counts toward the %d lines, and the run goes on", err, limit.MessageLines), nil
	}
	return tool.Text("Posted to the thread."), nil
}
