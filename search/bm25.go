package search

import (
	"context"
	"math"
	"runtime"
	"sort"
	"strings"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/wordvec"
)

// BM25 ranks tools with BM25F+ over weighted fields, with the parameters
// of oh-my-pi's search_tool_bm25 (k1 1.2, b 0.75, δ 1.0). A document's term
// frequency is the sum over fields of the term's occurrences times the
// field's weight, each field normalised by its own length (BM25F):
//
//	qualified name     6
//	title              4
//	tool's own name    4
//	server name        2
//	description        2 (the whole description of an MCP tool, the
//	                      first 200 characters of other tools')
//	parameter names    1 (top-level input schema properties)
//
// with tf = Σ w_f · count_f / (1 − b + b·len_f/avglen_f). A query term
// scores idf · (tf·(k1+1) / (tf + k1) + δ) in every document that contains
// it, with idf = ln(1 + (N − df + 0.5)/(df + 0.5)). Ties are broken by
// name. The seed normalises by the whole document's length instead, which
// penalises a name match in a tool with a long description.
//
// Three refinements over the original, each measured with toolshelf eval
// (docs/search-quality.md): a query is a set of terms, so a word repeated
// in a long request counts once; common English words ("the", "to",
// "please") are dropped from queries unless they are all the query has or
// are +required; and simple English plurals are folded ("issues" →
// "issue") in the index and the query alike.
//
// The index is inverted: a query touches only the documents that contain
// one of its terms.
type BM25 struct {
	cfg      bm25Config
	cat      *catalog.Catalog
	postings map[string][]posting // term → documents containing it, in document order
	stemmed  map[string][]string  // stemKey → index terms, when stems are on
	scratch  chan *scratch        // free accumulators; a sync.Pool is emptied by every GC
}

type posting struct {
	doc    int32
	tf     float32
	fields fieldSet
}

// fieldSet is a set of indexed fields, for explanations.
type fieldSet uint16

const (
	inName fieldSet = 1 << iota
	inTitle
	inTool
	inServer
	inDescription
	inParams
	inHint
	inParamDescs
	inServerInfo
)

var fieldNames = []struct {
	bit  fieldSet
	name string
}{
	{inName, FieldName}, {inTitle, FieldTitle}, {inTool, FieldTool},
	{inServer, FieldServer}, {inHint, FieldHint}, {inDescription, FieldDescription},
	{inParams, FieldParams}, {inParamDescs, FieldParamDescs}, {inServerInfo, FieldServerInfo},
}

func (s fieldSet) names() []string {
	var out []string
	for _, f := range fieldNames {
		if s&f.bit != 0 {
			out = append(out, f.name)
		}
	}
	return out
}

// bm25Config holds BM25+ parameters and field weights.
type bm25Config struct {
	k1, delta float64
	fields    [numFields]fieldConfig
	// dropNumbers leaves digit-only words out of queries.
	dropNumbers bool
	// stems weighs index words of the same stem as a query word, as
	// alternatives of it (0 turns them off).
	stems float64
	// rarity weighs each query word by how rare it is in English (see
	// wordvec.Model.Rarity): words a request is phrased with ("need",
	// "like", "sure") are rare in tool descriptions, so their idf is high,
	// yet they say nothing about the tool wanted. The name boost weighs a
	// tool's name words the same way: "weather" says more than "get".
	rarity bool
	// decompose searches the clauses of a multi-step request separately
	// and fuses their rankings with the whole request's, which counts
	// fuseWhole times a clause, by reciprocal rank with constant fuseK.
	decompose bool
	fuseWhole float64
	fuseK     float64
	// weak flags the hits of a search whose best match's strength (see
	// strength) is below it: probably no tool fits.
	weak float64
	// nameBoost multiplies the score of the rerankDepth best candidates
	// by 1 + nameBoost × the share of the tool's own name words that the
	// query has: "get the current weather" prefers get_current_weather
	// among tools whose descriptions match as well.
	nameBoost   float64
	rerankDepth int
}

