//go:build linux || darwin || freebsd || netbsd || openbsd

package main

import (
	"golang.org/x/sys/unix"
)

// withoutEcho shows prompt and runs read with the terminal on fd not
// echoing (a password prompt); ok is false when fd is not a terminal, and
// neither runs.
func withoutEcho(fd int, prompt func(), read func() (string, error)) (s string, ok bool, err error) {
	old, err := unix.IoctlGetTermios(fd, ioctlGetTermios)
	if err != nil {
		return "", false, nil // not a terminal
	}
	prompt()
	quiet := *old
	quiet.Lflag &^= unix.ECHO
	if err := unix.IoctlSetTermios(fd, ioctlSetTermios, &quiet); err != nil {
		return "", true, err
	}
	defer unix.IoctlSetTermios(fd, ioctlSetTermios, old)
	s, err = read()
	return s, true, err
}
