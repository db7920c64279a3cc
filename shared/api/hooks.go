package api

import (
	"net/http"

	"github.com/agentsfleet/agentsfleet/shared/api/webhook"
	"github.com/agentsfleet/agentsfleet/shared/fault"
	"github.com/agentsfleet/agentsfleet/shared/run/start"
	"github.com/agentsfleet/agentsfleet/shared/store"
)

// hook is POST /v1/hooks/{fleet}: a delivery signed with the fleet's
// webhook secret (DESIGN.md §11) starts a run whose input is the body
// (JSON indented). It is checked before anything else is read or written:
// headers missing or malformed and a timestamp outside the window answer
// 401 before the table is read at all (webhook.Parse needs no secret), so
// that such deliveries cost no read; then a fleet without a secret answers
// 404 (an unknown fleet alike, so that senders learn nothing), a wrong
// signature 401, and a signature seen before 409.
//
// The replay guard is the run's idempotency key (the delivery's canonical
// signature, kept a day, longer than the 5 minutes a signature is valid):
// the run and the guard are one write, so a delivery is never recorded
// without its run, nor run twice.
func (a *API) hook(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	name := r.PathValue("fleet")
	body, err := readBody(r, MaxHookBody)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	delivery, err := webhook.Parse(r.Header, a.cfg.Now())
	if err != nil {
		a.fail(w, r, err)
		return
	}
	secret, err := a.cfg.Store.WebhookSecret(ctx, name)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	sig, err := delivery.Verify(secret, body)
	if err != nil {
		a.fail(w, r, err)
		return
	}
	run, created, err := start.Run(ctx, a.cfg.Store, a.cfg.Invoker, store.NewRun{Fleet: name, Source: store.SourceWebhook,
		Input: prettyInput(body), Idempotency: &store.IdempotencyKey{Scope: "webhook:" + name, Key: sig}})
	if err != nil {
		a.fail(w, r, err)
		return
	}
	if !created {
		a.fail(w, r, fault.New(fault.HookReplayed, "this delivery was received before: it started run %s", run.ID))
		return
	}
	writeJSON(w, http.StatusAccepted, map[string]string{"run_id": run.ID})
}
