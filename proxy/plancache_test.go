package proxy

import (
	"context"
	"fmt"
	"testing"
)

// The plan cache holds at most its bound: sets beyond it push out the
// least recently used (a set just used stays), the charge it holds goes
// down with each set it lets go, and a set let go is built again when
// asked for.
func TestPlanCacheBound(t *testing.T) {
	c := newPlanCache(10 << 20)
	builds := map[string]int{}
	get := func(key string, size int64) {
		t.Helper()
		if _, err := c.get(context.Background(), key, size, func() *toolSet { builds[key]++; return &toolSet{} }); err != nil {
			t.Fatal(err)
		}
	}
	for i := range 4 {
		get(fmt.Sprint(i), 3<<20) // 12 MiB asked for: one must go
	}
	if n, size := c.held(); size > 10<<20 || n != 3 {
		t.Errorf("the cache holds %d sets of %d bytes, over its 10 MiB", n, size)
	}
	get("1", 3<<20) // used: now the most recent
	get("4", 3<<20) // pushes out 2, the least recently used
	get("1", 3<<20)
	get("2", 3<<20)
	if builds["1"] != 1 || builds["2"] != 2 || builds["0"] != 1 {
		t.Errorf("builds %v: want 1 built once (kept while used), 2 built again after it was let go", builds)
	}
	// One set larger than the whole bound is kept alone, not refused.
	get("huge", 40<<20)
	if n, size := c.held(); n != 1 || size != 40<<20 {
		t.Errorf("after a set over the bound: %d sets, %d bytes", n, size)
	}
}
