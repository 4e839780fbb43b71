//go:build unix

package main

import (
	"errors"
	"syscall"
)

// processGone reports whether no process has the id pid (a serve that
// was killed without removing its note).
func processGone(pid int) bool {
	return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
}
