// Package webhook signs and verifies agentsfleet's webhook deliveries and
// completion callbacks (DESIGN.md §11).
//
// A delivery carries two headers:
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
// anything about the secret. Comparisons are constant-time.
package webhook
