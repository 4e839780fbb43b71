package search

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestLearned(t *testing.T) {
	c := realCatalog(t)
	base := NewBM25(c)
	past := []LearnedQuery{
		{Query: "jot down that the deploy is on friday", Tools: []string{"mcp__memory__add_observations"}},
		{Query: "show me what the page looks like", Tools: []string{"mcp__playwright__browser_take_screenshot"}},
		{Query: "a tool that was removed", Tools: []string{"mcp__gone__tool"}},
	}
	l := NewLearned(base, c, past, nil)
	ctx := context.Background()

	// A query unlike every past query ranks exactly as without usage.
	for _, q := range []string{"create a pull request", "list my stripe customers", "what is on the calendar for friday"} {
		want, _ := base.Search(ctx, q, 8)
		got, _ := l.Search(ctx, q, 8)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%q changed with usage (-without +with):\n%s", q, diff)
		}
	}
	// A query like a past one lifts what was used after it.
	const q, used = "please jot down that the deploy is on friday", "mcp__memory__add_observations"
	rank := func(hits []Hit) int {
		for i, h := range hits {
			if h.Entry.Name == used {
				return i + 1
			}
		}
		return 99
	}
	before, _ := base.Search(ctx, q, 8)
	after, _ := l.Search(ctx, q, 8)
	if rank(before) <= 2 || rank(after) > 2 {
		t.Errorf("%s at %d without usage, %d with it", used, rank(before), rank(after))
	}
	for _, h := range after {
		if h.Entry.Name == used {
			if m := h.Matches; len(m) == 0 || m[len(m)-1].Term != TermLearned {
				t.Errorf("the boost is not explained: %+v", m)
			}
		}
	}
}

// Many past queries for one tool (the same words reordered, say) lift it
// no more than one identical past query does.
func TestLearnedBonusIsCapped(t *testing.T) {
	c := realCatalog(t)
	base := NewBM25(c)
	const q, tool = "read the entire knowledge graph", "mcp__playwright__browser_take_screenshot"
	one := NewLearned(base, c, []LearnedQuery{{Query: q, Tools: []string{tool}}}, nil)
	var many []LearnedQuery
	for _, p := range []string{q, "the entire knowledge graph read", "entire knowledge graph read the", "knowledge graph read the entire", "graph read the entire knowledge"} {
		many = append(many, LearnedQuery{Query: p, Tools: []string{tool}})
	}
	score := func(l *Learned) float64 {
		hits, _ := l.Search(context.Background(), q, 8)
		for _, h := range hits {
			if h.Entry.Name == tool {
				return h.Score
			}
		}
		return 0
	}
	if a, b := score(one), score(NewLearned(base, c, many, nil)); b > a*1.0001 {
		t.Errorf("five permutations give %.3f, one identical query %.3f", b, a)
	}
}
