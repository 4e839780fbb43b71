package search

import (
	"sort"
)

// names lists the fields of a set, for explanations. The lists are made
// once for every set; callers must not change them.
func (s fieldSet) names() []string { return fieldSetNames[s] }

var fieldSetNames = func() [][]string {
	all := make([][]string, 1<<len(fieldNames))
	for s := range all {
		for _, f := range fieldNames {
			if fieldSet(s)&f.bit != 0 {
				all[s] = append(all[s], f.name)
			}
		}
	}
	return all
}()

// Terms of the Matches that explain the reranking: the name boost, and
// what a deprecated tool loses (a negative score).
const (
	TermNameBoost  = "(name boost)"
	TermDeprecated = "(deprecated)"
)

// explainAll explains every hit's score so that its matches add up to it:
// each term's contribution, what the name boost added on top, and what
// being deprecated took off.
func (x *BM25) explainAll(hits []Hit, terms []queryTerm) {
	for i := range hits {
		doc := x.cat.Index(hits[i].Entry.Name)
		ms := x.explain(doc, terms)
		var sum float64
		for _, m := range ms {
			sum += m.Score
		}
		score := hits[i].Score
		if x.deprecated[doc] {
			before := score / x.cfg.deprecated
			ms = append(ms, Match{Term: TermDeprecated, Fields: []string{FieldDescription}, Score: score - before})
			score = before
		}
		if boost := score - sum; boost > 1e-9*score {
			ms = append(ms, Match{Term: TermNameBoost, Fields: []string{FieldTool}, Score: boost})
		}
		hits[i].Matches = ms
	}
}

// explain lists what each query term contributed to a document's score:
// the best of its alternatives, named after the index term that matched.
func (x *BM25) explain(doc int, terms []queryTerm) []Match {
	var ms []Match
	for _, t := range terms {
		var best Match
		for _, a := range t.alts {
			i := sort.Search(len(a.ps), func(i int) bool { return int(a.ps[i].doc()) >= doc })
			if i == len(a.ps) || int(a.ps[i].doc()) != doc {
				continue
			}
			p := a.ps[i]
			if v := a.weight * x.termScore(a.idf, p); v > best.Score {
				term := t.text
				switch a.kind {
				case altStem:
					term = t.text + "~" + a.text
				case altRelated:
					term = t.text + "≈" + a.text
				case altTypo:
					term = t.text + "?" + a.text
				}
				best = Match{Term: term, Fields: p.fields().names(), Score: v}
			}
		}
		if best.Score > 0 {
			ms = append(ms, best)
		}
	}
	return ms
}
