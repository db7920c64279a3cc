// Package webhook signs and verifies agentsfleet's webhook deliveries and
// completion callbacks (DESIGN.md §11).
//
// A webhook delivery carries two headers:
//
//	X-Agentsfleet-Timestamp: 1767225600
//	X-Agentsfleet-Signature: v1=<hex of HMAC-SHA256(secret, timestamp + "." + body)>
//
// The timestamp is Unix seconds in decimal, without sign or leading zeros;
// the HMAC key is the fleet's webhook secret exactly as it was shown; the
// signed message is the timestamp header's text, a full stop and the raw
// body bytes. The signature header may carry several comma-separated
// values, so that a sender rotating its secret can sign with the old and
// the new one for a while; Verify accepts the delivery when any v1 value
// matches, ignores values of other schemes (a later v2 can be added
// without breaking today's receivers) and reads at most MaxSignatures.
//
// Verify refuses a delivery whose timestamp is more than Tolerance (5
// minutes) from now in either direction. It does not remember deliveries:
// within the window a captured delivery verifies again, so the receiver
// records the signature Verify returns (store.RecordDelivery) and refuses
// one seen before.
//
// Every error Verify returns matches fault.HookUnauthorized (401 at the
// edge) and one of ErrMissing, ErrMalformed, ErrStale and ErrSignature,
// which say what was wrong in terms a sender can act on without revealing
// anything about the secret. Comparisons are constant-time. Parse does
// every check that needs no secret, so that a receiver refuses an unsigned,
// malformed or stale delivery before it reads anything.
//
// # Completion callbacks
//
// A run's completion callback (shared/callback) is signed in the same
// format with a key and a header of its own, so that a callback received
// can never be replayed as a webhook, nor a webhook as a callback:
//
//	X-Agentsfleet-Timestamp: 1767225600
//	X-Agentsfleet-Callback-Signature: v1=<hex of HMAC-SHA256(callback key, timestamp + "." + body)>
//
// The callback key is CallbackKey(secret), the hex of
// HMAC-SHA256(secret, "agentsfleet callback key v1"): derived, so there is
// no second secret to keep, and one-way, so a receiver given only the
// callback key cannot sign webhooks. VerifyCallback checks it; Verify never
// accepts a callback (no SignatureHeader, and a signature moved there is
// made with another key), and VerifyCallback never a webhook.
package webhook
