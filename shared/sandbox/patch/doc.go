// Package patch implements apply_patch, the sandbox tool that edits files
// with a patch in OpenAI Codex's `*** Begin Patch` format, so that models
// trained on Codex use it without friction.
//
// Parse reads the grammar (tolerant of a heredoc or code-fence wrapper and
// of surrounding whitespace, as Codex is); Apply matches every hunk against
// the files and writes the result all or nothing.
//
// Security boundary: every path a patch names is checked by sandbox.Roots
// with write access required, and every read, write, rename and delete goes
// through the os.Root that Roots opened on the writable root holding the
// path. A path outside the writable roots, or a symbolic link leading out of
// them, is refused before anything is read.
//
// Atomicity: see Apply.
package patch
