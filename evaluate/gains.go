package evaluate

import (
	"context"
	"slices"

	"github.com/toolshelf/toolshelf/search"
)

// Gain is what mending one tool's words could bring on a dataset: the
// queries that need it, those whose top k misses it today, and the
// recall@k the dataset would gain at most if all of them found it.
type Gain struct {
	Queries int     `json:"queries"`
	Missed  int     `json:"missed"`
	AtMost  float64 `json:"recall_gain_at_most"`
}

// Gains measures, for each tool id of ds's catalog in ids, what mending
// its words could bring at recall@k, searching with eng.
func Gains(ctx context.Context, ds *Dataset, eng search.Engine, ids []string, k int) (map[string]Gain, error) {
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	out := map[string]Gain{}
	answerable := 0
	for _, q := range ds.Queries {
		if len(q.Groups) == 0 {
			continue
		}
		answerable++
		var needs []string
		for _, g := range q.Groups {
			for _, id := range g {
				if want[id] {
					needs = append(needs, id)
				}
			}
		}
		if len(needs) == 0 {
			continue
		}
		hits, err := eng.Search(ctx, q.Text, k)
		if err != nil && ctx.Err() != nil {
			return nil, ctx.Err()
		}
		found := map[string]bool{}
		for _, h := range hits {
			found[h.Entry.ID] = true
		}
		for _, id := range needs {
			g := out[id]
			g.Queries++
			// The tool's group is covered today when any tool of it is
			// found; then mending this one adds nothing.
			covered := false
			for _, grp := range q.Groups {
				if slices.Contains(grp, id) {
					for _, other := range grp {
						covered = covered || found[other]
					}
				}
			}
			if !covered {
				g.Missed++
				g.AtMost += 1 / float64(len(q.Groups))
			}
			out[id] = g
		}
	}
	for id, g := range out {
		if answerable > 0 {
			g.AtMost = round(g.AtMost/float64(answerable), 4)
		}
		out[id] = g
	}
	return out, nil
}
