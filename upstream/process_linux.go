package upstream

import "syscall"

// setParentDeathSignal has the kernel kill the server when toolshelf's
// thread that started it dies. The go runtime never ends a thread that
// has not been locked, so in practice that is when toolshelf dies.
func setParentDeathSignal(a *syscall.SysProcAttr) { a.Pdeathsig = syscall.SIGKILL }
