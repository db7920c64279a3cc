// Package web implements agentsfleet's five web tools — webfetch,
// websearch, web_fetch, http_request and pushover — as they run in the
// webtools λ, the only part of agentsfleet that sends agent-directed
// traffic to the internet and the only one that reads fleet secrets (AWS
// Secrets Manager, through shared/secret).
//
// Each tool is a tool.Tool embedding its contract from package spec (Specs
// lists them, no network needed): made by tool.Define from its arguments
// struct, with the figures its description states taken from the
// constants the code enforces, and where it runs and the scope it needs.
//
// A Service runs one tool call (Request → tool.Result) under three
// boundaries:
//
//   - The egress policy (package egress): every connection, including each
//     redirect hop, goes to an address checked at dial time — public
//     addresses only; ports 80 and 443 only for webfetch and websearch.
//   - The fleet's network host list (fleet.HostList): web_fetch, http_request and
//     pushover reach only hosts on it, checked on the first request and on
//     every redirect hop. web_fetch and pushover also require https.
//   - The credential firewall: «secret:NAME» references are filled only by
//     http_request (URL, header values, body) and pushover (its token and
//     user key), only after the destination passed the checks above; a
//     request that references a secret and goes to a host not on the list
//     is refused before anything is read or sent. Every result, of every
//     tool, is screened for every secret of the fleet (and common encodings
//     of each, see secret.Set.Redact) before it is returned, so a value a
//     server reflects comes back as «secret:NAME».
//
// What the boundaries do not cover: a host on the list may forward what it
// receives; webfetch and websearch can carry anything the model writes into
// a URL or query (the spec's "web tools can send data out").
//
// The fleet's host list and secrets reach a tool only through Service.Call,
// in the context of the tool's Run. A tool run any other way has neither:
// it reaches no listed host and fills no reference.
//
// Results are tool.Result: text plus an error flag. A mistake the model can
// fix, a refusal, or a failed request is an error Result; a Go error means
// the environment is broken (for example Secrets Manager is unreachable).
package web
