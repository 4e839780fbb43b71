package search

import (
	"bufio"
	"context"
	"encoding/json"
	"hash/fnv"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
)

// TestWeakFeatures writes, for every query of the shared datasets, what a
// weak flag could be decided on: the whole request's raw scores, its
// strength as the flag measures it today, how many of its words the best
// hit matched, and whether a tool fits. It runs only with
// $TOOLSHELF_WEAK_FEATURES naming the output file (docs/search-quality.md,
// "The weak flag across datasets").
func TestWeakFeatures(t *testing.T) {
	out := os.Getenv("TOOLSHELF_WEAK_FEATURES")
	if out == "" {
		t.Skip("set $TOOLSHELF_WEAK_FEATURES to a file to write the features")
	}
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	enc := json.NewEncoder(f)
	for _, dir := range []string{
		filepath.Join("..", "..", "shared", "datasets", "etom_msc_bench"),
		filepath.Join("..", "..", "shared", "datasets", "bfcl_live"),
		filepath.Join("..", "..", "shared", "datasets", "bfcl_nonlive"),
		filepath.Join("..", "testdata", "datasets", "zh_maps"),
		filepath.Join("..", "..", "shared", "datasets", "mcpdev"),
	} {
		name := filepath.Base(dir)
		c := datasetCatalog(t, filepath.Join(dir, "tools.jsonl"))
		x := NewBM25(c)
		forEachLine(t, filepath.Join(dir, "queries.jsonl"), func(line []byte) {
			var q struct {
				ID       string
				Query    string
				Relevant []string
				Groups   [][]string `json:"relevant_groups"`
			}
			json.Unmarshal(line, &q)
			relevant := map[string]bool{}
			for _, id := range q.Relevant {
				relevant[id] = true
			}
			for _, g := range q.Groups {
				for _, id := range g {
					relevant[id] = true
				}
			}
			enc.Encode(weakFeatures(x, name, q.ID, q.Query, relevant))
		})
	}
}

// features is one query's line.
type features struct {
	Dataset, ID string
	Answerable  bool
	Words       int       // words of the query
	Content     int       // distinct words that are not stop words
	Terms       int       // of them, distinct words the catalog has
	Matched     int       // of those, the ones the best hit matched
	Strength    float64   // the flag's measure today (whole request)
	Weak        bool      // the flag today (after decomposition)
	Scores      []float64 // the whole request's ten best raw scores
	TopRelevant bool
	Top5        bool // a labelled tool in the top 5 of the final ranking
	Half        int
	Covered     float64 // the share of the terms' weight (idf) the best hit matched
	MissedMax   float64 // the largest weight (idf) of a term the best hit did not match, over the largest of all
}

func weakFeatures(x *BM25, dataset, id, text string, relevant map[string]bool) features {
	fe := features{Dataset: dataset, ID: id, Answerable: len(relevant) > 0, Words: len(strings.Fields(text))}
	q, err := ParseQuery(text)
	if err != nil {
		return fe
	}
	terms := x.terms(q)
	fe.Terms = len(terms)
	content := map[string]bool{}
	for _, t := range q.Terms {
		if !stopWords[t.Text] {
			content[foldPlural(t.Text)] = true
		}
	}
	fe.Content = len(content)
	hits := x.rank(terms, nil, 10)
	x.explainAll(hits, terms)
	if len(hits) > 0 {
		fe.Strength = x.strength(hits[0].Score, terms)
		fe.Matched = len(hits[0].Matches)
		fe.TopRelevant = relevant[hits[0].Entry.ID]
		var all, got, most, missed float64
		for _, t := range terms {
			all += t.idf
			most = max(most, t.idf)
			hit := false
			for _, m := range hits[0].Matches {
				if m.Term == t.text || strings.HasPrefix(m.Term, t.text+"~") || strings.HasPrefix(m.Term, t.text+"≈") || strings.HasPrefix(m.Term, t.text+"?") {
					hit = true
				}
			}
			if hit {
				got += t.idf
			} else {
				missed = max(missed, t.idf)
			}
		}
		if all > 0 {
			fe.Covered, fe.MissedMax = got/all, missed/most
		}
	}
	for _, h := range hits {
		fe.Scores = append(fe.Scores, h.Score)
	}
	final, _ := x.Search(context.Background(), text, 10)
	fe.Weak = len(final) > 0 && final[0].Weak
	for _, h := range final[:min(5, len(final))] {
		fe.Top5 = fe.Top5 || relevant[h.Entry.ID]
	}
	h := fnv.New32a()
	h.Write([]byte("half:" + id))
	fe.Half = int(h.Sum32() % 2)
	return fe
}

func datasetCatalog(t *testing.T, path string) *catalog.Catalog {
	var entries []catalog.Entry
	forEachLine(t, path, func(line []byte) {
		var d struct {
			ID, Server, Name, Description string
			InputSchema                   json.RawMessage `json:"input_schema"`
		}
		json.Unmarshal(line, &d)
		raw, _ := json.Marshal(map[string]any{"name": d.Name, "description": d.Description, "inputSchema": d.InputSchema})
		e, err := catalog.ParseTool(d.Server, raw)
		if err != nil {
			t.Fatal(err)
		}
		e.ID = d.ID
		if e.ID == "" {
			e.ID = d.Name
		}
		entries = append(entries, e)
	})
	return catalog.New(entries, nil)
}

func forEachLine(t *testing.T, path string, fn func([]byte)) {
	f, err := os.Open(path)
	if err != nil {
		t.Skip(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		if len(strings.TrimSpace(sc.Text())) > 0 {
			fn(sc.Bytes())
		}
	}
}
