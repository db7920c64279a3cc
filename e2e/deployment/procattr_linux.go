package deployment

import "syscall"

// procAttr puts a container's or a sandbox's process in a group of its
// own, which Kill signals as a whole, and kills it with the harness.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
