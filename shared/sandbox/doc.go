// Package sandbox holds the contract shared by the sandbox tools and sandboxd:
// the tool Result the model sees, the Tool interface every tool implements,
// and Roots, the set of directories a fleet's tools may reach. It holds the
// sandbox tools' contracts too (Specs): each one's arguments, description,
// where it runs and the scope it needs, from which the catalog
// (shared/toolbox) is made. It imports nothing of agentsfleet but
// shared/tool, so every λ can read them.
//
// The implementations live beside it: confine runs confined processes,
// files holds read/glob/list, shell holds bash/grep, session holds
// exec_command/write_stdin, patch holds apply_patch, and server is sandboxd's
// HTTP API and its `call` entry point.
//
// Security boundary: Roots decides which paths a tool may name, and opens
// them through os.Root so that neither "..", a symbolic link nor a rename
// race leads outside the root that holds the path. It does not confine
// processes: that is confine's job (Landlock, seccomp, rlimits, uid).
package sandbox
