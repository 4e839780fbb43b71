package search_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/evaluate"
	"github.com/toolshelf/toolshelf/search"
)

// variants are the steps from the seed's BM25 to the default engine, as
// docs/search-quality.md reports them.
var variants = []struct {
	name string
	v    search.Variant
}{
	{"seed (BM25F)", search.Variant{}},
	{"+ parameter descriptions 0.3", search.Variant{ParamDescs: 0.3}},
	{"+ numbers dropped", search.Variant{ParamDescs: 0.3, DropNumbers: true}},
	{"+ stems 0.5", search.Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5}},
	{"+ clause fusion", search.Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true}},
	{"+ name boost 0.4, top 30", search.Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true, NameBoost: 0.4, Depth: 30}},
	{"+ rarity of query words in English", best(0)},
	{"+ weak flag 0.30 (default)", best(weakDefault)},
	{"  parameter descriptions 0.5", search.Variant{ParamDescs: 0.5, DropNumbers: true, Stems: 0.5, Decompose: true}},
	{"  parameter descriptions 1", search.Variant{ParamDescs: 1, DropNumbers: true, Stems: 0.5, Decompose: true}},
	{"  stems 0.7", search.Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.7, Decompose: true}},
	{"  name boost 0.2, top 10", search.Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true, NameBoost: 0.2, Depth: 10}},
	{"  name boost 1, top 30", search.Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true, NameBoost: 1, Depth: 30}},
	{"  name boost 0.6, top 100", search.Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true, NameBoost: 0.6, Depth: 100}},
	{"  server descriptions 0.1", withServerInfo(0.1)},
	{"  server descriptions 0.3", withServerInfo(0.3)},
	{"  server descriptions 1", withServerInfo(1)},
}

// weakDefault is the default engine's weak-match threshold.
const weakDefault = 0.30

func best(weak float64) search.Variant {
	return search.Variant{ParamDescs: 0.3, DropNumbers: true, Stems: 0.5, Decompose: true, NameBoost: 0.4, Depth: 30, Rarity: true, Weak: weak}
}

func withServerInfo(w float64) search.Variant {
	v := best(0)
	v.ServerInfo = w
	return v
}

// TestVariants prints the headline metrics of each variant on the
// datasets in ../../shared/datasets. It runs only when asked:
//
//	VARIANTS=1 go test -run TestVariants -v ./search/
func TestVariants(t *testing.T) {
	if os.Getenv("VARIANTS") == "" {
		t.Skip("set VARIANTS=1 to measure the engine variants")
	}
	var dss []*evaluate.Dataset
	for _, n := range []string{"etom_msc_bench", "bfcl_live", "bfcl_nonlive"} {
		ds, err := evaluate.Load("../../shared/datasets/" + n)
		if err != nil {
			t.Skip(err)
		}
		dss = append(dss, ds)
	}
	fmt.Printf("| variant | L1 r@5 | L2 r@5 | L3 r@5 | L4 r@5 | L4 c@10 | L5 flagged | L1–4 flagged | live r@5 | nonlive r@5 |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, vr := range variants {
		cols := []string{vr.name}
		for _, ds := range dss {
			r, err := evaluate.Run(context.Background(), ds, vr.name, func(c *catalog.Catalog) (search.Engine, error) {
				return search.NewBM25Variant(c, vr.v), nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if ds.Name != "etom_msc_bench" {
				cols = append(cols, fmt.Sprintf("%.3f", r.Subsets["all"].Recall5))
				continue
			}
			weak := 0
			for _, l := range []string{"level=1", "level=2", "level=3", "level=4"} {
				cols = append(cols, fmt.Sprintf("%.3f", r.Subsets[l].Recall5))
				weak += r.Subsets[l].Weak
			}
			a := r.Subsets["level=5"].Abstain
			cols = append(cols, fmt.Sprintf("%.3f", r.Subsets["level=4"].Complete10),
				fmt.Sprintf("%d/%d", max(a.NoHits, a.Weak), a.Queries), fmt.Sprintf("%d/%d", weak, r.Subsets["all"].Queries))
		}
		fmt.Printf("| %s |\n", strings.Join(cols, " | "))
	}
}

// TestWeakThresholds sweeps the weak-match threshold of the default
// engine (WEAK=1 go test -run TestWeakThresholds -v ./search/).
func TestWeakThresholds(t *testing.T) {
	if os.Getenv("WEAK") == "" {
		t.Skip("set WEAK=1 to sweep the weak-match threshold")
	}
	for _, w := range []float64{0.2, 0.24, 0.26, 0.28, 0.3, 0.32, 0.34} {
		vr := best(w)
		for _, n := range []string{"etom_msc_bench", "bfcl_live", "bfcl_nonlive"} {
			ds, err := evaluate.Load("../../shared/datasets/" + n)
			if err != nil {
				t.Skip(err)
			}
			r, err := evaluate.Run(context.Background(), ds, "bm25", func(c *catalog.Catalog) (search.Engine, error) {
				return search.NewBM25Variant(c, vr), nil
			}, nil)
			if err != nil {
				t.Fatal(err)
			}
			weak := r.Subsets["all"].Weak
			abst := ""
			if a := r.Subsets["level=5"]; a != nil && a.Abstain != nil {
				abst = fmt.Sprintf(" no-fit flagged %d/%d", a.Abstain.Weak, a.Abstain.Queries)
			}
			fmt.Printf("weak %.2f %-15s answerable flagged %d/%d%s\n", w, n, weak, r.Subsets["all"].Queries, abst)
		}
	}
}
