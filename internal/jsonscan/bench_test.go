package jsonscan

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkValid compares Valid with encoding/json's on the built-in
// catalog file (1.5 MB).
func BenchmarkValid(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("..", "builtin", "catalog.json"))
	if err != nil {
		b.Fatal(err)
	}
	for _, v := range []struct {
		name  string
		valid func([]byte) bool
	}{{"jsonscan", Valid}, {"encoding-json", json.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if !v.valid(data) {
					b.Fatal("invalid")
				}
			}
		})
	}
}
