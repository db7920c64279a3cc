// Package token makes the sandboxes' bearer tokens from a key only the
// runner holds, so that nothing recorded about a sandbox — the warm pool's
// records in the table, a task's tags — is enough to call its tools.
//
// A sandbox is named by a nonce: 128 random bits, made when it is started
// and recorded with it. Its token is Key.Token(nonce), the hex of
// HMAC-SHA256(key, Info || 0x00 || nonce): 64 characters, 256 bits, the
// strength pin needs (the token is also the seed of the sandbox's TLS key).
// The launcher gives the token to the sandbox when it starts it (launch/ecs:
// the task's container environment) and derives it again from the nonce
// whenever another invocation connects to the sandbox, from the records
// alone. It is stdlib-only.
//
// # Security boundary
//
// What it stops: a reader of the table (the api, slack and schedule
// functions may read most of it) learns each sandbox's nonce and address
// but not its token; without the key, HMAC-SHA256 gives no way from
// nonces (or from tokens of other sandboxes) to a token. A sandbox's
// token says nothing of the key or of another sandbox's token, so a
// sandbox that leaks its own token (its process is the model's to drive)
// gives away itself alone.
//
// What it does not stop: whoever holds the key makes every token, past
// and future — keep it where only the runner reads it (the stack's
// Secrets Manager secret; rotating it orphans the live sandboxes, which
// the pool then replaces). The token still travels to the sandbox in the
// ECS RunTask request, so whoever may call ecs:DescribeTasks on the
// cluster, or reads RunTask's request parameters (CloudTrail), reads the
// token of a task while it runs. The nonce is not secret and need not be.
package token
