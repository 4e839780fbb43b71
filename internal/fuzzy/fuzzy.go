// Package fuzzy finds the known names closest to a mistyped one, for
// "did you mean" suggestions.
package fuzzy

import (
	"sort"
	"strings"
)

// Distance is the Levenshtein edit distance between a and b, in bytes,
// ignoring ASCII case. It costs len(a)×len(b): callers bound the lengths
// (Closest does).
func Distance(a, b string) int {
	a, b = strings.ToLower(a), strings.ToLower(b)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}

// MaxName is the longest name Closest compares: a model can send a name
// of megabytes, and no suggestion is worth more than a few microseconds
// per known name. Longer names are cut to it.
const MaxName = 256

// MaxDist bounds the edits Closest allows, whatever the caller asks.
const MaxDist = 16

// Closest returns up to n of known, nearest to name first, leaving out
// those further than maxDist edits (at most MaxDist). Names that contain
// name, or that name contains, count as one edit away: "create_issue" is
// close to "mcp__github__create_issue". Its work is bounded: name is cut
// to MaxName bytes, and a known name whose length alone puts it further
// than maxDist is not compared.
func Closest(name string, known []string, n, maxDist int) []string {
	type cand struct {
		s string
		d int
	}
	if len(name) > MaxName {
		name = name[:MaxName]
	}
	maxDist = min(maxDist, MaxDist)
	var cs []cand
	lname := strings.ToLower(name)
	for _, k := range known {
		d := maxDist + 1
		if abs(len(name)-len(k)) <= maxDist && len(k) <= MaxName {
			d = Distance(name, k)
		}
		if lk := strings.ToLower(k); lname != "" && (strings.Contains(lk, lname) || strings.Contains(lname, lk)) {
			d = min(d, 1)
		}
		if d <= maxDist {
			cs = append(cs, cand{k, d})
		}
	}
	sort.SliceStable(cs, func(i, j int) bool {
		if cs[i].d != cs[j].d {
			return cs[i].d < cs[j].d
		}
		return cs[i].s < cs[j].s
	})
	var out []string
	for _, c := range cs[:min(n, len(cs))] {
		out = append(out, c.s)
	}
	return out
}

func abs(n int) int {
	if n < 0 {
		return -n
	}
	return n
}
