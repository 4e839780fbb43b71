//go:build unix

package journal

import (
	"os"
	"syscall"
)

// lock takes f's lock, without waiting: a journal file is one live
// process's.
func lock(f *os.File) error {
	return syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
}

// noFollow: a journal file left behind is opened only if it is one, not
// a link planted in its name.
const noFollow = syscall.O_NOFOLLOW
