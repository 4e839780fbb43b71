package sandbox

import "syscall"

// setParentDeathSignal has the kernel kill the child when the thread
// that started it dies, in practice when toolshelf dies.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
