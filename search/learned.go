package search

import (
	"cmp"
	"context"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
)

// LearnedQuery is a search whose results were used: its query, and the tools of
// those results that were then called.
type LearnedQuery struct {
	Query string
	Tools []string // qualified names
}

// LearnedOptions tune Learned; nil or zero fields mean the defaults,
// measured with toolshelf eval --learn-folds (docs/search-quality.md).
type LearnedOptions struct {
	// MinSimilarity is the tf-idf cosine a past query must have with the
	// new one to count: below it, the new query ranks as it would
	// without learning.
	MinSimilarity float64
	// Weight scales a past query's boost: a tool it called gains
	// Weight × the best hit's score × the square of how far the
	// similarity is from MinSimilarity to 1.
	Weight float64
	// MinWords is the share of a new query's words (weighed by how few
	// tools' past queries have each) that a tool's past queries must
	// have for those words to count as the tool's own: a new wording of a
	// need whose words were used before for the tool, in other queries,
	// finds it. Negative turns it off.
	MinWords float64
}

// Defaults of LearnedOptions.
const (
	DefaultLearnedMinSimilarity = 0.4
	DefaultLearnedWeight        = 1.0
	DefaultLearnedMinWords      = 0.7
)

// maxLearnedBonus caps what past queries add to a tool, in units of one
// identical past query's boost.
const maxLearnedBonus = 1.0

// learnedDepth is how many hits of the engine are reranked.
const learnedDepth = 30

// Learned is an engine that also ranks by what was used: when a query
// closely resembles a past query (see LearnedMinSimilarity), the tools
// called after that past query gain in proportion to the resemblance. A
// query unlike every past query gets the engine's ranking unchanged:
// popular tools do not soak up every word.
type Learned struct {
	opts LearnedOptions
	base Engine
	cat  *catalog.Catalog
	past []learnedQuery
	// postings: term → the past queries that have it, with its weight.
	postings map[string][]learnedPosting
	idf      map[string]float64
	// words: term → the tools whose past queries have it; wordIDF is
	// its weight over those tools (see LearnedOptions.MinWords).
	words   map[string][]*catalog.Entry
	wordIDF map[string]float64
	tools   int // tools with past queries
}

type learnedQuery struct {
	tools []*catalog.Entry
	norm  float64
}

type learnedPosting struct {
	query  int
	weight float64 // tf-idf
}

// NewLearned returns base ranked with the past searches of a catalog.
// Past tools that the catalog no longer has are ignored.
func NewLearned(base Engine, c *catalog.Catalog, past []LearnedQuery, opts *LearnedOptions) *Learned {
	l := &Learned{base: base, cat: c, postings: map[string][]learnedPosting{}, idf: map[string]float64{}}
	if opts != nil {
		l.opts = *opts
	}
	if l.opts.MinSimilarity <= 0 {
		l.opts.MinSimilarity = DefaultLearnedMinSimilarity
	}
	if l.opts.Weight <= 0 {
		l.opts.Weight = DefaultLearnedWeight
	}
	if l.opts.MinWords == 0 {
		l.opts.MinWords = DefaultLearnedMinWords
	}
	type doc struct {
		tf    map[string]float64
		tools []*catalog.Entry
	}
	var docs []doc
	df := map[string]int{}
	for _, p := range past {
		var tools []*catalog.Entry
		for _, n := range p.Tools {
			if e, ok := c.Lookup(n); ok {
				tools = append(tools, e)
			}
		}
		tf := learnedTerms(p.Query)
		if len(tools) == 0 || len(tf) == 0 {
			continue
		}
		for t := range tf {
			df[t]++
		}
		docs = append(docs, doc{tf, tools})
	}
	n := float64(len(docs))
	for t, d := range df {
		l.idf[t] = math.Log(1 + n/float64(d))
	}
	words := map[string]map[*catalog.Entry]bool{} // term → the tools its past queries called
	withWords := map[*catalog.Entry]bool{}
	for i, d := range docs {
		var norm float64
		for t, f := range d.tf {
			w := f * l.idf[t]
			norm += w * w
			l.postings[t] = append(l.postings[t], learnedPosting{i, w})
			if words[t] == nil {
				words[t] = map[*catalog.Entry]bool{}
			}
			for _, e := range d.tools {
				words[t][e] = true
				withWords[e] = true
			}
		}
		l.past = append(l.past, learnedQuery{tools: d.tools, norm: math.Sqrt(norm)})
	}
	l.tools = len(withWords)
	l.words, l.wordIDF = make(map[string][]*catalog.Entry, len(words)), make(map[string]float64, len(words))
	for t, es := range words {
		l.words[t] = slices.Collect(maps.Keys(es))
		l.wordIDF[t] = math.Log(1 + float64(l.tools)/float64(len(es)))
	}
	return l
}

