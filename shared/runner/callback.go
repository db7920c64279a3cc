package runner

import (
	"context"
	"time"

	"github.com/agentsfleet/agentsfleet/shared/callback"
)

// deliverCallback sends the ended run's result to its callback_url, signed
// with the fleet's webhook secret, retried as Config.Callbacks says. A
// delivery that fails in the end is logged: the run's result stays in the
// API either way.
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
	if err := x.r.cfg.Callbacks.Deliver(ctx, x.run.CallbackURL, secret, res); err != nil {
		log.Warn("the callback was not delivered", "error", err)
		return
	}
	log.Info("delivered the callback")
}
