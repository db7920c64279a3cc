package runner

import (
	"context"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/callback"
	"github.com/agentsfleet/agentsfleet/shared/run"
)

// deliverCallback sends the ended run's result to its callback_url, signed
// with the fleet's webhook secret, retried as Config.Callbacks says. A
// delivery that fails in the end is logged: the run's result stays in the
// API either way. Each attempt goes in the run's egress log.
func (x *execution) deliverCallback(ctx context.Context) {
	if x.run.CallbackURL == "" || x.st.Ended == nil {
		return
	}
	log := x.r.log.With("run_id", x.run.ID, "callback", callback.Redacted(x.run.CallbackURL))
	if x.r.cfg.Callbacks == nil {
		log.Warn("the run has a callback URL and this runner sends no callbacks")
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), callback.DefaultMaxElapsed+time.Minute)
	defer cancel()
	secret, err := x.r.cfg.Store.WebhookSecret(ctx, x.run.Fleet)
	if err != nil {
		log.Warn("no webhook secret to sign the callback with", "error", err)
		return
	}
	res := callback.Result{RunID: x.run.ID, Fleet: x.run.Fleet, Source: string(x.run.Source), Result: x.st.Ended.Result}
	var sent []run.Egress
	err = x.r.cfg.Callbacks.DeliverRecorded(ctx, x.run.CallbackURL, secret, res, func(e run.Egress) { sent = append(sent, e) })
	if rerr := x.r.cfg.Store.RecordEgress(ctx, x.run.ID, sent); rerr != nil {
		log.Error("the callback's egress log was not written", "error", rerr)
	}
	if err != nil {
		log.Warn("the callback was not delivered", "error", err)
		return
	}
	log.Info("delivered the callback")
}
