package search

import (
	"strings"

	"github.com/toolshelf/toolshelf/internal/thesaurus"
	"github.com/toolshelf/toolshelf/internal/wordvec"
)

// stopWords are English function words dropped from natural-language
// queries. Verbs that name tool actions ("get", "show", "list", "find")
// are deliberately absent: they are what tool names are made of.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a about an and are as at be but by can could do does for from
		has have how i if in into is it its me my of on or our please so some that the their
		them then there these this to up us want we what when where which who will with would
		you your
		s t re ve ll d m`) { // what follows an apostrophe: "who's", "don't", "we're"

		stopWords[w] = true
	}
}

// foldPlural folds simple English plurals to their singular: "issues" →
// "issue", "entries" → "entry", "branches" → "branch". It leaves words
// ending in "ss", "us" and "is" alone ("access", "status", "analysis"), and
// short words, which are too often not plurals ("gas", "bus").
func foldPlural(t string) string {
	n := len(t)
	switch {
	case n > 4 && strings.HasSuffix(t, "ies"):
		return t[:n-3] + "y"
	case n > 4 && (strings.HasSuffix(t, "sses") || strings.HasSuffix(t, "shes") || strings.HasSuffix(t, "ches") || strings.HasSuffix(t, "xes")):
		return t[:n-2]
	case n > 3 && t[n-1] == 's' && t[n-2] != 's' && t[n-2] != 'u' && t[n-2] != 'i':
		return t[:n-1]
	}
	return t
}

// stemKey buckets words by their first five letters, where words of one
// stem are found. Shorter words are left alone: "list" and "listing",
// "read" and "ready" are different words.
func stemKey(w string) string {
	if len(w) < 5 {
		return ""
	}
	return w[:5]
}

// sameStem reports whether two words are forms of one stem: they share at
// least five letters, and all but at most three letters of the shorter
// word ("multiply" and "multiplication", "translate" and "translation",
// but not "process" and "procurement").
func sameStem(a, b string) bool {
	if a == b {
		return false
	}
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n >= 5 && n >= min(len(a), len(b))-3
}

// shortForms are the index terms a word may be a form of where stemKey
// cannot look: the -s, -ing, -ed and -er forms of a word under five
// letters ("rent" → "renting", "rented", "renter"), with the final e
// dropped or the last consonant doubled as English spells them ("use" →
// "using", "run" → "running"); and for a longer word, the short word it
// is such a form of ("renting" → "rent", "making" → "make"). Only these
// endings, so that "read" does not find "ready", nor "list" "listen".
func shortForms(w string) []string {
	n := len(w)
	if n < 3 || !isLetters(w) {
		return nil
	}
	var out []string
	if n < 5 {
		last := w[n-1]
		base := w
		if last == 'e' {
			base = w[:n-1]
			out = append(out, w+"s", w+"d", w+"r", w+"rs")
		} else {
			out = append(out, w+"s", w+"ed", w+"er", w+"ers")
		}
		out = append(out, base+"ing", base+"ings")
		if doublesLast(w) {
			d := w + string(last)
			out = append(out, d+"ing", d+"ed", d+"er", d+"ers")
		}
		return out
	}
	for _, suffix := range []string{"ings", "ing", "ers", "er", "ed"} {
		stem, ok := strings.CutSuffix(w, suffix)
		if !ok {
			continue
		}
		if k := len(stem); k >= 4 && stem[k-1] == stem[k-2] && doublesLast(stem[:k-1]) {
			stem = stem[:k-1] // "stopped" → "stop"
		}
		if len(stem) >= 3 && len(stem) <= 4 {
			out = append(out, stem, stem+"e")
		}
	}
	return out
}

// doublesLast reports whether English doubles a short word's last letter
// before -ing and -ed: one vowel, then one consonant ("run", "stop", but
// not "rent", "read", "fix").
func doublesLast(w string) bool {
	n := len(w)
	if n < 3 {
		return false
	}
	vowel := func(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }
	c := w[n-1]
	return !vowel(c) && strings.IndexByte("wxy", c) < 0 && vowel(w[n-2]) && !vowel(w[n-3])
}

func isLetters(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

// IsStopWord reports whether w (lower case) is a word that says nothing
// about a tool ("the", "please", "want"), as search leaves such words out.
func IsStopWord(w string) bool { return stopWords[w] }

// Rarity is how rare w (lower case) is in English, as the default engine
// weighs query words: near 0 for the commonest words, 1 for rare ones
// and words the built-in vectors do not know.
func Rarity(w string) float64 { return wordvec.Builtin().Rarity(w) }

// relatedWords returns the everyday words related to w (package
// thesaurus), folded as the index folds words; a word the list does not
// have is looked up as the base form it may be a form of ("saving",
// "saved", "saves" → "save").
func relatedWords(w string) []thesaurus.Word {
	rel := thesaurus.Related(w)
	if rel == nil {
		for _, b := range baseForms(w) {
			if rel = thesaurus.Related(b); rel != nil {
				break
			}
		}
	}
	out := rel[:0] // Related's slice is ours
	for _, r := range rel {
		if r.Text = foldPlural(r.Text); r.Text != w {
			out = append(out, r)
		}
	}
	return out
}

// baseForms are the words w may be the -ing, -ed or -s form of, likeliest
// first.
func baseForms(w string) []string {
	var out []string
	for _, suffix := range []string{"ing", "ed", "es", "s"} {
		stem, ok := strings.CutSuffix(w, suffix)
		if !ok || len(stem) < 2 {
			continue
		}
		out = append(out, stem)
		if suffix == "ing" || suffix == "ed" {
			out = append(out, stem+"e")
			if n := len(stem); n >= 3 && stem[n-1] == stem[n-2] {
				out = append(out, stem[:n-1]) // "stopped" → "stop"
			}
		}
	}
	return out
}
