// Package runner is agentsfleet's agent loop, the runner λ's work: it takes
// a run's lease, asks the model for its next answer, runs the tools it
// asks for where each runs, and commits every step to DynamoDB
// (store.CommitStep) before the next, until the model answers without a
// tool call, the run is cancelled, or its budget is spent.
//
// # Steps
//
// A run's life is a sequence of committed steps, each one transaction:
//
//	step 1   run.started; the input becomes the first message
//	setup    setup.ended, for a Definition with a setup step (setup.go): the
//	         command run in the sandbox before the first model call; a failure
//	         ends the run (setup_failed) at the next step
//	turn     the model's answer and the tool calls it asks for, run (read-only
//	         neighbours at once, at most Config.ToolConcurrency of them, the
//	         rest queued in order) before the commit; the answer, the results,
//	         a tool.call and a tool.result event each (plan.updated for a
//	         plan), the tokens and the calls spent — refused, with nothing
//	         written, when the run was cancelled meanwhile or the budget is
//	         spent; the budget is checked before the calls run, too
//	last     run.ended; then the run moves to its final status
//
// The checkpoint after each step is the whole state (the conversation, the
// plan, the usage), so any invocation goes on from the last committed step.
// The conversation is kept as turns beside it, each step writing the
// messages it added in its own transaction (store.Turn), so that what a
// step writes does not grow with the conversation; the checkpoint names the
// turns, and whatever resumes the agent (a new invocation, a child's, a
// Slack follow-up) reads them back in order.
// A step that was committed never runs again. A turn cut short commits
// nothing, and the next invocation asks the model again; its sandbox calls
// carry an Idempotency-Key made from the run, the step and the call (its
// place, tool and arguments), so that sandboxd answers a call the new
// answer repeats with its first result instead of running it twice.
//
// # Invocations
//
// An invocation holds the run's lease (renewed while it works; a duplicate
// delivery finds it held and does nothing, unless the lease has missed a
// renewal: then its holder died without releasing it, and the invocation
// waits for it to lapse and takes the run over) and, when its deadline comes
// within a step's length, stops starting steps and starts a new invocation
// of itself (invoke.Runner) before it returns: a run outlives Lambda's 15
// minutes. Locally the same call is an in-process goroutine.
//
// # Tools
//
// Only the Definition's allowlist is offered, with each tool's description
// and schema from its contract (shared/toolbox); a Definition naming a tool
// this deployment cannot run fails the run before the first model call.
// Every call is checked against its contract before it is sent: sandbox
// tools go to the run's sandbox (shared/sandbox/launch), web tools to the
// webtools function (shared/invoke) with the fleet's host list and secret
// names, control tools run here (shared/runner/control). Whatever fails
// is an error result the model sees, and the run goes on.
//
// # Secrets
//
// The runner never reads a secret value: only the webtools function reads
// them, and it screens what it returns. A value can still come in from
// outside (a file in the sandbox, a command's output), so each step of a
// fleet with secrets screens its new text — tool arguments and results,
// the plan, the answer, a child's task and answer — in one scrub call
// before its events are committed, posted in the thread or sent as the
// callback, and withholds (replaces by a note saying why) what could not be
// screened (see screen.go). The conversation is kept as the model saw it.
package runner
