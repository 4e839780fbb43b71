package search

import (
	"context"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/toolshelf/toolshelf/internal/zhdict"
)

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
	kind   altKind
	idf    float64
	weight float64
	ps     []posting
}

// altKind says how an alternative stands for its query word.
type altKind uint8

const (
	altSelf    altKind = iota // the word itself
	altStem                   // a word of the same stem
	altRelated                // an everyday word related to it (package thesaurus)
	altTypo                   // a word one edit away, for a word the index lacks
)

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
	var parts []string
	for _, c := range cs {
		cq, err := ParseQuery(c)
		if err != nil {
			continue
		}
		lists = append(lists, x.part(cq, q.required(), depth))
		weights = append(weights, 1)
		parts = append(parts, c)
	}
	hits = fuse(lists, partLabels(parts), weights, x.cfg.fuseK, limit)
	markWeak(hits, allWeak(lists))
	return hits, nil
}

// part ranks one part of a request, the whole of it or one clause, on
// its own, and flags the hits weak when the best is.
func (x *BM25) part(q Query, required []string, limit int) []Hit {
	terms := x.terms(q)
	depth := limit
	if x.cfg.flat > 0 {
		depth = max(limit, standoutDepth)
	}
	hits := x.rank(terms, required, depth)
	reason := ""
	switch {
	case len(hits) == 0:
	case x.strength(hits[0].Score, terms) < x.cfg.weak && (x.cfg.flat == 0 || standout(hits) < x.cfg.flat):
		reason = WeakLowMatch
	case x.cfg.reach > 0 && standout(hits) < x.cfg.reachFlat && x.reach(q, terms) < x.cfg.reach:
		reason = WeakNotHere
	}
	hits = hits[:min(limit, len(hits))]
	x.explainAll(hits, terms)
	if reason == "" && x.cfg.stemOnly && len(hits) > 0 && stemsOnly(hits[0].Matches) {
		reason = WeakOnlyAlike
	}
	if reason != "" {
		markWeak(hits, reason)
	}
	return hits
}

// stemsOnly reports whether matches are all of words of the same stem as
// a request's words, or related to them, none of the words themselves
// (see bm25Config.stemOnly).
func stemsOnly(ms []Match) bool {
	for _, m := range ms {
		if m.Term == TermNameBoost || m.Term == TermDeprecated {
			continue // what the rerank added for the words matched
		}
		if !strings.Contains(m.Term, "~") && !strings.Contains(m.Term, "≈") {
			return false
		}
	}
	return len(ms) > 0
}

// reach is the share of a request's distinct English words, stop words
// aside, that the catalog has (itself or a word of its stem). Words the
// built-in English vocabulary lacks are left out, so that a request in
// another language is not taken for one the catalog cannot serve.
func (x *BM25) reach(q Query, terms []queryTerm) float64 {
	words := map[string]bool{}
	for _, t := range q.Terms {
		if !stopWords[t.Text] {
			words[foldPlural(t.Text)] = true
		}
	}
	in, all := 0, 0
	for w := range words {
		if x.words != nil && !x.words.Knows(w) {
			continue
		}
		all++
		if x.has(w, terms) {
			in++
		}
	}
	if all == 0 {
		return 1
	}
	return float64(in) / float64(all)
}

// has reports whether the catalog has word w of a request, itself or a
// word of its stem: a word met only through a related word or a typo's
// correction is not one the catalog has.
func (x *BM25) has(w string, terms []queryTerm) bool {
	for _, t := range terms {
		if t.text != w {
			continue
		}
		for _, a := range t.alts {
			if a.kind == altSelf || a.kind == altStem {
				return true
			}
		}
	}
	return false
}

// standoutDepth is how many hits standout compares.
const standoutDepth = 10

// standout is how far the best hit is above the mean of the next ones,
// as a share of its score: 0 when they tie, 1 when it is alone.
func standout(hits []Hit) float64 {
	if len(hits) == 0 || hits[0].Score <= 0 {
		return 0
	}
	if len(hits) == 1 {
		return 1
	}
	var rest float64
	for _, h := range hits[1:min(len(hits), standoutDepth)] {
		rest += h.Score
	}
	rest /= float64(min(len(hits), standoutDepth) - 1)
	return (hits[0].Score - rest) / hits[0].Score
}

