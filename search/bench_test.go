package search

import (
	"context"
	"fmt"
	"runtime"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/bigcatalog"
)

// scaledCatalog returns a catalog of exactly n tools made from the
// built-in catalog's (see package bigcatalog). It depends only on n.
func scaledCatalog(b testing.TB, n int) *catalog.Catalog {
	b.Helper()
	c, err := bigcatalog.Make(realCatalog(b), n)
	if err != nil {
		b.Fatal(err)
	}
	return c
}

var benchQueries = bigcatalog.Queries

// BenchmarkSearch measures one query (cycling through benchQueries) on
// catalogs of 100, 1,000 and 10,000 tools.
func BenchmarkSearch(b *testing.B) {
	for _, kind := range Kinds {
		for _, n := range []int{100, 1000, 10000} {
			c := scaledCatalog(b, n)
			e, err := New(kind, c)
			if err != nil {
				b.Fatal(err)
			}
			queries := benchQueries
			if kind == "regex" {
				queries = []string{"pull.?request", "send.*message", "list.*(file|dir)", "screenshot", "sql|query", "refund", "issue.*comment", "documentation"}
			}
			b.Run(fmt.Sprintf("engine=%s/tools=%d", kind, n), func(b *testing.B) {
				ctx := context.Background()
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := e.Search(ctx, queries[i%len(queries)], 0); err != nil {
						b.Fatal(err)
					}
					i++
				}
			})
		}
	}
}

// BenchmarkBuild measures building each engine's index.
func BenchmarkBuild(b *testing.B) {
	for _, kind := range Kinds {
		for _, n := range []int{1000, 10000} {
			c := scaledCatalog(b, n)
			b.Run(fmt.Sprintf("engine=%s/tools=%d", kind, n), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := New(kind, c); err != nil {
						b.Fatal(err)
					}
				}
				b.ReportMetric(float64(retained(func() any { e, _ := New(kind, c); return e }))/float64(n), "index-B/tool")
			})
		}
	}
}

// retained is how many bytes of heap what make returns keeps alive.
func retained(make func() any) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	v := make()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(v)
	return after.HeapAlloc - before.HeapAlloc
}
