package search

import (
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
)

// Variant is an engine configuration for TestVariants: the seed's
// configuration changed by the fields that are set.
type Variant struct {
	ParamDescs  float64 // weight of parameter descriptions
	DropNumbers bool
	Stems       float64
	Rarity      bool    // query words weighed by their rarity in English
	Decompose   bool    // clause fusion (whole request ×2, k = 1)
	Weak        float64 // weak-match threshold
	ServerInfo  float64 // weight of the server's description and instructions
	NameBoost   float64 // name-coverage boost of the best candidates
	Depth       int     // how many candidates are reranked
}

// NewBM25Variant builds a BM25 engine with a variant configuration.
func NewBM25Variant(c *catalog.Catalog, v Variant) *BM25 { return newBM25(c, v.config()) }

func (v Variant) config() bm25Config {
	cfg := seedBM25
	cfg.fields[fParamDescs] = fieldConfig{v.ParamDescs, 0.75}
	cfg.dropNumbers, cfg.stems, cfg.rarity = v.DropNumbers, v.Stems, v.Rarity
	if v.Decompose {
		cfg.decompose, cfg.fuseWhole, cfg.fuseK = true, 2, 1
	}
	cfg.weak = v.Weak
	cfg.fields[fServerInfo] = fieldConfig{v.ServerInfo, 0.75}
	cfg.nameBoost, cfg.rerankDepth = v.NameBoost, v.Depth
	return cfg
}

// The default engine is the variant docs/search-quality.md reports as the
// default: a change to one must be measured in the other.
func TestDefaultIsTheMeasuredVariant(t *testing.T) {
	measured := Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true, NameBoost: 0.4, Depth: 30, Rarity: true, Weak: 0.30}.config()
	if measured != defaultBM25 {
		t.Errorf("defaultBM25 = %+v, the measured default is %+v", defaultBM25, measured)
	}
}
