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
// matches better. docs[i] is hits[i]'s document.
func (x *BM25) rerank(hits []Hit, docs []candidate, terms []queryTerm) {
	words := map[string]bool{}
	for _, t := range terms {
		for _, a := range t.alts {
			words[a.text] = true
		}
	}
	for i := range hits {
		d := docs[i].doc
		var have, all float64
		for _, w := range x.nameWords[x.nameAt[d]:x.nameAt[d+1]] {
			r := float64(w.rarity)
			all += r
			if words[w.text] {
				have += r
			}
		}
		if all > 0 {
			hits[i].Score *= 1 + x.cfg.nameBoost*have/all
		}
		if x.deprecated[d] {
			hits[i].Score *= x.cfg.deprecated
		}
	}
	sort.SliceStable(hits, func(i, j int) bool { return better(&hits[i], &hits[j]) })
}

// nameWord is one word of a tool's own name, folded as in the index, with
// its rarity in English (1 when rarity is off).
type nameWord struct {
	text   string
	rarity float32
}

// rerankFacts decides once per tool what the rerank needs of it: the
// words of its own name and whether its description says it is
// deprecated. Deciding them per search was a fifth of a search's time.
func (x *BM25) rerankFacts() {
	n := x.cat.Len()
	x.nameAt = make([]int32, n+1)
	x.deprecated = make([]bool, n)
	var toks []string
	words := 0 // counted first: grown by doubling, the list was four times what it kept
	for i := range n {
		words += len(appendTokens(toks[:0], x.cat.Entry(i).Tool))
	}
	x.nameWords = make([]nameWord, 0, words)
	for i := range n {
		e := x.cat.Entry(i)
		toks = appendTokens(toks[:0], e.Tool)
		for _, w := range toks {
			w = foldPlural(w)
			r := float32(1)
			if x.words != nil {
				r = float32(x.words.Rarity(w))
			}
			x.nameWords = append(x.nameWords, nameWord{w, r})
		}
		x.nameAt[i+1] = int32(len(x.nameWords))
		x.deprecated[i] = x.cfg.deprecated > 0 && Deprecated(e.Description)
	}
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
