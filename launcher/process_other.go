//go:build !unix

package launcher

import (
	"os/exec"
	"syscall"
)

func setProcessGroup(*exec.Cmd, bool) {}

// signalGroup kills the process; without process groups, children it
// started may outlive it.
func signalGroup(cmd *exec.Cmd, kill bool) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// namespaceRefused is false: there are no namespaces to refuse here.
func namespaceRefused(*syscall.SysProcAttr, error) bool { return false }

// NoPIDNamespaces: PID namespaces are Linux's.
func NoPIDNamespaces() bool { return true }
