package search

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
)

// scaledCatalog returns a catalog of n tools made by sampling the real
// servers' tools and perturbing them: each copy lives on a renamed server
// and has a few description words swapped with words of other tools, so
// that term statistics stay realistic. The result depends only on n.
func scaledCatalog(b testing.TB, n int) *catalog.Catalog {
	b.Helper()
	base := realCatalog(b)
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	var vocab []string
	for e := range base.All() {
		vocab = append(vocab, strings.Fields(e.Description)...)
	}
	entries := make([]catalog.Entry, 0, n)
	for i := range n {
		src := base.Entry(rng.IntN(base.Len()))
		words := strings.Fields(src.Description)
		for k := 0; k < len(words)/5; k++ {
			words[rng.IntN(len(words))] = vocab[rng.IntN(len(vocab))]
		}
		raw, err := json.Marshal(map[string]any{
			"name":        src.Tool,
			"description": strings.Join(words, " "),
			"inputSchema": json.RawMessage(src.InputSchema),
		})
		if err != nil {
			b.Fatal(err)
		}
		e, err := catalog.ParseTool(fmt.Sprintf("%s-%d", src.Server, i/base.Len()), raw)
		if err != nil {
			b.Fatal(err)
		}
		entries = append(entries, e)
	}
	return catalog.New(entries, nil)
}

var benchQueries = []string{
	"create a pull request",
	"send a message to the team channel",
	"list files in a directory",
	"take a screenshot of the current page",
	"run a SQL query against the database",
	"refund the last payment for a customer",
	"+github issue comment",
	"find documentation for the react library",
}

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
			})
		}
	}
}
