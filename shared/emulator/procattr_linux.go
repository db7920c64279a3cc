package emulator

import "syscall"

// procAttr puts moto in a process group of its own, which Stop signals as a
// whole, and has the kernel send it SIGTERM when the process that started it
// dies, so that a test binary killed before Stop leaves no moto behind.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGTERM}
}
