//go:build !linux

package emulator

import "syscall"

// procAttr puts moto in a process group of its own, which Stop signals as a
// whole. Only Linux has a parent-death signal: elsewhere a moto whose starter
// is killed before Stop keeps running until it is ended by hand.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Setpgid: true}
}
