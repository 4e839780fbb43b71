//go:build unix

package mcptest

import (
	"fmt"
	"os"
	"os/exec"
	"syscall"
	"time"
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

// daemonize double-forks a sleeping daemon: a child in a session of its
// own starts the grandchild and exits, so that the grandchild belongs to
// no process of the server's and to no group of its. It returns once the
// grandchild has written its pid.
func daemonize() int {
	if os.Getenv(ModeEnv) == "daemonize" {
		// The middle process.
		cmd := exec.Command(os.Args[0])
		cmd.Env = append(os.Environ(), ModeEnv+"=sleep", PIDEnv+"="+os.Getenv(GrandchildEnv))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		if err := cmd.Start(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), ModeEnv+"=daemonize", PIDEnv+"=")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintln(os.Stderr, err, string(out))
		return 1
	}
	// The grandchild writes its pid as it starts; the server serves once
	// it has, so that the test knows whom to look for.
	f := os.Getenv(GrandchildEnv)
	for deadline := time.Now().Add(time.Minute); f != "" && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(f); err == nil && len(b) > 0 {
			return 0
		}
	}
	if f != "" {
		fmt.Fprintln(os.Stderr, "the daemon did not start")
		return 1
	}
	return 0
}
