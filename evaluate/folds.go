package evaluate

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
)

// Fold returns the fold, of k, that a query belongs to: by a hash of its
// id, so that folds mix the dataset's levels and categories and do not
// change when queries are added.
func Fold(q Query, k int) int {
	h := fnv.New32a()
	h.Write([]byte(q.ID))
	return int(h.Sum32() % uint32(k))
}

// FoldHistory is what was learned that the queries of fold f are
// evaluated with: every other fold's answerable queries, each as a past
// search after which the first tool of each of its groups was called.
// A query whose text is also the text of a query in fold f is left out,
// so that no evaluated query is in its own history, even as a duplicate.
func FoldHistory(ds *Dataset, k, f int) []search.LearnedQuery {
	held := map[string]bool{}
	for _, q := range ds.Queries {
		if Fold(q, k) == f {
			held[q.Text] = true
		}
	}
	byID := map[string]string{}
	for e := range ds.Catalog.All() {
		byID[e.ID] = e.Name
	}
	var past []search.LearnedQuery
	for _, q := range ds.Queries {
		if Fold(q, k) == f || held[q.Text] || len(q.Groups) == 0 {
			continue
		}
		p := search.LearnedQuery{Query: q.Text}
		for _, g := range q.Groups {
			if len(g) > 0 {
				if name, ok := byID[g[0]]; ok {
					p.Tools = append(p.Tools, name)
				}
			}
		}
		past = append(past, p)
	}
	return past
}

// RunFolds measures an engine that learns from use without leakage: the
// queries are split into k folds; each fold is searched with the other
// folds as what was learned (FoldHistory), and only the held fold is
// scored. The report covers every query once.
func RunFolds(ctx context.Context, ds *Dataset, engine string, build func(*catalog.Catalog) (search.Engine, error), k int, opts *Options) (*Report, error) {
	if k < 2 {
		return nil, errors.New("learn folds must be at least 2")
	}
	var lopts *search.LearnedOptions
	if opts != nil {
		lopts = opts.Learned
	}
	return run(ctx, ds, fmt.Sprintf("%s, learning from use (%d folds)", engine, k), opts, func() (func(Query) search.Engine, error) {
		base, err := build(ds.Catalog)
		if err != nil {
			return nil, err
		}
		engines := make([]search.Engine, k)
		for f := range k {
			engines[f] = search.NewLearned(base, ds.Catalog, FoldHistory(ds, k, f), lopts)
		}
		return func(q Query) search.Engine { return engines[Fold(q, k)] }, nil
	})
}

// Half returns which half of a dataset a query is in, 0 or 1, by a hash
// of its id: settings are chosen on half 0 and reported on half 1, so
// that a figure is not measured on the queries that chose it.
func Half(q Query) int {
	h := fnv.New32a()
	h.Write([]byte("half:" + q.ID))
	return int(h.Sum32() % 2)
}
