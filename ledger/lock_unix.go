//go:build unix

package ledger

import (
	"os"
	"syscall"
)

// lockFile waits for f's lock: the processes that share a ledger file
// take turns to decide.
func lockFile(f *os.File) error { return syscall.Flock(int(f.Fd()), syscall.LOCK_EX) }

func unlockFile(f *os.File) { syscall.Flock(int(f.Fd()), syscall.LOCK_UN) }
