package main

import (
	"context"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"time"
)

// serveGCPercent is the garbage collector's target while serving, unless
// GOGC is set. The go-sdk allocates a 32 KB decode buffer for every JSON
// value it unmarshals, about 400 KB per forwarded call, while a small
// gateway's live heap is a few MB: collecting less often takes a third
// off a call's time (docs/benchmarks.md).
const serveGCPercent = 400

// serveHeadroom is the garbage serve's soft memory limit lets build up
// above the live heap before the collector runs. GOGC=400 alone lets
// garbage reach four times what is live: 4 MB requests (the go-sdk
// allocates about 25 bytes per byte of a message decoding it) took the
// gateway to 500 MB, and a catalog of 10,000 tools to 130 MB. A fixed
// room keeps the peak near what is live, whatever the catalog's size;
// 32 MB is some 80 forwarded calls between collections, whose marking
// is mostly of the catalog's pointer-free bytes.
const serveHeadroom = 32 << 20

// limitEvery is how often serve sets its soft limit again from the live
// heap: a limit set once would fall behind a catalog that grows (a server
// that starts later), and the collector would run without end.
const limitEvery = 30 * time.Second

// memoryLimitFor is serve's soft memory limit over a live heap.
func memoryLimitFor(live uint64) int64 { return int64(live) + serveHeadroom }

// liveHeap is the heap the last collection found live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return s[0].Value.Uint64()
}

// followLiveHeap sets serve's collector once the catalog is in memory
// (ready returns nil), and keeps its soft limit serveHeadroom above the
// live heap until ctx is done. Loading and indexing a catalog run at the
// runtime's defaults (GOGC 100, no limit): at GOGC 400 they made five
// times their own size in garbage. GOGC and GOMEMLIMIT, when set, are the
// user's and left alone.
func followLiveHeap(ctx context.Context, e *env, ready func(context.Context) error) {
	if ready(ctx) != nil {
		return
	}
	if e.getenv("GOGC") == "" {
		debug.SetGCPercent(serveGCPercent)
	}
	if e.getenv("GOMEMLIMIT") != "" {
		return
	}
	runtime.GC() // what the catalog and its index hold, not the load's garbage
	t := time.NewTicker(limitEvery)
	defer t.Stop()
	for {
		debug.SetMemoryLimit(memoryLimitFor(liveHeap()))
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
