// Package control holds the contracts of the runner's control tools:
// update_plan and message, which talk to the thread that started the run;
// schedule_create, schedule_list, schedule_update, schedule_delete and
// cron_run, which plan the fleet's later runs; and the six child-agent
// tools spawn_agent, delegate_agent, wait_agent, inspect_agent,
// interrupt_agent and list_agents.
//
// Each tool is one file: its argument struct, whose json tags are the
// argument names of the design's public edges, and its tool.Spec, made by
// tool.Define from the struct, the rules the specification fixes and a
// model-facing description embedded from the .txt file beside it. The
// description's figures (8 message lines, 32 schedules, 4 children, …) and
// error codes are rendered from the constants of limit and fault, so the
// model is told exactly what the store enforces.
//
// These tools execute in the runner λ, not in the sandbox or the webtools
// λ. Specs gives the contracts; each tool's implementation is here too,
// beside its contract, registering itself, and acts through what the
// runner provides for the agent calling it (Caller: Plan, Children,
// Schedules, Thread). Tool and Tools give the tools bound to a Caller; one
// without what a tool needs gets it wrapped with tool.Unbuilt, whose Run
// checks the arguments and then answers with an error result saying why
// the tool is not available. So a new control tool is its contract and its
// implementation: the runner sends every call of a tool that runs in the
// runner to Tool, naming none.
//
// Some limits cannot be rules of the argument check, because the check
// counts characters or sees one argument at a time; the tools apply them:
// message's MaxMessageBytes (bytes, not characters),
// update_plan's single in_progress step, schedule_update's "at least one
// change".
//
// The package is cgo-free.
package control
