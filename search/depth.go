package search

// Depth chooses how many of a ranked search's hits an answer keeps, by
// how sure the ranking is: a hit whose score is close to the best one's
// may be what was asked for, one far below it seldom is. So when the best
// hit stands out the answer is short, and when several are alike it is
// longer, up to the request's limit. Published work on choosing the
// depth per query raised correct tool selection from 87.1% to 93.1% at an
// average of 7 tools; here the rule is chosen by recall within a token
// budget on one half of the dev sets (docs/search-quality.md).
type Depth struct {
	// Ratio keeps the hits scoring at least Ratio times the best score.
	Ratio float64
	// Min is the fewest hits kept (when there are that many).
	Min int
}

// DefaultDepth is the rule a search tool answers with when the model
// gives no limit, chosen on half 0 of the dev sets: the fewest tokens
// whose recall within 1,000 tokens is within 0.005 of keeping all ten
// on each (docs/search-quality.md, "Compact answers").
var DefaultDepth = Depth{Ratio: 0.25, Min: 3}

// Keep returns how many of hits, best first, the rule keeps.
func (d Depth) Keep(hits []Hit) int {
	if len(hits) == 0 {
		return 0
	}
	n := min(max(d.Min, 1), len(hits))
	top := hits[0].Score
	if top <= 0 {
		return n
	}
	for n < len(hits) && hits[n].Score >= d.Ratio*top {
		n++
	}
	return n
}
