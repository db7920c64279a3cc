// Package slack is agentsfleet's door from Slack (DESIGN.md §2, §7): the
// Events API endpoint (POST /slack/events) and the interactivity endpoint
// (POST /slack/interactivity), as one http.Handler for the slack λ behind
// API Gateway (HandleGateway) and for `agentsfleet dev` (ServeHTTP).
// Function is the slack λ's whole handler, in Lambda and in `agentsfleet
// dev` alike: that door, and the runner's posts (shared/slack/post), from
// the settings (FromEnv).
//
// The security boundary is Verify: every request is checked against the
// app's signing secret (X-Slack-Signature, HMAC-SHA256 of
// "v0:timestamp:body", a 5-minute window) before its body is parsed or
// anything is read or written. What passes is Slack's word, and what it
// carries (text, user and channel ids, a Stop button's run id) is trusted
// as far as Slack vouches for it: a Stop button stops only the run of the
// thread it was clicked in.
//
// Who may start and stop runs is the fleet's (fleet.SlackAccess, from its
// current Definition): a person on neither its allow_start list nor in a
// user group on it starts nothing, and only a run's starter and those on
// the stop list may press its Stop; a person refused is told why in one
// message only they see (chat.postEphemeral). User groups are read with
// usergroups.users.list and kept GroupTTL; a group that cannot be read
// refuses.
//
// Events: app_mention, a direct message to the app, and a message in a
// thread a run from Slack already answered in start a run (start.Run,
// source slack, the thread) of the fleet the thread's last run was of, else
// the channel's route (store.PutSlackRoute), else, for a channel but never
// a direct message, the deployment's default fleet; in a thread a run already answered in, the new run continues that
// run's conversation (store.NewRun.Continues). A delivery is acknowledged once the run is recorded and the
// runner's invocation queued (InvocationType Event); the run's work, and
// everything the thread shows of it, happens after. Slack's retries
// (X-Slack-Retry-Num) and concurrent deliveries of one event_id start one
// run: the event_id is the run's idempotency key (scope "slack"). The app's
// own messages and other bots' are ignored.
//
// Events and Slack's Web API are read and called through slack-go
// (github.com/slack-go/slack); this package posts only the short answers of
// the door itself (how to route a channel, that a run was stopped) through
// the Poster it is given. What a run shows in its thread is posted by
// shared/slack/post. A Handler is safe for concurrent use.
package slack
