package search

import (
	"sort"
)

// boostNames multiplies the score of each hit by 1 + nameBoost × the
// share of the tool's own name words that the query has (each word
// weighed by its rarity in English, when rarity is on), and sorts the
// hits again: "get the current weather" prefers get_current_weather among
// tools whose descriptions match as well.
func (x *BM25) boostNames(hits []Hit, terms []queryTerm) {
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
			if x.words != nil {
				r = x.words.Rarity(w)
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
