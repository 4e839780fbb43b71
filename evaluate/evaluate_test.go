package evaluate

import (
	"context"
	"errors"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
)

func TestScore(t *testing.T) {
	l2 := func(i int) float64 { return 1 / math.Log2(float64(i+1)) } // discount at 1-based rank i
	tests := []struct {
		name   string
		groups [][]string
		ids    []string
		want   Metrics
	}{
		{"first hit", [][]string{{"a"}}, []string{"a", "x"},
			Metrics{Recall1: 1, Recall5: 1, Recall10: 1, Complete10: 1, MRR10: 1, NDCG10: 1}},
		{"third hit", [][]string{{"a"}}, []string{"x", "y", "a"},
			Metrics{Recall1: 0, Recall5: 1, Recall10: 1, Complete10: 1, MRR10: 1.0 / 3, NDCG10: l2(3)}},
		{"any member of a group", [][]string{{"a", "b"}}, []string{"x", "b", "a"},
			Metrics{Recall5: 1, Recall10: 1, Complete10: 1, MRR10: 0.5, NDCG10: l2(2)}},
		{"two groups, one found", [][]string{{"a"}, {"b"}}, []string{"a", "x"},
			Metrics{Recall1: 0.5, Recall5: 0.5, Recall10: 0.5, MRR10: 1, NDCG10: 1 / (l2(1) + l2(2))}},
		{"second group past 5", [][]string{{"a"}, {"b"}}, []string{"a", "1", "2", "3", "4", "5", "b"},
			Metrics{Recall1: 0.5, Recall5: 0.5, Recall10: 1, Complete10: 1, MRR10: 1, NDCG10: (l2(1) + l2(7)) / (l2(1) + l2(2))}},
		{"past 10", [][]string{{"a"}}, []string{"1", "2", "3", "4", "5", "6", "7", "8", "9", "10", "a"},
			Metrics{}},
		{"repeat hits gain once", [][]string{{"a", "b"}}, []string{"a", "b"},
			Metrics{Recall1: 1, Recall5: 1, Recall10: 1, Complete10: 1, MRR10: 1, NDCG10: 1}},
		{"no hits", [][]string{{"a"}}, nil, Metrics{}},
		{"abstain", nil, []string{"a"}, Metrics{}},
	}
	for _, tt := range tests {
		got := Score(tt.groups, tt.ids)
		if diff := cmp.Diff(tt.want, got, cmpopts.EquateApprox(0, 1e-9)); diff != "" {
			t.Errorf("%s: Score (-want +got):\n%s", tt.name, diff)
		}
	}
}

