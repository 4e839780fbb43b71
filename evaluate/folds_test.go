package evaluate

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
)

// foldDataset has tools whose names say nothing of what people ask for,
// queries asked twice in the same words (as people do), and one query
// whose text appears under two ids.
func foldDataset(t *testing.T) *Dataset {
	t.Helper()
	var es []catalog.Entry
	for _, n := range []string{"zq_alpha", "zq_beta", "zq_gamma", "zq_delta"} {
		raw, _ := json.Marshal(map[string]any{"name": n, "description": "Tool " + n + ".", "inputSchema": map[string]any{"type": "object"}})
		e, err := catalog.ParseTool("s", raw)
		if err != nil {
			t.Fatal(err)
		}
		e.ID = n
		es = append(es, e)
	}
	ds := &Dataset{Name: "folds", Catalog: catalog.New(es, nil)}
	texts := []string{"book a table for dinner tonight", "send money to my landlord", "play some jazz music", "what is the weather in paris"}
	for i := range 40 {
		tool := es[i%4].ID
		ds.Queries = append(ds.Queries, Query{ID: fmt.Sprintf("q%d", i), Text: texts[i%4], Groups: [][]string{{tool}}})
	}
	return ds
}

// No evaluated query is in its own history: not itself, not the same
// words under another id.
func TestFoldHistoryHasNoLeak(t *testing.T) {
	ds := foldDataset(t)
	const k = 5
	for f := range k {
		past := FoldHistory(ds, k, f)
		for _, q := range ds.Queries {
			if Fold(q, k) != f {
				continue
			}
			if slices.ContainsFunc(past, func(p search.LearnedQuery) bool { return p.Query == q.Text }) {
				t.Errorf("fold %d: %s (%q) is in its own history", f, q.ID, q.Text)
			}
		}
	}
	// The folds cover every query once.
	seen := map[string]int{}
	for _, q := range ds.Queries {
		seen[q.ID]++
		if f := Fold(q, k); f < 0 || f >= k {
			t.Errorf("%s in fold %d", q.ID, f)
		}
	}
	if len(seen) != len(ds.Queries) {
		t.Errorf("%d queries, %d seen", len(ds.Queries), len(seen))
	}
}

// With every text repeated across folds, nothing can be learned without
// leaking: learning from use must score exactly as the engine alone.
func TestRunFoldsCannotLearnFromItself(t *testing.T) {
	ds := foldDataset(t)
	build := func(c *catalog.Catalog) (search.Engine, error) { return search.New("bm25", c) }
	plain, err := Run(context.Background(), ds, "bm25", build, nil)
	if err != nil {
		t.Fatal(err)
	}
	learned, err := RunFolds(context.Background(), ds, "bm25", build, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if p, l := plain.Subsets["all"].Recall5, learned.Subsets["all"].Recall5; p != l {
		t.Errorf("recall@5 %v alone, %v learning: the evaluated queries leaked into their history", p, l)
	}

	// Asked in other words elsewhere, a query is learned.
	for i := range ds.Queries {
		if i%8 == 0 {
			ds.Queries[i].Text += " please"
		}
	}
	learned, err = RunFolds(context.Background(), ds, "bm25", build, 5, nil)
	if err != nil {
		t.Fatal(err)
	}
	if l := learned.Subsets["all"].Recall5; l <= plain.Subsets["all"].Recall5 {
		t.Errorf("recall@5 %v learning, %v alone: nothing was learned from similar past queries", l, plain.Subsets["all"].Recall5)
	}
}
