//go:build linux

package sandbox

import "golang.org/x/sys/unix"

// linkFree reports whether abs names something that exists through no
// symbolic link at all, in one system call: openat2 refuses to follow any
// link on the way (RESOLVE_NO_SYMLINKS) and O_PATH opens nothing for
// reading. False means "cannot tell so cheaply" (a link, a missing or
// unreadable component, an old kernel): linkTarget then walks the path.
func linkFree(abs string) bool {
	fd, err := unix.Openat2(unix.AT_FDCWD, abs, &unix.OpenHow{
		Flags:   unix.O_PATH | unix.O_CLOEXEC,
		Resolve: unix.RESOLVE_NO_SYMLINKS,
	})
	if err != nil {
		return false
	}
	unix.Close(fd)
	return true
}