func writeDataset(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const tinyTools = `{"id": "mail::send", "server": "mail", "name": "send_email", "description": "Send an email."}
{"id": "mail::list", "server": "mail", "name": "list_inbox", "description": "List inbox messages."}
{"id": "chat::post", "server": "chat", "name": "post_message", "description": "Post a chat message."}
`

func TestRun(t *testing.T) {
	dir := writeDataset(t, map[string]string{
		"tools.jsonl": tinyTools,
		"queries.jsonl": `{"id": "1", "query": "send an email", "relevant_groups": [["mail::send"]], "level": 1}
{"id": "2", "query": "post a message", "relevant_groups": [["chat::post"], ["mail::send"]], "level": 2, "category": "multi"}
{"id": "3", "query": "weather in Paris", "relevant_groups": [], "level": 5}
{"id": "4", "query": "inbox", "relevant": ["mail::list"], "level": 1}
{"id": "5", "query": "!!!", "relevant": ["mail::list"], "level": 1}
`,
	})
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(context.Background(), ds, "bm25", func(c *catalog.Catalog) (search.Engine, error) { return search.NewBM25(c), nil }, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Dataset != "tiny" || r.Engine != "bm25" || r.Tools != 3 || r.Errors != 1 {
		t.Errorf("report header = %+v", r)
	}
	got := map[string]Metrics{}
	for k, m := range r.Subsets {
		if strings.HasPrefix(k, "words=") {
			continue // the length bands, tested below
		}
		got[k] = *m
	}
	// Query 2 finds post_message first, and send_email third: "post" and
	// "send" are related words (package thesaurus).
	multi := round((1+1/math.Log2(4))/(1+1/math.Log2(3)), 4)
	want := map[string]Metrics{
		"all":            {Queries: 4, Recall1: (1 + 0.5 + 1 + 0) / 4, Recall5: 3.0 / 4, Recall10: 3.0 / 4, Complete10: 0.75, MRR10: 0.75, NDCG10: round((1+multi+1)/4, 4), Abstain: &Abstain{Queries: 1, NoHits: 1}},
		"level=1":        {Queries: 3, Recall1: round(2.0/3, 4), Recall5: round(2.0/3, 4), Recall10: round(2.0/3, 4), Complete10: round(2.0/3, 4), MRR10: round(2.0/3, 4), NDCG10: round(2.0/3, 4)},
		"level=2":        {Queries: 1, Recall1: 0.5, Recall5: 1, Recall10: 1, Complete10: 1, MRR10: 1, NDCG10: multi},
		"category=multi": {Queries: 1, Recall1: 0.5, Recall5: 1, Recall10: 1, Complete10: 1, MRR10: 1, NDCG10: multi},
		"level=5":        {Abstain: &Abstain{Queries: 1, NoHits: 1}},
	}
	if diff := cmp.Diff(want, got, cmpopts.EquateApprox(0, 1e-4), cmpopts.IgnoreFields(Metrics{}, "CI95")); diff != "" {
		t.Errorf("subsets (-want +got):\n%s", diff)
	}
	if b := r.Subsets["words=1-8"]; b == nil || b.Queries != 4 {
		t.Errorf("length band: %+v", b)
	}
	if r.Latency.P50 <= 0 || r.Latency.P99 < r.Latency.P50 {
		t.Errorf("latency = %+v", r.Latency)
	}
}

func TestLoadErrors(t *testing.T) {
	tests := []struct {
		name  string
		files map[string]string
		want  string
	}{
		{"no tools", map[string]string{"queries.jsonl": `{"query": "x"}`}, "tools.jsonl: no such file"},
		{"bad tool line", map[string]string{"tools.jsonl": tinyTools + "{bad\n", "queries.jsonl": ""}, "tools.jsonl:4: "},
		{"unknown relevant", map[string]string{"tools.jsonl": tinyTools, "queries.jsonl": "{\"query\": \"a\", \"relevant\": [\"mail::send\"]}\n{\"query\": \"b\", \"relevant\": [\"nope\"]}\n"}, `queries.jsonl:2: relevant tool "nope" is not in tools.jsonl`},
		{"no query text", map[string]string{"tools.jsonl": tinyTools, "queries.jsonl": `{"relevant": []}`}, `queries.jsonl:1: query has no "query" text`},
		{"empty group", map[string]string{"tools.jsonl": tinyTools, "queries.jsonl": `{"query": "q", "relevant_groups": [[]]}`}, "a relevant group is empty"},
		{"no queries", map[string]string{"tools.jsonl": tinyTools, "queries.jsonl": "\n"}, "queries.jsonl: no queries"},
		{"bad servers", map[string]string{"tools.jsonl": tinyTools, "servers.jsonl": "[1]\n", "queries.jsonl": `{"query": "q"}`}, "servers.jsonl:1:"},
	}
	for _, tt := range tests {
		dir := writeDataset(t, tt.files)
		_, err := Load(dir)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: Load error = %v, want it to contain %q", tt.name, err, tt.want)
		}
	}
	if _, err := Load(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("Load of a missing folder succeeded")
	}
	var fe *catalog.FileError
	_, err := Load(writeDataset(t, map[string]string{"tools.jsonl": "{bad\n", "queries.jsonl": ""}))
	if !errors.As(err, &fe) || fe.Line != 1 {
		t.Errorf("Load error = %#v, want a FileError at line 1", err)
	}
}

// datasetDir returns the shared dataset folder (see testenv.Dataset:
// skipped without ../shared, failed in CI).
func datasetDir(t *testing.T, name string) string { return testenv.Dataset(t, name) }

// TestBM25Quality guards the BM25 engine's retrieval quality on the shared
// datasets against regressions. The floors are the baseline of plain BM25
// over server, name, description and parameter names.
func TestBM25Quality(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	floors := []struct {
		dataset, subset string
		recall5         float64
	}{
		{"etom_msc_bench", "level=2", 0.90},
		{"bfcl_live", "all", 0.74},
	}
	for _, f := range floors {
		ds, err := Load(datasetDir(t, f.dataset))
		if err != nil {
			t.Fatal(err)
		}
		r, err := Run(context.Background(), ds, "bm25", func(c *catalog.Catalog) (search.Engine, error) { return search.NewBM25(c), nil }, nil)
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Subsets[f.subset].Recall5; got < f.recall5 {
			t.Errorf("%s %s recall@5 = %.4f, want at least %.2f", f.dataset, f.subset, got, f.recall5)
		} else {
			t.Logf("%s %s recall@5 = %.4f", f.dataset, f.subset, got)
		}
	}
}

// The bootstrap intervals hold the mean, are as wide as the spread of
// the queries says, and are the same every time.
func TestBootstrap(t *testing.T) {
	same := make([]Metrics, 100)
	for i := range same {
		same[i] = Metrics{Recall1: 1, Recall5: 1, Recall10: 1}
	}
	if iv := Bootstrap(same); iv.Recall5 != [2]float64{1, 1} {
		t.Errorf("queries that all agree: %v", iv.Recall5)
	}
	half := make([]Metrics, 400)
	for i := range half {
		if i%2 == 0 {
			half[i] = Metrics{Recall1: 1, Recall5: 1, Recall10: 1}
		}
	}
	iv := Bootstrap(half)
	// The standard error of a mean of 400 coin flips is 0.025.
	if lo, hi := iv.Recall5[0], iv.Recall5[1]; lo > 0.47 || lo < 0.43 || hi < 0.53 || hi > 0.57 {
		t.Errorf("half and half: %v, want about 0.45–0.55", iv.Recall5)
	}
	if again := Bootstrap(half); *again != *iv {
		t.Errorf("not the same twice: %v, %v", iv, again)
	}
}
