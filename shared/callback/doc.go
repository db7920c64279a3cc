// Package callback delivers a run's result to the callback_url the run was
// started with (POST /v1/fleets/{name}/runs, DESIGN.md §11), once the run
// has ended.
//
// A delivery is one JSON Result, POSTed with the callback headers of
// package webhook: X-Agentsfleet-Timestamp and
// X-Agentsfleet-Callback-Signature, signed with the fleet's callback key
// (webhook.CallbackKey of its webhook secret), never as a webhook, so that
// whoever receives a callback cannot replay it to POST /v1/hooks/{fleet}
// to start a run. The receiver verifies it with webhook.VerifyCallback (or
// any HMAC-SHA256 code) and can dedupe on run_id, since a retried delivery
// carries the same body under a fresh timestamp and signature.
//
// # Where it may send
//
// Check is the whole URL policy: https only, no user information in the
// URL, a host that is a name or a public IP address. Every connection then
// goes through an egress.Dialer (package shared/web/egress), which resolves
// the name once, refuses loopback, private, link-local, metadata and the
// other non-public addresses, and connects to exactly the address it
// checked: a callback_url cannot reach the VPC, the metadata service or the
// Lambda runtime, whatever its DNS answers. No proxy from the environment is
// used (it would dial in the Dialer's place), and redirects are not followed:
// a 3xx answer is a failed delivery, not a hop to somewhere unchecked.
//
// The one exception is Config.AllowAddr, the test-only escape hatch of
// package egress (set it from egress.AllowFromEnv or in Go tests): the
// Dialer then admits that one loopback ip:port, and Check admits http URLs
// as well, for httptest servers and `agentsfleet dev`.
//
// # Retries
//
// A network error, a 429 or a 5xx answer is retried with exponential
// backoff and jitter, waiting at least as long as a Retry-After header asks
// (seconds or an HTTP date); any other answer outside 2xx, and a refusal by
// the egress policy, fails at once. Attempts, the total time and the delays
// are bounded by Config, and a cancelled context stops the retries.
package callback
