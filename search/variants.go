package search

import (
	"fmt"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
)

// Variant is a BM25 configuration for experiments: the seed's
// configuration (oh-my-pi's search_tool_bm25) changed by the fields that
// are set. toolshelf eval --variant NAME measures a named one, so that
// anyone can rerun the steps docs/search-quality.md reports.
type Variant struct {
	ParamDescs  float64 // weight of parameter descriptions
	DropNumbers bool
	Stems       float64
	Rarity      bool    // query words weighed by their rarity in English
	Decompose   bool    // clause fusion (whole request ×2, k = 1)
	Weak        float64 // weak-match threshold
	Flat        float64 // how little the best hit stands out for a weak flag (0: not asked)
	Gloss       float64 // weight of a Chinese description's English meanings (package zhdict)
	Reach       float64 // flag a request under this share of whose words the catalog has (with ReachFlat)
	ReachFlat   float64
	ServerInfo  float64 // weight of the server's description and instructions
	NameBoost   float64 // name-coverage boost of the best candidates
	Depth       int     // how many candidates are reranked
	Deprecated  float64 // the share of its score a deprecated tool keeps (0: all)
	StemOnly    bool    // flag a search whose best hit matched only words of the same stem
	Typos       float64 // weight of the index words one edit away from a word the index lacks
	Related     float64 // weight of a word's everyday related words (package thesaurus)
	Derived     float64 // weight of those of a derived sense
}

// NamedVariant is a variant with the name eval knows it by.
type NamedVariant struct {
	Name, About string
	Variant
}

// the refinements of the default engine, step by step.
var (
	stepParams   = Variant{ParamDescs: 0.3}
	stepNumbers  = Variant{ParamDescs: 0.3, DropNumbers: true}
	stepStems    = Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5}
	stepClauses  = Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true}
	stepBoost    = Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true, NameBoost: 0.4, Depth: 30}
	stepRarity   = Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true, NameBoost: 0.4, Depth: 30, Rarity: true}
	stepWeak     = Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true, NameBoost: 0.4, Depth: 30, Rarity: true, Weak: 0.30}
	stepDeprec   = with(stepWeak, func(v *Variant) { v.Deprecated = deprecatedFactor })
	stepFlat     = with(stepDeprec, func(v *Variant) { v.Flat = flatStandout })
	stepReach    = with(stepFlat, func(v *Variant) { v.Reach, v.ReachFlat = minReach, reachStandout })
	stepGloss    = with(stepReach, func(v *Variant) { v.Gloss = glossWeight })
	stepStemOnly = with(stepGloss, func(v *Variant) { v.StemOnly = true })
	stepEveryday = with(stepStemOnly, func(v *Variant) { v.Typos, v.Related, v.Derived = typoWeight, relatedWeight, derivedWeight })
	stepDefault  = with(stepEveryday, func(v *Variant) { v.Weak = weakStrength })
)

func with(v Variant, change func(*Variant)) Variant {
	change(&v)
	return v
}

// Variants lists the measured variants: the steps from the seed to the
// default engine, then the alternatives measured and dropped.
var Variants = []NamedVariant{
	{"seed", "the seed's BM25F+", Variant{}},
	{"param-descs", "+ parameter descriptions at 0.3", stepParams},
	{"numbers", "+ numbers dropped from queries", stepNumbers},
	{"stems", "+ words of one stem as alternatives at 0.5", stepStems},
	{"clauses", "+ multi-step requests fused clause by clause", stepClauses},
	{"name-boost", "+ name boost 0.4 over the top 30", stepBoost},
	{"rarity", "+ query words weighed by their rarity in English", stepRarity},
	{"weak", "+ weak flag at 0.30", stepWeak},
	{"deprecated", "+ deprecated tools keep 0.6 of their score", stepDeprec},
	{"flat", "+ weak only when the best hit stands out by under 0.34", stepFlat},
	{"reach", "+ weak when under 0.6 of the words are in the catalog and the best stands out by under 0.3", stepReach},
	{"gloss", "+ English meanings of Chinese descriptions at 1", stepGloss},
	{"stem-only", "+ weak when the best hit matched only words of the same stem", stepStemOnly},
	{"everyday", "+ typos one edit away at 0.5, related everyday words at 0.3 (0.4 a derived sense's)", stepEveryday},
	{"default", "+ weak flag at 0.21 (chosen on mcpdev half 0): the default engine", stepDefault},
	{"param-descs-0.5", "parameter descriptions at 0.5", with(stepClauses, func(v *Variant) { v.ParamDescs = 0.5 })},
	{"param-descs-1", "parameter descriptions at 1", with(stepClauses, func(v *Variant) { v.ParamDescs = 1 })},
	{"stems-0.7", "stems at 0.7", with(stepClauses, func(v *Variant) { v.Stems = 0.7 })},
	{"name-boost-0.2-top10", "name boost 0.2 over the top 10", with(stepBoost, func(v *Variant) { v.NameBoost, v.Depth = 0.2, 10 })},
	{"name-boost-1-top30", "name boost 1 over the top 30", with(stepBoost, func(v *Variant) { v.NameBoost = 1 })},
	{"name-boost-0.6-top100", "name boost 0.6 over the top 100", with(stepBoost, func(v *Variant) { v.NameBoost, v.Depth = 0.6, 100 })},
	{"server-info-0.1", "server descriptions at 0.1", with(stepRarity, func(v *Variant) { v.ServerInfo = 0.1 })},
	{"server-info-0.3", "server descriptions at 0.3", with(stepRarity, func(v *Variant) { v.ServerInfo = 0.3 })},
	{"server-info-1", "server descriptions at 1", with(stepRarity, func(v *Variant) { v.ServerInfo = 1 })},
	{"weak-0.24", "the default, weak flag at 0.24", with(stepDefault, func(v *Variant) { v.Weak = 0.24 })},
	{"weak-0.28", "the default, weak flag at 0.28", with(stepDefault, func(v *Variant) { v.Weak = 0.28 })},
	{"weak-0.32", "the default, weak flag at 0.32", with(stepDefault, func(v *Variant) { v.Weak = 0.32 })},
}

// VariantNamed returns the variant of a name, or an error listing them.
func VariantNamed(name string) (Variant, error) {
	var names []string
	for _, v := range Variants {
		if v.Name == name {
			return v.Variant, nil
		}
		names = append(names, v.Name)
	}
	return Variant{}, fmt.Errorf("unknown variant %q (want one of %s)", name, strings.Join(names, ", "))
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
	cfg.weak, cfg.flat = v.Weak, v.Flat
	cfg.reach, cfg.reachFlat = v.Reach, v.ReachFlat
	cfg.fields[fGloss] = fieldConfig{v.Gloss, 0.75}
	cfg.fields[fServerInfo] = fieldConfig{v.ServerInfo, 0.75}
	cfg.nameBoost, cfg.rerankDepth = v.NameBoost, v.Depth
	cfg.deprecated = v.Deprecated
	cfg.stemOnly = v.StemOnly
	cfg.typos, cfg.related, cfg.derived = v.Typos, v.Related, v.Derived
	return cfg
}
