package search

import (
	"slices"
	"sync"
)

// maxTypoWords is how many of a request's words are looked up as typos:
// each lookup reads the index terms of about its length, so a hostile
// request of many unknown words costs a bounded time.
const maxTypoWords = 8

// typoTerms holds the index's terms by length, made the first time a
// request has a word the index lacks.
type typoTerms struct {
	once  sync.Once
	byLen map[int][]string
}

// typos returns the index terms one edit away from w (a letter added,
// dropped, changed, or two neighbours swapped: "resart" → "restart",
// "contianer" → "container"), for a word of at least minTypoLen letters
// that the index does not have (and, with the rarity weights loaded, that
// English does not have either: terms asks only for those). The first letter must be the same: people
// seldom mistype it, and a word of another language often differs from
// an English one there ("tarea" is not "area").
func (x *BM25) typos(w string) []string {
	if len(w) < minTypoLen || !isLetters(w) {
		return nil
	}
	x.typoIndex.once.Do(func() {
		x.typoIndex.byLen = map[int][]string{}
		for t := range x.postings {
			if isLetters(t) {
				x.typoIndex.byLen[len(t)] = append(x.typoIndex.byLen[len(t)], t)
			}
		}
		for _, ts := range x.typoIndex.byLen {
			slices.Sort(ts)
		}
	})
	var out []string
	for n := len(w) - 1; n <= len(w)+1; n++ {
		for _, t := range x.typoIndex.byLen[n] {
			if t[0] == w[0] && oneEdit(w, t) {
				out = append(out, t)
			}
		}
	}
	return out
}

// minTypoLen is the shortest word looked up as a typo: shorter words have
// too many neighbours one edit away.
const minTypoLen = 4

// oneEdit reports whether a and b differ by exactly one insertion,
// deletion, substitution, or swap of adjacent letters.
func oneEdit(a, b string) bool {
	if len(a) > len(b) {
		a, b = b, a
	}
	i := 0
	for i < len(a) && a[i] == b[i] {
		i++
	}
	if i == len(a) {
		return len(b) == len(a)+1 // one letter added at the end (or equal: no edit)
	}
	switch len(b) - len(a) {
	case 0:
		if a[i+1:] == b[i+1:] {
			return true // changed
		}
		return i+1 < len(a) && a[i] == b[i+1] && a[i+1] == b[i] && a[i+2:] == b[i+2:] // swapped
	case 1:
		return a[i:] == b[i+1:] // one letter added
	}
	return false
}
