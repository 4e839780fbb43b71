package main

import "syscall"

// prSetDumpable is PR_SET_DUMPABLE of <linux/prctl.h>.
const prSetDumpable = 4

// hideFromSameUser makes the process non-dumpable: its /proc entries
// (environ, mem, fd/, maps, root) then belong to root and no process of
// the same user, an uncontained server among them, can read them or
// ptrace it. The command line stays readable to all, as the kernel keeps
// it; serve warns about secrets given there.
func hideFromSameUser() error {
	_, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetDumpable, 0, 0)
	if errno != 0 {
		return errno
	}
	return nil
}
