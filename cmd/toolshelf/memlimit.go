package main

import (
	"runtime/debug"
	"runtime/metrics"
)

// serveMemoryFloor is the least soft memory limit serve sets, unless
// GOMEMLIMIT is set. GOGC=400 makes serve fast, but lets the heap grow to
// five times what is live: a client sending 4 MiB requests (the go-sdk
// allocates about 25 bytes per byte of a message decoding it) took the
// gateway past 500 MB. Under the limit the collector runs earlier, and
// the gateway stays near the floor (docs/reliability.md).
const serveMemoryFloor = 96 << 20

// setMemoryLimit sets serve's soft memory limit: the floor, or, when the
// live heap (a large catalog) is already near it, room above that heap,
// so that the collector does not run without end.
func setMemoryLimit() {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	var live int64
	if s[0].Value.Kind() == metrics.KindUint64 {
		live = int64(s[0].Value.Uint64())
	}
	debug.SetMemoryLimit(max(serveMemoryFloor, 2*live+64<<20))
}