// fieldConfig is one field's weight and length normalisation.
type fieldConfig struct {
	w, b float64
}

// The indexed fields, in the order of bm25Config.fields.
const (
	fName = iota
	fTitle
	fTool
	fServer
	fDescription
	fParams
	fParamDescs
	fServerInfo
	numFields
)

var fieldBits = [numFields]fieldSet{inName, inTitle, inTool, inServer, inDescription, inParams, inParamDescs, inServerInfo}

// seedBM25 is the configuration of oh-my-pi's search_tool_bm25: its
// weights, and b 0.75 throughout.
var seedBM25 = bm25Config{k1: 1.2, delta: 1, fields: [numFields]fieldConfig{
	fName: {6, 0.75}, fTitle: {4, 0.75}, fTool: {4, 0.75}, fServer: {2, 0.75}, fDescription: {2, 0.75}, fParams: {1, 0.75},
	// Not in the seed: measured by toolshelf (search-quality.md).
	fParamDescs: {0, 0.75}, fServerInfo: {0, 0.75},
}}

// defaultBM25 is the seed's configuration with the refinements that
// toolshelf eval showed to help on every dataset (docs/search-quality.md):
// parameter descriptions indexed at a low weight, numbers left out of
// queries, words of the same stem as weaker alternatives, query words
// weighed by their rarity in English, multi-step requests searched clause
// by clause, the best candidates boosted by how much of their own name the
// query says, and weak results flagged.
var defaultBM25 = func() bm25Config {
	c := seedBM25
	c.fields[fParamDescs] = fieldConfig{0.3, 0.75}
	c.dropNumbers = true
	c.stems = 0.5
	c.rarity = true
	c.decompose, c.fuseWhole, c.fuseK = true, 2, 1
	c.nameBoost, c.rerankDepth = 0.4, 30
	c.weak = weakStrength
	return c
}()

// weakStrength is the strength below which a search's results are flagged
// weak: calibrated on etom_msc_bench so that over half of the requests no
// tool fits are flagged, while about 3% of answerable ones are.
const weakStrength = 0.30

var _ Engine = (*BM25)(nil)

// NewBM25 builds a BM25 engine over c.
func NewBM25(c *catalog.Catalog) *BM25 { return newBM25(c, defaultBM25) }

// fieldTexts calls text with each text of each indexed field of e: one
// text per field, but one per parameter for the parameter fields.
func fieldTexts(c *catalog.Catalog, e *catalog.Entry, text func(f int, s string)) {
	text(fName, e.Name)
	text(fTitle, e.Title)
	text(fTool, e.Tool)
	text(fServer, e.Server)
	text(fDescription, summary(e))
	for _, p := range e.Params {
		text(fParams, p.Name)
		text(fParamDescs, p.Description)
	}
	if srv, ok := c.Server(e.Server); ok {
		text(fServerInfo, srv.Description)
		text(fServerInfo, srv.Instructions)
	}
}

