// Package server is sandboxd: the HTTP API through which the runner calls the
// sandbox tools, the `call` entry point that runs one tool from the command
// line with the same code, and the registry of tools (Tools) both use.
//
// The API, whose paths, headers, limits and shapes are package wire's (and
// whose client is package client):
//
//	GET  /healthz           → 200, no token needed
//	POST /v1/tools/{name}   Authorization: Bearer TOKEN, optional Idempotency-Key,
//	                        optional X-Agentsfleet-Tool-Timeout (the fleet's
//	                        tool timeout, for this call, over --timeout),
//	                        body: the tool's JSON arguments
//	                        → 200 {"output": "…", "is_error": false}
//	                        → 401 missing or wrong token, 404 unknown tool,
//	                          400 body not a JSON object, a bad key or a bad
//	                          tool timeout, 422
//	                          Idempotency-Key reused for a different call,
//	                          413 body too large, 500 the tool failed inside
//	                          sandboxd
//
// Every error status has the body {"error": "…"} with words for the caller,
// never an internal error's text.
//
// Security boundary: the token is the only credential. sandboxd takes it
// from SANDBOXD_TOKEN (wire.TokenEnv), removes it from its environment (and
// overwrites it in the memory /proc/<pid>/environ shows), compares it in
// constant time, and marks itself non-dumpable so processes of its own user
// cannot read its memory. Plain HTTP is for loopback and tests; in AWS the same API is
// served over TLS: --tls-from-token (a key derived from the token, which the
// runner pins; package pin) or --tls-cert and --tls-key. Plain HTTP is
// refused off loopback unless --plain-http says the network is trusted.
package server
