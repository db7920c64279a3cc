// Package shell holds the sandbox tools that run programs: bash (/bin/sh -c)
// and grep (rg, or grep -rnE where the image has no rg). Each tool is one
// file beside its model-facing description.
//
// Security boundary: every process is made by confine.Policy.Command and
// started by confine.Start (a warm trampoline when it can), so
// it runs confined (own session and process group, scrubbed environment,
// unprivileged uid when sandboxd is root, and whatever confine adds:
// seccomp, Landlock, rlimits), and confine.KillGroup ends it and every
// descendant still in its process group. grep checks its path with
// sandbox.Roots.Resolve before it starts; what the confined process itself
// may reach afterwards is confine's to bound.
package shell
