//go:build unix

package main

import "syscall"

// noFollow makes opening a file toolshelf keeps (the kept admin token)
// fail on a symbolic link, which someone could have planted in its stead.
const noFollow = syscall.O_NOFOLLOW
