//go:build unix

package launcher

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the command in its own process group, so that
// stopping it also stops what it started (npm wrappers, node launching a
// native binary, as @azure/mcp does), in a PID namespace of its own where
// the system allows one, so that not even a daemon it detached outlives
// it (see setPIDNamespace), and, where the system has one, with a
// parent-death signal, so that it does not outlive a toolshelf that was
// killed without a chance to stop it (SIGKILL, a client that kills its
// servers).
// A contained server (jailed) gets its namespaces from bwrap.
func setProcessGroup(cmd *exec.Cmd, jailed bool) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if !jailed {
		setPIDNamespace(cmd.SysProcAttr)
	}
	setParentDeathSignal(cmd.SysProcAttr)
}

// signalGroup sends SIGTERM, or SIGKILL when kill is set, to the command's
// process group.
func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process == nil {
		return
	}
	sig := syscall.SIGTERM
	if kill {
		sig = syscall.SIGKILL
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
