//go:build !linux

package main

import "golang.org/x/sys/unix"

// getTermios is the ioctl request that reads a terminal's settings (macOS
// and the BSDs name it TIOCGETA).
const getTermios = unix.TIOCGETA
