//go:build unix && !linux

package upstream

import "syscall"

// setParentDeathSignal does nothing: only Linux has a parent-death
// signal. The process group still lets a stopping toolshelf reap what it
// started.
func setParentDeathSignal(*syscall.SysProcAttr) {}