// newBM25 builds the index in two passes: the first measures every
// field's length, the second weighs each term occurrence by its field's
// weight over the field's length norm (BM25F), so that a long description
// or many parameters do not dilute a match in the name. (Recording counts
// in one pass instead was no faster and took twice the memory.) Large
// catalogs are split into contiguous shards indexed in parallel and
// merged in order.
func newBM25(c *catalog.Catalog, cfg bm25Config) *BM25 {
	n := c.Len()
	x := &BM25{cfg: cfg, cat: c, scratch: make(chan *scratch, 4)}
	shards := 1
	if n >= minParallel {
		shards = min(runtime.GOMAXPROCS(0), n/(minParallel/2))
	}
	bounds := func(s int) (int, int) { return s * n / shards, (s + 1) * n / shards }

	lens := make([][numFields]float64, n)
	sums := make([][numFields]float64, shards)
	parallel(shards, func(s int) {
		lo, hi := bounds(s)
		for i := lo; i < hi; i++ {
			fieldTexts(c, c.Entry(i), func(f int, text string) {
				if cfg.fields[f].w != 0 {
					k := float64(countTokens(text))
					lens[i][f] += k
					sums[s][f] += k
				}
			})
		}
	})
	var avg [numFields]float64
	for _, sum := range sums {
		for f := range avg {
			avg[f] += sum[f]
		}
	}
	for f := range avg {
		avg[f] = max(avg[f]/float64(max(n, 1)), 1)
	}

	parts := make([]map[string][]posting, shards)
	parallel(shards, func(s int) {
		lo, hi := bounds(s)
		parts[s] = indexRange(c, cfg, lens, avg, lo, hi)
	})
	x.postings = parts[0]
	for _, p := range parts[1:] {
		for t, ps := range p {
			x.postings[t] = append(x.postings[t], ps...)
		}
	}
	if cfg.stems > 0 {
		x.stemmed = map[string][]string{}
		for t := range x.postings {
			if k := stemKey(t); k != "" {
				x.stemmed[k] = append(x.stemmed[k], t)
			}
		}
	}
	return x
}

// minParallel is the catalog size from which indexing is parallel.
const minParallel = 2000

// parallel runs f(0) … f(n-1) concurrently and waits for them.
func parallel(n int, f func(int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for s := range n {
		wg.Go(func() { f(s) })
	}
	wg.Wait()
}

// indexRange builds the postings of documents lo to hi.
func indexRange(c *catalog.Catalog, cfg bm25Config, lens [][numFields]float64, avg [numFields]float64, lo, hi int) map[string][]posting {
	postings := make(map[string][]posting)
	type acc struct {
		tf     float64
		fields fieldSet
	}
	slot := make(map[string]int32)
	var doc []acc
	var terms, toks []string
	for i := lo; i < hi; i++ {
		clear(slot)
		doc, terms = doc[:0], terms[:0]
		fieldTexts(c, c.Entry(i), func(f int, s string) {
			fc := cfg.fields[f]
			if fc.w == 0 {
				return
			}
			w := fc.w / (1 - fc.b + fc.b*lens[i][f]/avg[f])
			toks = appendTokens(toks[:0], s)
			for _, t := range toks {
				t = foldPlural(t)
				k, ok := slot[t]
				if !ok {
					k = int32(len(doc))
					slot[t] = k
					doc = append(doc, acc{})
					terms = append(terms, t)
				}
				doc[k].tf += w
				doc[k].fields |= fieldBits[f]
			}
		})
		for k, t := range terms {
			postings[t] = append(postings[t], posting{doc: int32(i), tf: float32(doc[k].tf), fields: doc[k].fields})
		}
	}
	return postings
}

// summary is the description text indexed for a tool: the whole
// description of an MCP tool, the first 200 characters of other tools'.
func summary(e *catalog.Entry) string {
	if e.IsMCP() {
		return e.Description
	}
	if r := []rune(e.Description); len(r) > 200 {
		return string(r[:200])
	}
	return e.Description
}

// queryTerm is a distinct query token and the index terms that stand for
// it: itself, and, when enabled, synonyms and words of the same stem, each
// with a weight below 1. A document scores the best of them, never their
// sum, so that expansion can add a match but not multiply one.
type queryTerm struct {
	text string
	alts []alt
	idf  float64 // the largest idf among the alternatives, for coverage
}

type alt struct {
	text   string
	idf    float64
	weight float64
	ps     []posting
}

// Search implements Engine. The default limit is 8.
func (x *BM25) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	q, limit, hits, done, err := begin(ctx, x.cat, query, limit, DefaultBM25Limit)
	if done {
		return hits, err
	}
	cs := clauses(q.Text)
	if !x.cfg.decompose || cs == nil {
		return x.part(q, q.required(), limit), nil
	}
	depth := max(limit, fuseDepth)
	lists := [][]Hit{x.part(q, q.required(), depth)}
	weights := []float64{x.cfg.fuseWhole}
	for _, c := range cs {
		cq, err := ParseQuery(c)
		if err != nil {
			continue
		}
		lists = append(lists, x.part(cq, q.required(), depth))
		weights = append(weights, 1)
	}
	hits = fuse(lists, weights, x.cfg.fuseK, limit)
	markWeak(hits, allWeak(lists))
	return hits, nil
}

