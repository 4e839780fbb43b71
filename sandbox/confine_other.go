//go:build !unix

package sandbox

import (
	"os"
	"os/exec"
	"runtime/debug"
	"time"
)

var started = time.Now()

// confine bounds what the platform lets a process bound of itself: only
// the heap, softly. The CPU watch uses the time since start.
func confine(l Limits) { debug.SetMemoryLimit(l.Memory) }

func cpuTime() time.Duration { return time.Since(started) }

func cpuSignal(*exec.ExitError) bool { return false }

func peakMemory(*os.ProcessState) int64 { return 0 }
