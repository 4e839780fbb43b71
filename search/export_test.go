package search

import "github.com/toolshelf/toolshelf/catalog"

// NewBM25Variant builds a BM25 engine with a configuration changed by
// tweak, for experiments in tests.
func NewBM25Variant(c *catalog.Catalog, tweak func(*bm25Config)) *BM25 {
	cfg := seedBM25
	if tweak != nil {
		tweak(&cfg)
	}
	return newBM25(c, cfg)
}

// BM25Config lets experiments set the engine's switches.
type BM25Config = bm25Config

func (c *bm25Config) Set(dropNumbers bool, synonyms, stems, coord float64) {
	c.dropNumbers, c.stems = dropNumbers, stems
}

// SetField sets one field's weight and b: 0 name, 1 title, 2 tool, 3 server, 4 description, 5 params.
func (c *bm25Config) SetField(f int, w, b float64) { c.fields[f] = fieldConfig{w, b} }

// SetK1 sets k1.
func (c *bm25Config) SetK1(k1 float64) { c.k1 = k1 }

func (c *bm25Config) SetDecompose(d int) { c.decompose = d > 0 }

func (c *bm25Config) SetFuse(whole, k float64) { c.decompose, c.fuseWhole, c.fuseK = true, whole, k }

func (c *bm25Config) SetAbstain(a float64) { c.weak = a }

// Default returns the default configuration.
func DefaultConfig() bm25Config { return defaultBM25 }
