package evaluate

import (
	"bufio"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/search"
)

var updateRankings = flag.Bool("update-rankings", false, "rewrite testdata/rankings/*.txt from the current ranking")

// TestRankingsUnchanged keeps speed work honest: every query of the three
// shared datasets and zh_maps ranks the same ten tools in the same order,
// with the same weak flag, as when testdata/rankings was written. A change
// meant to move rankings rewrites the files (-update-rankings) and reports
// its recall figures; a change meant only to be faster must leave them.
// Each query's ranking is kept as a short hash, so that the files stay
// small; a mismatch prints the query and its ranking now.
func TestRankingsUnchanged(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	dirs := map[string]string{
		"bfcl_live":      datasetDir(t, "bfcl_live"),
		"bfcl_nonlive":   datasetDir(t, "bfcl_nonlive"),
		"etom_msc_bench": datasetDir(t, "etom_msc_bench"),
		"zh_maps":        filepath.Join("..", "testdata", "datasets", "zh_maps"),
	}
	for _, name := range []string{"bfcl_live", "bfcl_nonlive", "etom_msc_bench", "zh_maps"} {
		ds, err := Load(dirs[name])
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"bm25", "hybrid"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				t.Parallel()
				e, err := search.New(kind, ds.Catalog)
				if err != nil {
					t.Fatal(err)
				}
				var got []string
				var shown []string
				for _, q := range ds.Queries {
					hits, err := e.Search(context.Background(), q.Text, 10)
					line := ranking(hits, err)
					sum := sha256.Sum256([]byte(line))
					got = append(got, q.ID+" "+hex.EncodeToString(sum[:5]))
					shown = append(shown, line)
				}
				file := filepath.Join("testdata", "rankings", name+"-"+kind+".txt")
				if *updateRankings {
					if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(file, []byte(strings.Join(got, "\n")+"\n"), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				want, err := readLines(file)
				if err != nil {
					t.Fatalf("%v (go test ./evaluate -run TestRankingsUnchanged -update-rankings writes it)", err)
				}
				if len(want) != len(got) {
					t.Fatalf("%s has %d queries, the dataset %d", file, len(want), len(got))
				}
				changed := 0
				for i := range got {
					if got[i] != want[i] {
						if changed < 5 {
							t.Errorf("query %s %q now ranks: %s", ds.Queries[i].ID, ds.Queries[i].Text, shown[i])
						}
						changed++
					}
				}
				if changed > 0 {
					t.Errorf("%d of %d rankings changed", changed, len(got))
				}
			})
		}
	}
}

// ranking writes a search's answer as one line: the ids of its hits and
// whether they are flagged weak.
func ranking(hits []search.Hit, err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	var b strings.Builder
	for _, h := range hits {
		b.WriteString(h.Entry.ID)
		b.WriteByte(' ')
	}
	if len(hits) > 0 && hits[0].Weak {
		b.WriteString("(weak)")
	}
	return b.String()
}

func readLines(file string) ([]string, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var lines []string
	s := bufio.NewScanner(f)
	for s.Scan() {
		lines = append(lines, s.Text())
	}
	if err := s.Err(); err != nil {
		return nil, fmt.Errorf("%s: %v", file, err)
	}
	return lines, nil
}
