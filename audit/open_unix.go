//go:build unix

package audit

import "syscall"

// noFollow makes opening the log fail on a symbolic link: a link planted
// where the log goes (by a server whose grant holds the folder) would
// have toolshelf append other profiles' calls to a file of its choosing;
// and a FIFO put there makes the open fail rather than wait for a reader.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
