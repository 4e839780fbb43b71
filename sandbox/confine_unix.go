//go:build unix

package sandbox

import (
	"os"
	"os/exec"
	"runtime"
	"syscall"
	"time"
)

// confine bounds the child process itself, before the program runs: its
// private writable memory, RLIMIT_DATA (heap and stacks: an allocation
// past it fails, and the Go runtime ends the child; RLIMIT_AS would count
// the ~1 GB of address space a Go process reserves without using), its
// CPU time as a backstop to the engine's own watch, no file it may write
// and no core dump. No soft memory limit is set: near one, Go's
// collector would spend the program's CPU time rather than fail.
func confine(l Limits) {
	set := func(resource int, soft, hard uint64) {
		_ = syscall.Setrlimit(resource, &syscall.Rlimit{Cur: soft, Max: hard})
	}
	set(syscall.RLIMIT_DATA, uint64(l.Memory), uint64(l.Memory))
	cpu := uint64(l.CPU/time.Second) + 2
	set(syscall.RLIMIT_CPU, cpu, cpu+1)
	set(syscall.RLIMIT_FSIZE, 0, 0)
	set(syscall.RLIMIT_CORE, 0, 0)
}

// cpuTime is the CPU time the process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// cpuSignal reports whether the kernel ended the child for its CPU time.
func cpuSignal(exit *exec.ExitError) bool {
	ws, ok := exit.Sys().(syscall.WaitStatus)
	return ok && ws.Signaled() && ws.Signal() == syscall.SIGXCPU
}

// peakMemory is the most memory the child had resident.
func peakMemory(ps *os.ProcessState) int64 {
	ru, ok := ps.SysUsage().(*syscall.Rusage)
	if !ok {
		return 0
	}
	if runtime.GOOS == "darwin" {
		return int64(ru.Maxrss) // bytes there
	}
	return int64(ru.Maxrss) << 10 // KiB
}
