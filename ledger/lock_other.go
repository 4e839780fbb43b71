//go:build !unix

package ledger

import "os"

// lockFile is a no-op where flock is missing: there a ledger file's
// budgets hold within one process.
func lockFile(*os.File) error { return nil }

func unlockFile(*os.File) {}
