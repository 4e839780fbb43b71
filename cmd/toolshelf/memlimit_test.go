package main

import (
	"context"
	"errors"
	"math"
	"runtime"
	"runtime/debug"
	"testing"
)

// Once the catalog is in memory, serve collects at GOGC 400 under a soft
// limit serveHeadroom above the live heap; before, and where the user set
// GOGC or GOMEMLIMIT, it leaves the collector alone. (Not parallel: the
// collector's settings are the process's.)
func TestServeFollowsTheLiveHeap(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(math.MaxInt64))
	gcPercent := func() int { p := debug.SetGCPercent(100); debug.SetGCPercent(p); return p }
	limit := func() int64 { return debug.SetMemoryLimit(-1) }
	done, cancel := context.WithCancel(context.Background())
	cancel() // one setting, not the refreshes
	follow := func(vars map[string]string, ready error) {
		t.Helper()
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		followLiveHeap(done, &env{getenv: func(k string) string { return vars[k] }}, func(context.Context) error { return ready })
	}

	follow(nil, errors.New("the servers never came up"))
	if gcPercent() != 100 || limit() != math.MaxInt64 {
		t.Errorf("before the catalog is in memory: GOGC %d, limit %d; want the defaults", gcPercent(), limit())
	}

	live := make([]byte, 64<<20) // a catalog
	for i := range live {
		live[i] = byte(i)
	}
	follow(nil, nil)
	got, held := limit(), int64(len(live))
	if gcPercent() != serveGCPercent {
		t.Errorf("GOGC %d once serving, want %d", gcPercent(), serveGCPercent)
	}
	if got < held+serveHeadroom || got > held+serveHeadroom+64<<20 {
		t.Errorf("soft limit %d MiB over a live heap of at least %d MiB, want %d MiB above it (and not much more)", got>>20, held>>20, serveHeadroom>>20)
	}
	runtime.KeepAlive(live)

	follow(map[string]string{"GOGC": "50", "GOMEMLIMIT": "1GiB"}, nil)
	if gcPercent() != 100 || limit() != math.MaxInt64 {
		t.Errorf("with GOGC and GOMEMLIMIT set: GOGC %d, limit %d; want them left to the runtime", gcPercent(), limit())
	}
}
