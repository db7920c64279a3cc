//go:build !linux

package confine

// On any other system the package is this file and doc.go, and it does not
// build: the untyped string below cannot be an int, so the compiler's error
// (from go build and go vet alike) prints the sentence instead of naming
// identifiers that the Linux files declare.
var _ int = "package confine builds only for Linux: sandboxd's confinement (seccomp, Landlock, process groups) needs Linux; the cgo-free packages (functions/..., shared/tool, shared/fleet, shared/store, shared/fault, ...) build anywhere"
