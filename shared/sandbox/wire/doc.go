// Package wire is sandboxd's HTTP contract, in one place: the paths, the
// headers, the body limits, the token rules and the shapes of the answers.
// sandboxd (package server) serves it and package client calls it. It is
// cgo-free and imports only the standard library and shared/tool, so that
// a CGO_ENABLED=0 Lambda (the runner) can use it.
//
// The API:
//
//	GET  /healthz           → 200 {"status": "ok"}, no token needed
//	POST /v1/tools/{name}   Authorization: Bearer TOKEN
//	                        Idempotency-Key: KEY (optional)
//	                        X-Agentsfleet-Tool-Timeout: SECONDS (optional)
//	                        body: the tool's arguments, one JSON object
//	                        → 200 {"output": "…", "is_error": false} (a tool.Result)
//	                        → 400 the body is not a JSON object, or a bad Idempotency-Key
//	                          or X-Agentsfleet-Tool-Timeout
//	                        → 401 missing or wrong token
//	                        → 404 unknown tool
//	                        → 413 body larger than MaxBodyBytes
//	                        → 422 Idempotency-Key reused for a different call
//	                        → 500 the tool failed inside sandboxd
//	POST /v1/setup          Authorization: Bearer TOKEN; body SetupRequest
//	                        → 200 SetupResult; 400, 401, 404 (no setup step
//	                          here), 409 (another setup ran), 500 (see setup.go)
//
// A Definition's declared tools run through one tool of sandboxd's own,
// POST /v1/tools/declared with DeclaredArgs (the runner's, offered to no
// model; see DeclaredTool); its stdio MCP servers through two more,
// POST /v1/tools/mcp_stdio_list and /v1/tools/mcp_stdio_call (see
// MCPStdioList).
//
// Every answer is JSON (Content-Type application/json). Every status but
// 200 has the body ErrorBody, {"error": "…"}, whose words are for the
// caller and never an internal error's text. A tool's own failure that the
// model can act on (a missing file, a command that exits 1) is a 200 answer
// with "is_error": true; 500 means sandboxd's environment is broken.
//
// A call with an Idempotency-Key runs once: a retry with the same key and
// the same tool and arguments gets the first call's result (waiting for it
// if it still runs), even from another connection, so a caller that lost
// the answer may retry. The key is then bound to that call: the same key
// with another tool, other arguments or another tool timeout gets 422. A
// call whose tool failed (500) is forgotten, so its retry runs it again.
//
// sandboxd answers every call within the call's tool timeout and a little
// more: the tools that could run longer stop at it. The call's tool
// timeout is the fleet's tool_timeout_seconds, sent in ToolTimeoutHeader
// (1 to 3600 whole seconds; a bad value answers 400). It wins over
// sandboxd's own, shorter or longer, because a pooled sandboxd starts
// before it knows the fleet; without the header a call has sandboxd's own
// (sandboxd --timeout, DefaultToolTimeout when not given). The comment
// above ToolTimeoutHeader states the rule in full.
//
// Security boundary: the bearer token is the only credential; sandboxd
// serve reads it from TokenEnv. Plain HTTP is for loopback and tests; in
// AWS the same API is served over TLS so that the token never crosses a
// network in clear text.
package wire
