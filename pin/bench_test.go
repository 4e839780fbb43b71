package pin_test

import (
	"path/filepath"
	"testing"

	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/pin"
)

// BenchmarkCanonical makes the canonical definitions of the built-in
// catalog's 519 tools: what a pool pays once per tool definition it sees.
func BenchmarkCanonical(b *testing.B) {
	c := builtin.Catalog()
	for b.Loop() {
		for e := range c.All() {
			if _, err := pin.Canonical(e.Raw); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkJudge judges the built-in catalog's tools against their pins:
// what every publish of a pool pays with a lock file.
func BenchmarkJudge(b *testing.B) {
	c := builtin.Catalog()
	l, err := pin.Open(filepath.Join(b.TempDir(), pin.FileName), "")
	if err != nil {
		b.Fatal(err)
	}
	defs := make([]pin.Definition, 0, c.Len())
	for e := range c.All() {
		d, _ := pin.Canonical(e.Raw)
		defs = append(defs, d)
		l.Judge(e.Server, e.Tool, d, nil)
	}
	for b.Loop() {
		i := 0
		for e := range c.All() {
			if v := l.Judge(e.Server, e.Tool, defs[i], nil); !v.OK() {
				b.Fatal(v)
			}
			i++
		}
	}
}
