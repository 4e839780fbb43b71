package search

import (
	"context"
	"math"
	"sort"
	"strings"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
)

// BM25 ranks tools with BM25+ over weighted fields, the scheme of
// oh-my-pi's search_tool_bm25: k1 1.2, b 0.75, δ 1.0, and a document's
// term frequency is the weighted sum of the term's occurrences in each
// field:
//
//	qualified name     6
//	title              4
//	tool's own name    4
//	server name        2
//	description        2 (the whole description of an MCP tool, the
//	                      first 200 characters of other tools')
//	parameter names    1 (top-level input schema properties)
//
// Its length is the weighted sum of the fields' lengths. A query term
// scores idf · (tf·(k1+1) / (tf + k1·(1 − b + b·len/avglen)) + δ) in every
// document that contains it, with idf = ln(1 + (N − df + 0.5)/(df + 0.5)).
// Ties are broken by name.
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
	norm     []float64            // k1·(1 − b + b·len/avglen) per document
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
	k1, b, delta                                  float64
	name, title, tool, server, description, param float32
}

// seedBM25 is the configuration of oh-my-pi's search_tool_bm25.
var seedBM25 = bm25Config{k1: 1.2, b: 0.75, delta: 1, name: 6, title: 4, tool: 4, server: 2, description: 2, param: 1}

var _ Engine = (*BM25)(nil)

// NewBM25 builds a BM25 engine over c.
func NewBM25(c *catalog.Catalog) *BM25 { return newBM25(c, seedBM25) }

func newBM25(c *catalog.Catalog, cfg bm25Config) *BM25 {
	n := c.Len()
	x := &BM25{
		cfg:      cfg,
		cat:      c,
		postings: make(map[string][]posting),
		norm:     make([]float64, n),
		haystack: make([]string, n),
	}
	type acc struct {
		tf     float32
		fields fieldSet
	}
	doc := make(map[string]*acc)
	lens := make([]float64, n)
	var toks []string
	for i := range n {
		e := c.Entry(i)
		clear(doc)
		add := func(text string, w float32, f fieldSet) {
			toks = appendTokens(toks[:0], text)
			for _, t := range toks {
				t = foldPlural(t)
				a := doc[t]
				if a == nil {
					a = &acc{}
					doc[t] = a
				}
				a.tf += w
				a.fields |= f
			}
			lens[i] += float64(w) * float64(len(toks))
		}
		add(e.Name, cfg.name, inName)
		add(e.Title, cfg.title, inTitle)
		add(e.Tool, cfg.tool, inTool)
		add(e.Server, cfg.server, inServer)
		add(summary(e), cfg.description, inDescription)
		for _, p := range e.Params {
			add(p.Name, cfg.param, inParams)
		}
		for t, a := range doc {
			x.postings[t] = append(x.postings[t], posting{doc: int32(i), tf: a.tf, fields: a.fields})
		}
		x.haystack[i] = strings.ToLower(e.Name + "\n" + e.Description + "\n" + e.SearchHint)
	}
	var total float64
	for _, l := range lens {
		total += l
	}
	avg := 1.0
	if n > 0 && total > 0 {
		avg = total / float64(n)
	}
	for i, l := range lens {
		x.norm[i] = cfg.k1 * (1 - cfg.b + cfg.b*l/avg)
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
	return idf * (tf*(x.cfg.k1+1)/(tf+x.norm[p.doc]) + x.cfg.delta)
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
