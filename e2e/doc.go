// Package e2e holds the test of the whole product on one machine: it
// starts `agentsfleet dev` as a process, as a person would, and drives it
// only through its public edges — a signed Slack event on its port, the
// HTTP API, the CLI — with local fakes of what lies outside: an
// OpenAI-compatible model server, the Slack Web API and a web server.
package e2e
