//go:build !unix

package journal

import "os"

// lock is a no-op where flock is missing: a journal folder there must be
// one process's.
func lock(*os.File) error { return nil }

// noFollow: see lock_unix.go.
const noFollow = 0
