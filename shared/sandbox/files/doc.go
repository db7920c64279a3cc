// Package files holds the sandbox's file tools that run inside sandboxd
// itself: read, glob and list. Each tool is one file beside its model-facing
// description (read.go and read.txt, …).
//
// Security boundary: every path goes through sandbox.Roots.Resolve and every
// access through the os.Root it returns, so neither "..", a symbolic link,
// /proc/self/root nor a link swapped after the check leads outside the roots.
// A hard link inside a root is a real file of that root and is read like any
// other: the defence there is that sandboxd's user cannot create a hard link
// to a file it could not already read and write (fs.protected_hardlinks, file
// permissions and, for confined processes, Landlock).
package files
