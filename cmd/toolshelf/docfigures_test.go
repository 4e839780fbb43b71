package main

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

// The compact answers' table of docs/search-quality.md says what
// 'toolshelf eval --answers' gives: for each dataset, the gateway before
// issue 42 and the defaults now, half 1 (held out) and half 0. A change
// that moves a figure fails here until the table says it.
func TestSearchQualityAnswersAsDocumented(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	type answers struct {
		R1000 float64 `json:"recall@1000tokens"`
		R2500 float64 `json:"recall@2500tokens"`
		P50   int     `json:"tokens_p50"`
		P90   int     `json:"tokens_p90"`
		Match float64 `json:"matches"`
		CI    [][2]float64
	}
	eval := func(dir, half string, flags ...string) answers {
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
	for _, name := range []string{"bfcl_live", "bfcl_nonlive", "etom_msc_bench"} {
		dir := testenv.Dataset(t, name)
		for _, row := range []struct {
			label string
			flags []string
			bold  bool
		}{
			{"before", []string{"--answers", "full", "--limit", "5", "--depth", "off", "--budget", "0", "--companions=false"}, false},
			{"now", []string{"--answers", "compact"}, true},
		} {
			held, in := eval(dir, "1", row.flags...), eval(dir, "0", row.flags...)
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
}
