// Package bigcatalog makes catalogs of any size from a real one, for
// benchmarks: registry-scale catalogs with realistic term statistics that
// anyone can make again from the same inputs.
package bigcatalog

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
)

// Make returns a catalog of exactly n distinct tools made from base's.
// Tools are taken in rounds: each round is a shuffle of all of base's
// tools on servers renamed for the round (github → github-3), so no
// tool repeats; each copy has a fifth of its description's words swapped
// for words of other tools. The result depends only on base and n.
func Make(base *catalog.Catalog, n int) (*catalog.Catalog, error) {
	if base.Len() == 0 {
		return nil, fmt.Errorf("bigcatalog: the base catalog has no tools")
	}
	rng := rand.New(rand.NewPCG(uint64(n), 42))
	var vocab []string
	for e := range base.All() {
		vocab = append(vocab, strings.Fields(e.Description)...)
	}
	if len(vocab) == 0 {
		vocab = []string{"tool"}
	}
	entries := make([]catalog.Entry, 0, n)
	var order []int
	for i := range n {
		round, k := i/base.Len(), i%base.Len()
		if k == 0 {
			order = rng.Perm(base.Len())
		}
		src := base.Entry(order[k])
		words := strings.Fields(src.Description)
		for range len(words) / 5 {
			words[rng.IntN(len(words))] = vocab[rng.IntN(len(vocab))]
		}
		raw, err := json.Marshal(map[string]any{
			"name":        src.Tool,
			"description": strings.Join(words, " "),
			"inputSchema": json.RawMessage(src.InputSchema),
		})
		if err != nil {
			return nil, err
		}
		server := src.Server
		if round > 0 {
			server = fmt.Sprintf("%s-%d", src.Server, round)
		}
		e, err := catalog.ParseTool(server, raw)
		if err != nil {
			return nil, fmt.Errorf("bigcatalog: %s: %v", src.Name, err)
		}
		e.ID = fmt.Sprintf("%s/%d", src.Name, round)
		entries = append(entries, e)
	}
	return catalog.New(entries, nil), nil
}

// Queries are realistic requests for the tools of the built-in catalog,
// the ones the benchmarks search a made catalog with: single needs, a
// request naming its platform, and a +required term.
var Queries = []string{
	"create a pull request",
	"send a message to the team channel",
	"list files in a directory",
	"take a screenshot of the current page",
	"run a SQL query against the database",
	"refund the last payment for a customer",
	"+github issue comment",
	"find documentation for the react library",
}
