//go:build !unix

package main

import "os"

// processGone reports whether no process has the id pid (a serve that
// was killed without removing its note). On Windows, finding a process
// opens it, which fails once it is gone.
func processGone(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return true
	}
	p.Release()
	return false
}
