package main

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

// answers are an evaluation's figures of compact answers.
type answers struct {
	R1000 float64 `json:"recall@1000tokens"`
	R2500 float64 `json:"recall@2500tokens"`
	P50   int     `json:"tokens_p50"`
	P90   int     `json:"tokens_p90"`
	Match float64 `json:"matches"`
	CI    [][2]float64
}

// The compact answers' table of docs/search-quality.md says what
// 'toolshelf eval --answers' gives: for each dataset, the gateway before
// issue 42 and the defaults now, half 1 (held out) and half 0. A change
// that moves a figure fails here until the table says it.
func TestSearchQualityAnswersAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	t.Parallel() // in-process evaluations, which set no process variable
	for _, name := range []string{"bfcl_live", "bfcl_nonlive", "etom_msc_bench"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			answersAsDocumented(t, name)
		})
	}
}

// answersAsDocumented checks one dataset's rows of the compact-answers
// table.
func answersAsDocumented(t *testing.T, name string) {
	dir := testenv.Dataset(t, name)
	for _, row := range []struct {
		label string
		flags []string
		bold  bool
	}{
		{"before", []string{"--answers", "full", "--limit", "5", "--depth", "off", "--budget", "0", "--companions=false"}, false},
		{"now", []string{"--answers", "compact"}, true},
	} {
		held, in := evalAnswers(t, dir, "1", row.flags...), evalAnswers(t, dir, "0", row.flags...)
		r := fmt.Sprintf("%.3f", held.R1000)
		if row.bold {
			r = "**" + r + "**"
		}
		if len(held.CI) == 0 {
			t.Fatalf("%s %s: no interval", name, row.label)
		}
		testenv.DocSays(t, "docs/search-quality.md", fmt.Sprintf("| %s | %s | %s (%.3f–%.3f) | %.3f | %.3f | %s / %s | %.1f |",
			name, row.label, r, held.CI[0][0], held.CI[0][1], in.R1000, held.R2500, testenv.Thousands(held.P50), testenv.Thousands(held.P90), held.Match))
	}
}

// evalAnswers runs 'toolshelf eval --json' on one half of a dataset and
// returns its compact answers' figures over every request.
func evalAnswers(t *testing.T, dir, half string, flags ...string) answers {
	t.Helper()
	r := runCLI(t, append([]string{"eval", "--dataset", dir, "--half", half, "--json"}, flags...)...)
	if r.code != 0 {
		t.Fatalf("eval: %s", r.stderr)
	}
	var out struct {
		Subsets map[string]struct {
			Answers answers `json:"answers"`
		} `json:"subsets"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatal(err)
	}
	a := out.Subsets["all"].Answers
	var ci struct {
		Subsets map[string]struct {
			Answers struct {
				CI [][]float64 `json:"ci95"`
			} `json:"answers"`
		} `json:"subsets"`
	}
	json.Unmarshal([]byte(r.stdout), &ci)
	for _, c := range ci.Subsets["all"].Answers.CI {
		a.CI = append(a.CI, [2]float64{c[0], c[1]})
	}
	return a
}

// The mcpdev table of docs/search-quality.md: the default engine on the
// half of a real MCP catalog's requests no setting was chosen on (half
// 1), beside half 0, which chose them, per category, and the weak flag's
// three figures on half 1.
func TestSearchQualityMcpdevAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	t.Parallel() // in-process evaluations, which set no process variable
	dir := testenv.Dataset(t, "mcpdev")
	type metrics struct {
		Queries    int     `json:"queries"`
		Recall1    float64 `json:"recall@1"`
		Recall5    float64 `json:"recall@5"`
		Recall10   float64 `json:"recall@10"`
		Complete10 float64 `json:"complete@10"`
		Weak       int     `json:"weak"`
		WeakMissed int     `json:"weak_missed"`
		Abstain    *struct {
			Queries, Weak int
			NoHits        int `json:"no_hits"`
		} `json:"abstain"`
		CI95 *struct {
			Recall5 [2]float64 `json:"recall@5"`
		} `json:"ci95"`
	}
	eval := func(half string) map[string]metrics {
		t.Helper()
		r := runCLI(t, "eval", "--dataset", dir, "--half", half, "--answers", "none", "--json")
		if r.code != 0 {
			t.Fatalf("eval: %s", r.stderr)
		}
		var out struct{ Subsets map[string]metrics }
		if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
			t.Fatal(err)
		}
		return out.Subsets
	}
	held, in := eval("1"), eval("0")
	var want []string
	for _, c := range []string{"explicit", "terse", "implicit", "multistep", "nonenglish", "all"} {
		key := "category=" + c
		if c == "all" {
			key = "all"
		}
		h, i := held[key], in[key]
		ci := "–"
		if h.CI95 != nil {
			ci = fmt.Sprintf("%.3f–%.3f", h.CI95.Recall5[0], h.CI95.Recall5[1])
		}
		want = append(want, fmt.Sprintf("| %s | %d | %.3f | **%.3f** (%s) | %.3f | %.3f | %.3f | %.3f |",
			c, h.Queries, h.Recall1, h.Recall5, ci, h.Recall10, h.Complete10, i.Recall5, i.Complete10))
	}
	a, no := held["all"], held["category=unanswerable"].Abstain
	if no == nil {
		t.Fatal("no abstain figures for the unanswerable requests")
	}
	want = append(want, fmt.Sprintf("answerable requests flagged weak: %d of %d; of them, %d had no right tool in the top 5; requests no tool serves flagged or answered with nothing: %d of %d",
		a.Weak, a.Queries, a.WeakMissed, no.Weak+no.NoHits, no.Queries))
	testenv.DocSays(t, "docs/search-quality.md", want...)
}

// eval --misses prints each request with a step not found, the steps,
// and the hits down to the first tool of one, each with its terms.
func TestEvalMisses(t *testing.T) {
	dir := testenv.Dataset(t, "mcpdev")
	r := runCLI(t, "eval", "--dataset", dir, "--half", "1", "--answers", "none", "--misses")
	if r.code != 0 {
		t.Fatalf("eval: %s", r.stderr)
	}
	_, list, ok := strings.Cut(r.stdout, "requests with a step not found in the top 5:")
	if !ok {
		t.Fatalf("no misses listed:\n%s", r.stdout)
	}
	blocks := strings.Split(strings.TrimSpace(list), "\n\n")
	var n int
	fmt.Sscan(r.stdout[strings.LastIndex(r.stdout[:strings.Index(r.stdout, "requests with a step")], "\n")+1:], &n)
	if n == 0 || len(blocks) != n {
		t.Fatalf("%d blocks for %d misses", len(blocks), n)
	}
	for _, b := range blocks {
		lines := strings.Split(b, "\n")
		if !strings.HasPrefix(lines[0], "md-") || !strings.HasPrefix(strings.TrimSpace(lines[1]), "wanted: ") {
			t.Errorf("a miss without its request or step:\n%s", b)
		}
	}
	// A hit is explained in --explain's terms: a related word as "≈".
	if !strings.Contains(list, "≈") || !strings.Contains(list, "(description") {
		t.Errorf("the hits carry no terms:\n%s", list)
	}
}
