//go:build !(linux || darwin || freebsd || netbsd || openbsd)

package main

// withoutEcho: no terminal control here; passwords come from stdin.
func withoutEcho(int, func(), func() (string, error)) (string, bool, error) { return "", false, nil }