// byWords returns the tools whose past queries have at least MinWords of
// a query's words (its terms, tf) (weighed by wordIDF; a word no past query has counts as the
// rarest), with that share.
func (l *Learned) byWords(tf map[string]float64) map[*catalog.Entry]wordsUsed {
	if l.opts.MinWords < 0 || l.tools == 0 {
		return nil
	}
	var total float64
	have := map[*catalog.Entry]wordsUsed{}
	for t := range tf {
		w, ok := l.wordIDF[t]
		if !ok {
			w = math.Log(1 + float64(l.tools))
		}
		total += w
		for _, e := range l.words[t] {
			u := have[e]
			u.share += w
			u.words = append(u.words, t)
			have[e] = u
		}
	}
	out := map[*catalog.Entry]wordsUsed{}
	for e, u := range have {
		if u.share /= total; u.share >= l.opts.MinWords {
			slices.Sort(u.words)
			out[e] = u
		}
	}
	return out
}

// wordsUsed are the words of a query that earlier queries used for a tool,
// and their share of the query (see byWords).
type wordsUsed struct {
	share float64
	words []string
}

// learnedTerms are a query's words for comparing queries: tokens folded
// to their singular, stop words left out, counted.
func learnedTerms(q string) map[string]float64 {
	tf := map[string]float64{}
	for _, t := range Tokenize(q) {
		if stopWords[t] {
			continue
		}
		tf[foldPlural(t)]++
	}
	return tf
}

// similar returns, for each past query whose cosine with a query (its
// terms, tf) is at least MinSimilarity, its index and the cosine.
func (l *Learned) similar(tf map[string]float64) map[int]float64 {
	var norm float64
	dots := map[int]float64{}
	for t, f := range tf {
		// A word no past query has counts as the rarest word there is:
		// it adds to q's norm only, so a long query that shares one word
		// with a past one is not like it.
		idf, ok := l.idf[t]
		if !ok {
			idf = math.Log(1 + float64(len(l.past)+1))
		}
		w := f * idf
		norm += w * w
		for _, p := range l.postings[t] {
			dots[p.query] += w * p.weight
		}
	}
	out := map[int]float64{}
	for i, d := range dots {
		if c := d / (math.Sqrt(norm) * l.past[i].norm); c >= l.opts.MinSimilarity {
			out[i] = c
		}
	}
	return out
}

// Search ranks as the base engine does, then, if q resembles past
// queries, lifts the tools called after them.
func (l *Learned) Search(ctx context.Context, q string, limit int) ([]Hit, error) {
	tf := learnedTerms(q)
	sims, words := l.similar(tf), l.byWords(tf)
	if len(sims) == 0 && len(words) == 0 {
		return l.base.Search(ctx, q, limit)
	}
	want := limit
	if want == 0 {
		want = DefaultBM25Limit
	}
	hits, err := l.base.Search(ctx, q, max(want, learnedDepth))
	if err != nil {
		return nil, err
	}
	bonus := map[*catalog.Entry]float64{}
	for i, s := range sims {
		// A past query at the threshold counts for nothing, growing to
		// full weight at identity, slowly at first: near misses ("area
		// of a triangle" after "area of a circle") must not outrank the
		// engine. Linear growth gained more recall@5 on bfcl_live but
		// cost recall@1 elsewhere (docs/search-quality.md).
		s = (s - l.opts.MinSimilarity) / (1 - l.opts.MinSimilarity)
		s *= s
		for _, e := range l.past[i].tools {
			// Capped at what one identical past query gives: many
			// similar queries (the same words reordered, say) are one
			// piece of evidence, not many.
			bonus[e] = min(bonus[e]+s, maxLearnedBonus)
		}
	}
	for e, u := range words {
		// As a past query's similarity: nothing at the threshold, full
		// weight when every word was used for the tool before.
		s := (u.share - l.opts.MinWords) / (1 - l.opts.MinWords)
		bonus[e] = min(max(bonus[e], s*s), maxLearnedBonus)
	}
	// What learning added, for explanations: the words earlier searches
	// used for the tool, when they count.
	learnedField := func(e *catalog.Entry) []string {
		if u, ok := words[e]; ok {
			return []string{FieldLearned + ": " + strings.Join(u.words, " ")}
		}
		return []string{FieldLearned}
	}
	top := 1.0
	if len(hits) > 0 && hits[0].Score > 0 {
		top = hits[0].Score
	}
	for i := range hits {
		if b, ok := bonus[hits[i].Entry]; ok {
			add := b * l.opts.Weight * top
			hits[i].Score += add
			hits[i].Matches = append(hits[i].Matches, Match{Term: TermLearned, Fields: learnedField(hits[i].Entry), Score: add})
			delete(bonus, hits[i].Entry)
		}
	}
	// Tools the engine did not rank this high come in on the bonus alone.
	for e, b := range bonus {
		add := b * l.opts.Weight * top
		hits = append(hits, Hit{Entry: e, Score: add, Matches: []Match{{Term: TermLearned, Fields: learnedField(e), Score: add}}})
	}
	slices.SortStableFunc(hits, func(a, b Hit) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.Entry.Name, b.Entry.Name)
	})
	if len(hits) > want {
		hits = hits[:want]
	}
	// A query that past use answers is not weak.
	for i := range hits {
		hits[i].Weak = false
	}
	return hits, nil
}

// Explain-only names of what learning added.
const (
	TermLearned  = "(used before)"
	FieldLearned = "learned"
)