// fuseDepth is how deep each ranking fused for a multi-step request goes.
const fuseDepth = 10

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
				d := p.doc()
				if sc.best[d] == 0 {
					mine = append(mine, d)
				}
				sc.best[d] = max(sc.best[d], v)
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
	top := docTop{limit: limit, heap: sc.top[:0]}
	for _, d := range touched {
		c := candidate{sc.score[d], d}
		sc.score[d] = 0
		if top.accepts(c) && (len(required) == 0 || x.hasRequired(int(d), required)) {
			top.push(c)
		}
	}
	best := top.sorted()
	hits := make([]Hit, len(best))
	for i, c := range best {
		hits[i] = Hit{Entry: x.cat.Entry(int(c.doc)), Score: c.score}
	}
	if x.cfg.nameBoost > 0 || x.cfg.deprecated > 0 {
		x.rerank(hits, best, terms) // before best goes back to the pool
	}
	sc.touched, sc.mine, sc.top = touched, mine, best
	select {
	case x.scratch <- sc:
	default:
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
	top           []candidate
}

// candidate is a document and its score, kept by rank's docTop.
type candidate struct {
	score float64
	doc   int32
}

// ahead orders candidates as better orders hits: by descending score,
// then by name, which in a catalog is document order.
func ahead(a, b candidate) bool {
	if a.score != b.score {
		return a.score > b.score
	}
	return a.doc < b.doc
}

// docTop keeps the best limit candidates: topK for bm25's documents,
// which compares two numbers instead of two hits and makes a Hit only for
// the candidates kept.
type docTop struct {
	limit int
	heap  []candidate // a min-heap by ahead: heap[0] is the worst kept
}

func (t *docTop) accepts(c candidate) bool {
	return len(t.heap) < t.limit || ahead(c, t.heap[0])
}

func (t *docTop) push(c candidate) {
	if len(t.heap) < t.limit {
		t.heap = append(t.heap, c)
		for i := len(t.heap) - 1; i > 0; {
			p := (i - 1) / 2
			if !ahead(t.heap[p], t.heap[i]) {
				break
			}
			t.heap[p], t.heap[i] = t.heap[i], t.heap[p]
			i = p
		}
		return
	}
	t.heap[0] = c
	for i, n := 0, len(t.heap); ; {
		worst := i
		for _, k := range [2]int{2*i + 1, 2*i + 2} {
			if k < n && ahead(t.heap[worst], t.heap[k]) {
				worst = k
			}
		}
		if worst == i {
			return
		}
		t.heap[i], t.heap[worst] = t.heap[worst], t.heap[i]
		i = worst
	}
}

// sorted returns the kept candidates, best first.
func (t *docTop) sorted() []candidate {
	slices.SortFunc(t.heap, func(a, b candidate) int {
		if ahead(a, b) {
			return -1
		}
		return 1
	})
	return t.heap
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
	// raw keeps each word as written, for a typo's lookup: folding a
	// plural off "taks" leaves "tak", too short to correct.
	words, raw := make([]string, 0, len(q.Terms)), make([]string, 0, len(q.Terms))
	for _, t := range q.Terms {
		if keep(t) {
			words, raw = append(words, foldPlural(t.Text)), append(raw, t.Text)
		}
	}
	if len(words) == 0 {
		for _, t := range q.Terms {
			words, raw = append(words, foldPlural(t.Text)), append(raw, t.Text)
		}
	}
	var terms []queryTerm
	seen := map[string]bool{}
	typoWords := 0
	for i, w := range words {
		if seen[w] {
			continue
		}
		seen[w] = true
		qt := x.wordTerm(w, 1)
		// A word English has ("bake", "cake") is not a typo of another
		// ("base", "case") because the catalog lacks it.
		if x.cfg.typos > 0 && len(qt.alts) == 0 && typoWords < maxTypoWords && (x.words == nil || !x.words.Knows(raw[i])) {
			typoWords++
			for _, t := range x.typos(raw[i]) {
				qt.add(x, foldPlural(t), x.cfg.typos, altTypo)
			}
		}
		if x.cfg.related > 0 {
			for _, r := range relatedWords(w) {
				weight := x.cfg.related
				if r.Derived {
					weight = x.cfg.derived
				}
				qt.add(x, r.Text, weight, altRelated)
			}
		}
		terms = x.appendTerm(terms, qt)
	}
	if x.cfg.fields[fGloss].w > 0 && zhdict.HasHan(q.Text) {
		terms = x.glossTerms(terms, q.Text, seen)
	}
	return terms
}

