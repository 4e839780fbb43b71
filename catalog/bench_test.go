package catalog_test

import (
	"bytes"
	"fmt"
	"runtime"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/bigcatalog"
	"github.com/toolshelf/toolshelf/internal/builtin"
)

// BenchmarkDecode measures reading a catalog file (as `serve --catalog`
// and `search --catalog` do) of 1,000 and 10,000 tools; go run
// ./scripts/scale measures 100,000 in a process of its own.
func BenchmarkDecode(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		c, err := bigcatalog.Make(builtin.Catalog(), n)
		if err != nil {
			b.Fatal(err)
		}
		var file bytes.Buffer
		if err := c.Encode(&file); err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(file.Len()))
			for b.Loop() {
				if _, err := catalog.Decode(bytes.NewReader(file.Bytes())); err != nil {
					b.Fatal(err)
				}
			}
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			kept, _ := catalog.Decode(bytes.NewReader(file.Bytes()))
			runtime.GC()
			runtime.ReadMemStats(&after)
			b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(kept.Len()), "catalog-B/tool")
			b.ReportMetric(float64(file.Len())/float64(kept.Len()), "file-B/tool")
		})
	}
}
