package evaluate

import (
	"slices"

	"github.com/toolshelf/toolshelf/search"
)

// MissDepth is how deep a labelled tool must rank for its step to count
// as found when misses are listed: recall@5's depth.
const MissDepth = 5

// Miss is a query one of whose steps no labelled tool served within the
// first MissDepth hits, with what ranked above it and why, so that a
// miss can be read without writing code.
type Miss struct {
	ID     string   `json:"id"`
	Query  string   `json:"query"`
	Labels []string `json:"labels,omitempty"`
	// Missed are the steps not found, each the interchangeable tools
	// labelled for it.
	Missed [][]string `json:"missed"`
	// Hits are the hits ranked, best first, down to the first tool of a
	// missed step or the depth searched.
	Hits []Ranked `json:"hits"`
	// Found is where the first tool of a missed step ranked, 0 when it
	// was not among the hits at all.
	Found int `json:"found"`
}

// Ranked is one hit of a miss: its rank, score and the terms that gave
// it (search.Hit.Matches, what --explain prints).
type Ranked struct {
	Rank    int            `json:"rank"`
	ID      string         `json:"id"`
	Score   float64        `json:"score"`
	Weak    bool           `json:"weak,omitempty"`
	Wanted  bool           `json:"wanted,omitempty"`
	Matches []search.Match `json:"matches,omitempty"`
}

// missOf returns the miss of q given its hits, or nil when every step
// was found within MissDepth.
func missOf(q Query, hits []search.Hit) *Miss {
	var missed [][]string
	for _, g := range q.Groups {
		found := false
		for _, h := range hits[:min(MissDepth, len(hits))] {
			if slices.Contains(g, h.Entry.ID) {
				found = true
				break
			}
		}
		if !found {
			missed = append(missed, g)
		}
	}
	if len(missed) == 0 {
		return nil
	}
	m := &Miss{ID: q.ID, Query: q.Text, Labels: q.Labels, Missed: missed}
	for i, h := range hits {
		wanted := false
		for _, g := range missed {
			wanted = wanted || slices.Contains(g, h.Entry.ID)
		}
		m.Hits = append(m.Hits, Ranked{Rank: i + 1, ID: h.Entry.ID, Score: h.Score, Weak: h.Weak, Wanted: wanted, Matches: h.Matches})
		if wanted {
			m.Found = i + 1
			break
		}
	}
	return m
}
