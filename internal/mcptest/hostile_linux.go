package mcptest

import (
	"runtime"
	"syscall"
)

// signalCont sends SIGCONT: harmless, but it needs the right to signal.
func signalCont(pid int) error { return syscall.Kill(pid, syscall.SIGCONT) }

// ptraceAttach attaches to a process and detaches again.
func ptraceAttach(pid int) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := syscall.PtraceAttach(pid); err != nil {
		return err
	}
	var ws syscall.WaitStatus
	_, _ = syscall.Wait4(pid, &ws, syscall.WALL, nil)
	return syscall.PtraceDetach(pid)
}