// part ranks one part of a request, the whole of it or one clause, on
// its own, and flags the hits weak when the best is.
func (x *BM25) part(q Query, required []string, limit int) []Hit {
	terms := x.terms(q)
	hits := x.rank(terms, required, limit)
	x.explainAll(hits, terms)
	if len(hits) > 0 && x.strength(hits[0].Score, terms) < x.cfg.weak {
		markWeak(hits, true)
	}
	return hits
}

// fuseDepth is how deep each ranking fused for a multi-step request goes.
const fuseDepth = 10

func (x *BM25) explainAll(hits []Hit, terms []queryTerm) {
	for i := range hits {
		hits[i].Matches = x.explain(x.cat.Index(hits[i].Entry.Name), terms)
	}
}

// rank scores the documents matching terms and returns the best limit.
func (x *BM25) rank(terms []queryTerm, required []string, limit int) []Hit {
	want := limit
	if x.cfg.nameBoost > 0 {
		limit = max(limit, x.cfg.rerankDepth)
	}
	var sc *scratch
	select {
	case sc = <-x.scratch:
	default:
		n := x.cat.Len()
		sc = &scratch{score: make([]float64, n), best: make([]float64, n)}
	}
	touched, mine := sc.touched[:0], sc.mine[:0]
	for _, t := range terms {
		mine = mine[:0]
		for _, a := range t.alts {
			for _, p := range a.ps {
				v := a.weight * x.termScore(a.idf, p)
				if sc.best[p.doc] == 0 {
					mine = append(mine, p.doc)
				}
				sc.best[p.doc] = max(sc.best[p.doc], v)
			}
		}
		for _, d := range mine {
			if sc.score[d] == 0 {
				touched = append(touched, d)
			}
			sc.score[d] += sc.best[d]
			sc.best[d] = 0
		}
	}
	top := topK{limit: limit}
	for _, d := range touched {
		h := Hit{Entry: x.cat.Entry(int(d)), Score: sc.score[d]}
		sc.score[d] = 0
		if top.accepts(&h) && x.hasRequired(int(d), required) {
			top.push(h)
		}
	}
	sc.touched, sc.mine = touched, mine
	select {
	case x.scratch <- sc:
	default:
	}
	hits := top.sorted()
	if x.cfg.nameBoost > 0 {
		words := map[string]bool{}
		for _, t := range terms {
			for _, a := range t.alts {
				words[a.text] = true
			}
		}
		for i := range hits {
			var have, all float64
			for _, w := range appendTokens(nil, hits[i].Entry.Tool) {
				w = foldPlural(w)
				r := 1.0
				if x.cfg.rarity {
					r = wordvec.Builtin().Rarity(w)
				}
				all += r
				if words[w] {
					have += r
				}
			}
			if all > 0 {
				hits[i].Score *= 1 + x.cfg.nameBoost*have/all
			}
		}
		sort.SliceStable(hits, func(i, j int) bool { return better(&hits[i], &hits[j]) })
	}
	return hits[:min(want, len(hits))]
}

// strength is a score as a share of the best score the query's terms
// could give: comparable across queries, unlike raw BM25 scores.
func (x *BM25) strength(score float64, terms []queryTerm) float64 {
	var best float64
	for _, t := range terms {
		best += t.idf * (x.cfg.k1 + 1 + x.cfg.delta)
	}
	if best == 0 {
		return 0
	}
	return score / best
}

