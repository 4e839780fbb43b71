package search

import (
	"regexp"
	"sort"
	"strings"
)

// rerank multiplies the score of each hit by 1 + nameBoost × the share of
// the tool's own name words that the query has (each word weighed by its
// rarity in English, when rarity is on), and by deprecatedFactor when the
// tool's description says it is deprecated, and sorts the hits again:
// "get the current weather" prefers get_current_weather among tools whose
// descriptions match as well, and "read a file" prefers server-filesystem's
// read_text_file to its deprecated read_file, whose shorter description
// matches better.
func (x *BM25) rerank(hits []Hit, terms []queryTerm) {
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
		if x.cfg.deprecated > 0 && Deprecated(hits[i].Entry.Description) {
			hits[i].Score *= x.cfg.deprecated
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return better(&hits[i], &hits[j]) })
}

// deprecatedMark matches a description that says its own tool is
// deprecated ("DEPRECATED: Use read_text_file instead.", "This tool is
// deprecated", "(deprecated)", "deprecated in favour of X"), not one
// about deprecated things ("Identify deprecated NPM packages").
var deprecatedMark = regexp.MustCompile(`DEPRECATED|^\s*\[?\(?(?i:deprecated)\b|(?i:\((deprecated)\)|\b(is|now|been)\s+deprecated\b|\bdeprecated\b[^.]{0,80}\b(use|instead|in favou?r of|replaced)\b)`)

// Deprecated reports whether a tool's description says the tool is
// deprecated.
func Deprecated(description string) bool {
	// Most descriptions do not mention it; the expression is slower.
	if !strings.Contains(description, "eprecat") && !strings.Contains(description, "EPRECAT") {
		return false
	}
	return deprecatedMark.MatchString(description)
}
