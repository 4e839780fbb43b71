//go:build unix && !linux

package launcher

import "syscall"

// setParentDeathSignal does nothing: only Linux has a parent-death
// signal. The process group still lets a stopping toolshelf reap what it
// started.
func setParentDeathSignal(*syscall.SysProcAttr) {}

// setPIDNamespace does nothing: PID namespaces are Linux's. A daemon a
// server detaches outlives it here.
func setPIDNamespace(*syscall.SysProcAttr) {}

func namespaceRefused(*syscall.SysProcAttr, error) bool { return false }

// NoPIDNamespaces: PID namespaces are Linux's.
func NoPIDNamespaces() bool { return true }
