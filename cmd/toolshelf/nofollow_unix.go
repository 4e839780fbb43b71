//go:build unix

package main

import "syscall"

// noFollow makes opening a file toolshelf keeps (the kept admin token)
// fail on a symbolic link, which someone could have planted in its stead,
// and not wait on a FIFO put there.
const noFollow = syscall.O_NOFOLLOW | syscall.O_NONBLOCK