// scratch holds per-document accumulators, pooled between searches.
type scratch struct {
	score, best   []float64
	touched, mine []int32
}

// terms returns the distinct, folded tokens of q, each with the index
// terms that stand for it, without stop words (and numbers, when so
// configured) unless nothing else is left.
func (x *BM25) terms(q Query) []queryTerm {
	keep := func(t Term) bool {
		if t.Required {
			return true
		}
		if stopWords[t.Text] {
			return false
		}
		return !x.cfg.dropNumbers || !isNumber(t.Text)
	}
	words := make([]string, 0, len(q.Terms))
	for _, t := range q.Terms {
		if keep(t) {
			words = append(words, foldPlural(t.Text))
		}
	}
	if len(words) == 0 {
		for _, t := range q.Terms {
			words = append(words, foldPlural(t.Text))
		}
	}
	var terms []queryTerm
	seen := map[string]bool{}
	for _, w := range words {
		if seen[w] {
			continue
		}
		seen[w] = true
		qt := queryTerm{text: w}
		qt.add(x, w, 1)
		if x.cfg.stems > 0 {
			for _, s := range x.stemmed[stemKey(w)] {
				if sameStem(w, s) {
					qt.add(x, s, x.cfg.stems)
				}
			}
		}
		if x.cfg.rarity {
			qt.scale(wordvec.Builtin().Rarity(w))
		}
		if len(qt.alts) > 0 {
			terms = append(terms, qt)
		}
	}
	return terms
}

// add makes an index term an alternative of t, unless it already is one
// or is not in the index.
func (t *queryTerm) add(x *BM25, term string, weight float64) {
	ps := x.postings[term]
	if len(ps) == 0 {
		return
	}
	for _, a := range t.alts {
		if a.text == term {
			return
		}
	}
	n := float64(x.cat.Len())
	df := float64(len(ps))
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	t.alts = append(t.alts, alt{text: term, idf: idf, weight: weight, ps: ps})
	t.idf = max(t.idf, idf*weight)
}

// scale multiplies the weight of t and of its alternatives by f.
func (t *queryTerm) scale(f float64) {
	for i := range t.alts {
		t.alts[i].weight *= f
	}
	t.idf *= f
}

func isNumber(s string) bool {
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return s != ""
}

func (x *BM25) termScore(idf float64, p posting) float64 {
	tf := float64(p.tf)
	return idf * (tf*(x.cfg.k1+1)/(tf+x.cfg.k1) + x.cfg.delta)
}

// hasRequired reports whether a document's name, description or search
// hint contains every required term. Required terms are rare, so the
// lower-cased text is made when asked for, not kept.
func (x *BM25) hasRequired(doc int, required []string) bool {
	if len(required) == 0 {
		return true
	}
	e := x.cat.Entry(doc)
	text := strings.ToLower(e.Name + "\n" + e.Description + "\n" + e.SearchHint)
	for _, r := range required {
		if !strings.Contains(text, r) {
			return false
		}
	}
	return true
}

// explain lists what each query term contributed to a document's score:
// the best of its alternatives, named after the index term that matched.
func (x *BM25) explain(doc int, terms []queryTerm) []Match {
	var ms []Match
	for _, t := range terms {
		var best Match
		for _, a := range t.alts {
			i := sort.Search(len(a.ps), func(i int) bool { return int(a.ps[i].doc) >= doc })
			if i == len(a.ps) || int(a.ps[i].doc) != doc {
				continue
			}
			p := a.ps[i]
			if v := a.weight * x.termScore(a.idf, p); v > best.Score {
				term := t.text
				if a.text != t.text {
					term = t.text + "~" + a.text
				}
				best = Match{Term: term, Fields: p.fields.names(), Score: v}
			}
		}
		if best.Score > 0 {
			ms = append(ms, best)
		}
	}
	return ms
}
