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
