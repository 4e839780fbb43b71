// Package testenv holds what toolshelf's tests share about the machine
// they run on: how long to wait, and whether the npm packages and Node
// that the integration tests drive are installed.
//
// Every deadline in a test is a product default (a server's start
// timeout, a wait for servers still connecting) scaled by one setting,
// $TOOLSHELF_TEST_SCALE, so that a loaded machine needs one number
// changed, not every test. Unset, the scale follows the machine's load:
// the one-minute load average per core when a test binary starts (at
// least 1), so that eight busy loops on two cores give node servers the
// four times longer they take to start. A deadline that passes is
// reported as a timeout that names what was waited for and for how long.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// ScaleEnv names the environment variable that scales every deadline.
const ScaleEnv = "TOOLSHELF_TEST_SCALE"

// Scale returns $TOOLSHELF_TEST_SCALE when it is a positive number, else
// the machine's load per core (at least 1), read once.
func Scale() float64 { return scale() }

var scale = sync.OnceValue(func() float64 {
	if f, err := strconv.ParseFloat(os.Getenv(ScaleEnv), 64); err == nil && f > 0 {
		return f
	}
	return max(1, loadPerCore())
})

// loadPerCore is the one-minute load average over the cores Go may use,
// or 0 where /proc/loadavg is not there.
func loadPerCore() float64 {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return 0
	}
	fields := strings.Fields(string(b))
	if len(fields) == 0 {
		return 0
	}
	load, _ := strconv.ParseFloat(fields[0], 64)
	return load / float64(runtime.GOMAXPROCS(0))
}

// Timeout scales a product default for a test.
func Timeout(d time.Duration) time.Duration {
	return time.Duration(float64(d) * Scale())
}

// Eventually polls cond until it holds, or fails the test with a timeout
// naming what after Timeout(wait).
func Eventually(t testing.TB, wait time.Duration, what string, cond func() bool) {
	t.Helper()
	d := Timeout(wait)
	deadline := time.Now().Add(d)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s (scale with $%s)", d, what, ScaleEnv)
		}
		<-tick.C
	}
}

// Root returns the module's root folder, from any package's test.
func Root(t testing.TB) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("testenv: no go.mod above the test's folder")
		}
		dir = parent
	}
}

// RequireNPM skips the test unless the npm packages of each folder
// (relative to the module root) are installed, and fails it instead on
// CI, where scripts/test.sh installs them. It also needs node on PATH.
func RequireNPM(t testing.TB, dirs ...string) {
	t.Helper()
	missing := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	if _, err := exec.LookPath("node"); err != nil {
		missing("node is not on PATH")
	}
	root := Root(t)
	for _, dir := range dirs {
		if _, err := os.Stat(filepath.Join(root, dir, "node_modules", ".package-lock.json")); err != nil {
			missing("%s is not installed: run 'npm ci' there (scripts/test.sh does)", dir)
		}
	}
}

// Dataset returns the folder of a shared labelled dataset
// (../shared/datasets/NAME beside the checkout). Where it is missing the
// test is skipped, except in CI (CI set), where the datasets are always
// beside the checkout and a missing one is a failure: a quality floor
// that skips there guards nothing.
func Dataset(t testing.TB, name string) string {
	t.Helper()
	dir := filepath.Join(filepath.Dir(Root(t)), "shared", "datasets", name)
	if _, err := os.Stat(filepath.Join(dir, "queries.jsonl")); err != nil {
		msg := fmt.Sprintf("dataset %s not found beside the checkout: %v", name, err)
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	return dir
}

// Chromium returns the path of Debian's chromium, which the browser
// tests drive headless; without it they skip, or fail in CI, where
// .ci/run installs it.
func Chromium(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on PATH: the browser tests need Debian's chromium (apt-get install chromium)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// Buffer is a strings.Builder that a process's output or a logger's
// goroutines write while a test reads it.
type Buffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// String returns what was written so far.
func (l *Buffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}
