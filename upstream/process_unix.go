//go:build unix

package upstream

import (
	"os/exec"
	"syscall"
)

// setProcessGroup starts the command in its own process group, so that
// stopping it also stops what it started (npm wrappers, node launching a
// native binary, as @azure/mcp does).
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
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
