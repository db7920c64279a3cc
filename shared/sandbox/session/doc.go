// Package session implements exec_command and write_stdin, the sandbox
// tools that start a process and drive it across calls, with the interface
// of OpenAI Codex's unified exec: the same parameter names, yield and
// output-token limits, session ids and output format.
//
// A Manager owns the sessions. They live in sandboxd, not in the runner, so
// a session outlives the HTTP client that started it. Each session is a
// process group started through confine (its own session; with tty, a
// pseudo-terminal as its controlling terminal), whose output a goroutine
// collects into a bounded head-and-tail buffer.
//
// Security boundary: the processes are confined by confine exactly as the
// bash tool's are; this package adds only fixed environment variables
// (TERM, PAGER, GIT_PAGER, NO_COLOR) and a working directory checked
// against sandbox.Roots. Killing a session kills its whole process group;
// a process that leaves the group (setsid) escapes that kill, not the
// confinement.
package session
