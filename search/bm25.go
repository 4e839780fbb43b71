package search

import (
	"context"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
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
	haystack []string             // lower-case name, description and hint, for +required terms
	pool     sync.Pool            // *[]float64 score accumulators of length N
}

type posting struct {
	doc    int32
	tf     float32
	fields fieldSet
}

// fieldSet is a set of indexed fields, for explanations.
type fieldSet uint8

const (
	inName fieldSet = 1 << iota
	inTitle
	inTool
	inServer
	inDescription
	inParams
	inHint
)

var fieldNames = []struct {
	bit  fieldSet
	name string
}{
	{inName, FieldName}, {inTitle, FieldTitle}, {inTool, FieldTool},
	{inServer, FieldServer}, {inHint, FieldHint}, {inDescription, FieldDescription},
	{inParams, FieldParams},
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
	numFields
)

var fieldBits = [numFields]fieldSet{inName, inTitle, inTool, inServer, inDescription, inParams}

// seedBM25 is the configuration of oh-my-pi's search_tool_bm25: its
// weights, and b 0.75 throughout.
var seedBM25 = bm25Config{k1: 1.2, delta: 1, fields: [numFields]fieldConfig{
	fName: {6, 0.75}, fTitle: {4, 0.75}, fTool: {4, 0.75}, fServer: {2, 0.75}, fDescription: {2, 0.75}, fParams: {1, 0.75},
}}

var _ Engine = (*BM25)(nil)

// NewBM25 builds a BM25 engine over c.
func NewBM25(c *catalog.Catalog) *BM25 { return newBM25(c, seedBM25) }

// fieldTexts returns the texts of an entry's indexed fields.
func fieldTexts(e *catalog.Entry, params *strings.Builder) [numFields]string {
	params.Reset()
	for _, p := range e.Params {
		params.WriteString(p.Name)
		params.WriteByte(' ')
	}
	return [numFields]string{
		fName: e.Name, fTitle: e.Title, fTool: e.Tool, fServer: e.Server,
		fDescription: summary(e), fParams: params.String(),
	}
}

// newBM25 builds the index in two passes: the first measures every
// field's length, the second weighs each term occurrence by its field's
// weight over the field's length norm (BM25F), so that a long description
// or many parameters do not dilute a match in the name.
func newBM25(c *catalog.Catalog, cfg bm25Config) *BM25 {
	n := c.Len()
	x := &BM25{
		cfg:      cfg,
		cat:      c,
		postings: make(map[string][]posting),
		haystack: make([]string, n),
	}
	var params strings.Builder
	var toks []string
	lens := make([][numFields]float64, n)
	var avg [numFields]float64
	for i := range n {
		for f, text := range fieldTexts(c.Entry(i), &params) {
			toks = appendTokens(toks[:0], text)
			lens[i][f] = float64(len(toks))
			avg[f] += float64(len(toks))
		}
	}
	for f := range avg {
		avg[f] = max(avg[f]/float64(max(n, 1)), 1)
	}
	type acc struct {
		tf     float64
		fields fieldSet
	}
	doc := make(map[string]*acc)
	for i := range n {
		e := c.Entry(i)
		clear(doc)
		for f, text := range fieldTexts(e, &params) {
			fc := cfg.fields[f]
			if fc.w == 0 {
				continue
			}
			w := fc.w / (1 - fc.b + fc.b*lens[i][f]/avg[f])
			toks = appendTokens(toks[:0], text)
			for _, t := range toks {
				t = foldPlural(t)
				a := doc[t]
				if a == nil {
					a = &acc{}
					doc[t] = a
				}
				a.tf += w
				a.fields |= fieldBits[f]
			}
		}
		for t, a := range doc {
			x.postings[t] = append(x.postings[t], posting{doc: int32(i), tf: float32(a.tf), fields: a.fields})
		}
		x.haystack[i] = strings.ToLower(e.Name + "\n" + e.Description + "\n" + e.SearchHint)
	}
	x.pool.New = func() any { s := make([]float64, n); return &s }
	return x
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

// queryTerm is a distinct query token.
type queryTerm struct {
	text string
	idf  float64
	ps   []posting
}

// Search implements Engine. The default limit is 8.
func (x *BM25) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	limit, err := checkLimit(limit, DefaultBM25Limit)
	if err != nil {
		return nil, err
	}
	q, err := ParseQuery(query)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if q.Select != nil {
		return selectHits(x.cat, q.Select, limit), nil
	}
	if q.Prefix != "" {
		if hits := prefixHits(x.cat, q.Prefix, limit); len(hits) > 0 {
			return hits, nil
		}
	}

	terms := x.terms(q)
	required := q.required()
	scoresp := x.pool.Get().(*[]float64)
	scores := *scoresp
	var touched []int32
	for _, t := range terms {
		for _, p := range t.ps {
			if scores[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			scores[p.doc] += x.termScore(t.idf, p)
		}
	}
	top := topK{limit: limit}
	for _, d := range touched {
		s := scores[d]
		scores[d] = 0
		if x.hasRequired(int(d), required) {
			top.push(Hit{Entry: x.cat.Entry(int(d)), Score: s})
		}
	}
	x.pool.Put(scoresp)

	hits := top.sorted()
	for i := range hits {
		hits[i].Matches = x.explain(x.cat.Index(hits[i].Entry.Name), terms)
	}
	return hits, nil
}

// terms returns the distinct, folded tokens of q that occur in the index,
// without stop words unless nothing else is left.
func (x *BM25) terms(q Query) []queryTerm {
	words := make([]string, 0, len(q.Terms))
	for _, t := range q.Terms {
		if t.Required || !stopWords[t.Text] {
			words = append(words, foldPlural(t.Text))
		}
	}
	if len(words) == 0 {
		for _, t := range q.Terms {
			words = append(words, foldPlural(t.Text))
		}
	}
	var terms []queryTerm
	n := float64(x.cat.Len())
	for _, w := range words {
		ps := x.postings[w]
		if len(ps) == 0 || containsTerm(terms, w) {
			continue
		}
		df := float64(len(ps))
		terms = append(terms, queryTerm{text: w, idf: math.Log(1 + (n-df+0.5)/(df+0.5)), ps: ps})
	}
	return terms
}

func containsTerm(terms []queryTerm, w string) bool {
	for _, t := range terms {
		if t.text == w {
			return true
		}
	}
	return false
}

func (x *BM25) termScore(idf float64, p posting) float64 {
	tf := float64(p.tf)
	return idf * (tf*(x.cfg.k1+1)/(tf+x.cfg.k1) + x.cfg.delta)
}

func (x *BM25) hasRequired(doc int, required []string) bool {
	for _, r := range required {
		if !strings.Contains(x.haystack[doc], r) {
			return false
		}
	}
	return true
}

// explain lists what each query term contributed to a document's score.
func (x *BM25) explain(doc int, terms []queryTerm) []Match {
	var ms []Match
	for _, t := range terms {
		i := sort.Search(len(t.ps), func(i int) bool { return int(t.ps[i].doc) >= doc })
		if i == len(t.ps) || int(t.ps[i].doc) != doc {
			continue
		}
		p := t.ps[i]
		ms = append(ms, Match{Term: t.text, Fields: p.fields.names(), Score: x.termScore(t.idf, p)})
	}
	return ms
}
