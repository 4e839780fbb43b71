package search_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/evaluate"
	"github.com/toolshelf/toolshelf/search"
)

func TestZZMisses(t *testing.T) {
	dsName := os.Getenv("DS")
	label := os.Getenv("LABEL")
	if dsName == "" {
		t.Skip()
	}
	ds, err := evaluate.Load("../../shared/datasets/" + dsName)
	if err != nil {
		t.Fatal(err)
	}
	eng := search.NewBM25(ds.Catalog)
	n := 0
	for _, q := range ds.Queries {
		if label != "" && !slices.Contains(q.Labels, label) {
			continue
		}
		hits, _ := eng.Search(context.Background(), q.Text, 5)
		var ids []string
		for _, h := range hits {
			ids = append(ids, h.Entry.ID)
		}
		for _, g := range q.Groups {
			covered := false
			for _, id := range g {
				if slices.Contains(ids, id) {
					covered = true
				}
			}
			if !covered {
				n++
				if n <= 40 {
					fmt.Printf("Q: %s\n  want one of: %s\n  got: %s\n", q.Text, strings.Join(g[:min(4, len(g))], " | "), strings.Join(ids, " | "))
				}
			}
		}
	}
	fmt.Println("misses", n)
}
