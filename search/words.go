package search

import "strings"

// stopWords are English function words dropped from natural-language
// queries. Verbs that name tool actions ("get", "show", "list", "find")
// are deliberately absent: they are what tool names are made of.
var stopWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`a an and are as at be but by can could do does for from
		has have how i if in into is it its me my of on or our please so some that the their
		them then there these this to up us want we what when where which who will with would
		you your`) {
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