// glossTerms adds to terms the English meanings of the Chinese words of
// a request (package zhdict, as the index glosses Chinese descriptions),
// each at glossQueryWeight: a request in Chinese (or in Japanese written
// with the same characters) finds the tools described in English.
func (x *BM25) glossTerms(terms []queryTerm, text string, seen map[string]bool) []queryTerm {
	for _, tok := range Tokenize(zhdict.Gloss(text)) {
		w := foldPlural(tok)
		if seen[w] || stopWords[w] || isNumber(w) {
			continue
		}
		seen[w] = true
		terms = x.appendTerm(terms, x.wordTerm(w, glossQueryWeight))
	}
	return terms
}

// wordTerm is the query term of w at weight: the word and, when stems are
// on, the index words of its stem.
func (x *BM25) wordTerm(w string, weight float64) queryTerm {
	qt := queryTerm{text: w}
	qt.add(x, w, weight, altSelf)
	if x.cfg.stems > 0 {
		x.addStems(&qt, w, weight*x.cfg.stems, altStem)
	}
	return qt
}

// appendTerm appends qt to terms, weighed by its word's rarity in
// English when the configuration weighs by it, unless the index has none
// of its alternatives.
func (x *BM25) appendTerm(terms []queryTerm, qt queryTerm) []queryTerm {
	if len(qt.alts) == 0 {
		return terms
	}
	if x.words != nil {
		qt.scale(x.words.Rarity(qt.text))
	}
	return append(terms, qt)
}

// maxRelatedShare: a related word is left out when more than one in
// maxRelatedShare tools have it, and more than minRelatedCap: quality on
// mcpdev half 0 and the older sets is unchanged at 10 (20 and 50 lost),
// and a search of thousands of tools scores fewer documents; a small
// catalog, where one tool is a large share, keeps them all.
const (
	maxRelatedShare = 10
	minRelatedCap   = 100
)

// addStems makes the index terms of the same stem as w alternatives of t.
func (x *BM25) addStems(t *queryTerm, w string, weight float64, kind altKind) {
	for _, s := range x.stemmed[stemKey(w)] {
		if sameStem(w, s) {
			t.add(x, s, weight, kind)
		}
	}
	for _, s := range shortForms(w) {
		t.add(x, s, weight, kind)
	}
}

// add makes an index term an alternative of t, unless it already is one
// or is not in the index.
func (t *queryTerm) add(x *BM25, term string, weight float64, kind altKind) {
	ps := x.postings[term]
	if len(ps) == 0 || kind == altRelated && len(ps) > max(minRelatedCap, x.cat.Len()/maxRelatedShare) {
		// A related word one tool in ten says would add little to a
		// score (its idf is low) and much to the documents scored.
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
	t.alts = append(t.alts, alt{text: term, kind: kind, idf: idf, weight: weight, ps: ps})
	if kind != altRelated {
		// A related word may match, but is not what a full match of the
		// request's word is measured by (strength, coverage).
		t.idf = max(t.idf, idf*weight)
	}
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
// hint contains every required term (lower case, without spaces).
func (x *BM25) hasRequired(doc int, required []string) bool {
	e := x.cat.Entry(doc)
	for _, r := range required {
		if !containsFold(e.Name, r) && !containsFold(e.Description, r) && !containsFold(e.SearchHint, r) {
			return false
		}
	}
	return true
}

// containsFold reports whether strings.ToLower(s) contains sub, which is
// lower case, without making the lower-cased copy: it is asked of every
// candidate of a +required search. For an ASCII sub, a match among s's
// bytes folded one by one is a match in strings.ToLower(s) (its ASCII runs
// stay as they are), and the only other way to one is a character whose
// lower case is ASCII: U+0130 (i) and U+212A (k), the only two.
func containsFold(s, sub string) bool {
	if len(sub) == 0 {
		return true
	}
	for i := 0; i < len(sub); i++ {
		if sub[i] >= utf8.RuneSelf {
			return strings.Contains(strings.ToLower(s), sub)
		}
	}
	first := sub[0]
	for i := 0; i+len(sub) <= len(s); i++ {
		if asciiLower(s[i]) != first {
			continue
		}
		j := 1
		for j < len(sub) && asciiLower(s[i+j]) == sub[j] {
			j++
		}
		if j == len(sub) {
			return true
		}
	}
	if strings.Contains(s, "\u0130") || strings.Contains(s, "\u212a") {
		return strings.Contains(strings.ToLower(s), sub)
	}
	return false
}

func asciiLower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
