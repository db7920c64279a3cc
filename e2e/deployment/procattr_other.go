//go:build !linux

package deployment

import "syscall"

// procAttr puts a container's or a sandbox's process in a group of its
// own, which Kill signals as a whole. Only Linux has a parent-death
// signal; the harness runs where sandboxd does, on Linux.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
