// Package scripted provides a model.Model that replays a script instead of
// calling a provider (AGENTSFLEET_MODEL_PROVIDER=scripted): the model
// behind `make dev` demos, `agentsfleet run` without a model configured,
// and the runner's tests, which need answers they can predict. It calls no
// API and reads no environment variable; Load, Parse and Default make one.
// Example scripts are in examples/scripts/.
//
// # Scripts
//
// A script is a TOML file (JSON when its name ends in .json) holding a list
// of turns. Each turn is one model answer: text, tool calls, or both.
//
//	description = "what the script is for"   # optional, not read
//
//	[[turn]]                                 # turn 1
//	text = "Let me look around."
//
//	[[turn.tool_call]]
//	name = "list"
//	arguments = { path = "." }               # a TOML table …
//
//	[[turn.tool_call]]
//	name = "bash"
//	arguments = '{"command": "ls | head"}'   # … or a string of a JSON object
//
//	[[turn]]                                 # turn 2
//	text = "I found:\n{{last_output}}"
//
// The keys of a turn:
//
//   - text: the answer's text. Optional when the turn has tool calls.
//   - tool_call: the tool calls, in order, each with name (1 to 64 letters,
//     digits, _ or -) and arguments (optional, {} when left out): a table,
//     or a string holding a JSON object. Also written inline:
//     tool_call = [{ name = "list", arguments = { path = "." } }].
//   - stop: "max_tokens" or "other", for an answer without tool calls that
//     should stop for that reason (to test how the runner takes a cut
//     answer or a refusal). Otherwise the stop reason is model.StopToolUse
//     when the answer has tool calls and model.StopEndTurn when not.
//   - alternative: answers given instead of the turn's own; see below.
//
// The same script in JSON:
//
//	{"turn": [
//	  {"text": "Let me look around.",
//	   "tool_call": [{"name": "list", "arguments": {"path": "."}},
//	                 {"name": "bash", "arguments": "{\"command\": \"ls | head\"}"}]},
//	  {"text": "I found:\n{{last_output}}"}
//	]}
//
// # Which turn answers
//
// Converse answers with turn N+1, N being the number of assistant messages
// in the request's conversation (Request.Messages). The Model keeps no
// position of its own: two runs sharing it each get their own turns, a run
// resumed by another invocation (or another process) gets the turn its
// conversation has reached, and a retried request gets the same answer
// again. After the last turn, Converse returns a *model.Error (Provider
// "scripted", not Retryable) saying that the script has no turn N and how
// many it has. It never answers with an empty message: a turn whose text
// is only placeholders with nothing to fill them, and no tool calls, is
// also such an error.
//
// # Alternatives
//
// A turn may offer alternatives, each with one or both of these conditions
// and an answer of its own (text, tool_call, stop):
//
//   - when_last_error = true: the latest tool results include an error
//     (false: none of them is an error).
//   - when_output_contains = "text": {{last_output}} contains the text.
//
// The first alternative, in the file's order, whose conditions all hold
// answers; when none does, the turn's own answer does. Alternatives stay
// in the turn's place: whichever answers, the next call gets the next
// turn. Write a turn's own keys and tool calls before its alternatives:
//
//	[[turn]]
//	text = "The listing:\n{{last_output}}"
//
//	[[turn.alternative]]
//	when_last_error = true
//	text = "list failed; trying bash."
//
//	[[turn.alternative.tool_call]]
//	name = "bash"
//	arguments = { command = "ls | head" }
//
// # Placeholders
//
// Text and every string in the arguments (at any depth; not the keys, not
// the tool names, not when_output_contains) may hold placeholders, filled
// in from the conversation each time the turn answers:
//
//   - {{input}}: the text of the first user message: the run's input.
//   - {{last_output}}: the output of the last tool result in the
//     conversation.
//   - {{last_error}}: the output of the last failed result among the
//     latest tool results (those of the last message that carries any);
//     empty when none of them failed.
//   - {{output "TOOL"}}: the output of the latest result of a call to the
//     tool named TOOL.
//   - {{session_id}}: N of the latest "Process running with session ID N"
//     in a tool result (exec_command's and write_stdin's), to drive a
//     session with write_stdin; it is a string of digits, which
//     write_stdin's session_id accepts.
//   - {{child_id}}: the latest "child_id" in a tool result (the child a
//     spawn_agent, delegate_agent or wait_agent answered about), to wait
//     for, inspect or interrupt it.
//   - {{last_image}}: the last image a tool result of the conversation
//     holds (a screenshot), described as "1280×800 image/png, 86016 bytes,
//     sha256 <hex>", so that a script or a test sees which picture the
//     model was given; empty when none holds one.
//   - {{"text"}}: the quoted text itself, so {{"{{"}} writes a literal
//     "{{".
//
// Spaces inside the braces are allowed ({{ input }}). A placeholder with
// nothing to read is empty. In arguments, a filled-in value stays one JSON
// string, escaped as JSON wants, whatever it holds; an argument string of
// a JSON-string arguments value is filled in after the JSON is decoded.
// Write a text holding double quotes, as {{output "list"}} does, as a TOML
// literal string, between single quotes (three of them for several
// lines), where a double quote needs no backslash.
//
// # Errors when loading
//
// Load and Parse return a *ParseError naming the file and the line for:
// TOML or JSON that does not parse; an unknown key; a value of the wrong
// type; a turn or an alternative with neither text nor tool calls; an
// alternative without a condition; a tool name that is not one; arguments
// that are not a JSON object; a stop other than max_tokens or other (or on
// an answer with tool calls); an unknown or malformed placeholder; and a
// placeholder or condition that can never have a value: {{last_output}},
// {{last_error}} or a condition in a turn with no earlier turn calling a
// tool, or {{output "TOOL"}} with no earlier turn calling TOOL.
//
// # Streaming and usage
//
// The answer's text goes to Request.OnText in at most four chunks, each
// ending after white space or at the end of the text, which join to the
// whole text. A tool result image without its data (model.Image.Check)
// is refused, as every provider refuses it. Usage is an estimate of
// ceil(bytes/4) tokens: input tokens from the request's system prompt, its
// messages' text, tool call names and arguments and tool result outputs
// (an image counting as width × height / 750 tokens, as Anthropic counts
// one), and its tools' names,
// descriptions and schemas; output tokens from the answer's text and its
// tool calls' names and arguments. A budget can so be tested with
// predictable numbers.
//
// Tool call ids are "call_<turn>_<index>", both counted from 1: the second
// call of turn 3 is call_3_2.
//
// # The demo script
//
// Default returns the model for demo.toml, embedded from this package (the
// same file is examples/scripts/demo.toml). It lists the workdir ("."),
// reads the first lines of README.md when the listing shows one, or tries
// `ls -p | head -n 20` with bash when list fails, then answers with what it
// found, says that it is the scripted demo model, and how to configure a
// real one (AGENTSFLEET_MODEL_PROVIDER=bedrock, anthropic or openai, with
// AGENTSFLEET_MODEL).
package scripted
