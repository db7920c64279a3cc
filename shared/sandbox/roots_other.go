//go:build !linux

package sandbox

// linkFree is the cheap check of linkTarget where the kernel has none:
// linkTarget always walks the path.
func linkFree(string) bool { return false }
