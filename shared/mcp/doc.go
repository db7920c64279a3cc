// Package mcp speaks the Model Context Protocol to a fleet's remote MCP
// servers ([[x-agentsfleet.mcp]]) over streamable HTTP, with the official
// Go SDK (github.com/modelcontextprotocol/go-sdk): List a server's tools,
// Call one. Each operation is one short session (connect, initialize, the
// request, close), because the webtools function that runs it keeps no
// state between invocations.
//
// The package does no egress policy of its own: the caller hands it the
// *http.Client to use, and that client is the security boundary. The
// webtools function (package web) passes one whose transport dials through
// the egress dialer, checks every request's host against the fleet's
// network host list and fills the server's «secret:NAME» headers only
// toward the server's own host. Nothing here reads a secret.
//
// sandboxd links it too, for the stdio servers it starts in the sandbox
// (ListSession, CallSession over the process's standard input and output).
//
// Of the Lambda functions, only webtools links this package (and the SDK): the api,
// slack and schedule functions must not (functions/coldstart checks it).
package mcp
