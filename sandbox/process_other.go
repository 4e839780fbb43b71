//go:build !linux

package sandbox

import "syscall"

// setParentDeathSignal does nothing where the kernel has no such signal:
// the parent kills the child when a program ends.
func setParentDeathSignal(*syscall.SysProcAttr) {}
