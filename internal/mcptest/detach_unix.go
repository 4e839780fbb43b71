//go:build unix

package mcptest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
)

// detach starts a grandchild in a session of its own (as a daemonising
// wrapper does) that keeps stdout and stderr open, and exits.
func detach() int {
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), ModeEnv+"=sleep", PIDEnv+"="+os.Getenv(GrandchildEnv))
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Fprintln(os.Stderr, "detached a worker")
	return 0
}
