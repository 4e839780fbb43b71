package messages

import (
	"bytes"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/policy"
)

var update = flag.Bool("update", false, "rewrite golden files")

// prepareCase is a golden test input: testdata/prepare/NAME.json.
type prepareCase struct {
	About         string    `json:"about"`
	Model         string    `json:"model"`
	Enabled       bool      `json:"enabled"`
	Deferred      []string  `json:"deferred"`
	BetasDisabled bool      `json:"betasDisabled"`
	Announce      string    `json:"announce"`
	Tools         []Tool    `json:"tools"`
	History       []Message `json:"history"`
	Servers       []string  `json:"servers"`
}

// TestPrepareGolden runs every case in testdata/prepare and compares the
// prepared request with NAME.golden.json (rewritten with -update).
func TestPrepareGolden(t *testing.T) {
	files, _ := filepath.Glob("testdata/prepare/*.json")
	var cases []string
	for _, f := range files {
		if !strings.HasSuffix(f, ".golden.json") {
			cases = append(cases, f)
		}
	}
	if len(cases) < 9 {
		t.Fatalf("only %d golden cases", len(cases))
	}
	for _, file := range cases {
		name := strings.TrimSuffix(filepath.Base(file), ".json")
		t.Run(name, func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var c prepareCase
			dec := json.NewDecoder(bytes.NewReader(data))
			dec.DisallowUnknownFields()
			if err := dec.Decode(&c); err != nil {
				t.Fatal(err)
			}
			turn := Turn{
				Model: c.Model, Tools: c.Tools, History: c.History, SearchTool: "tool_search",
				Decision:      policy.Decision{Enabled: c.Enabled, Deferred: c.Deferred},
				BetasDisabled: c.BetasDisabled, Servers: c.Servers,
			}
			if c.Announce == "delta" {
				turn.Announce = AnnounceDelta
			}
			p, err := Prepare(turn)
			if err != nil {
				t.Fatal(err)
			}
			got, err := json.MarshalIndent(map[string]any{"request": p.Request, "betas": p.Betas, "delta": p.Delta}, "", "  ")
			if err != nil {
				t.Fatal(err)
			}
			golden := strings.TrimSuffix(file, ".json") + ".golden.json"
			if *update {
				os.WriteFile(golden, append(got, '\n'), 0o644)
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), string(got)+"\n"); diff != "" {
				t.Errorf("%s\n(-want +got):\n%s", c.About, diff)
			}
			checkInvariants(t, p)
		})
	}
}

// checkInvariants holds for every prepared request: every reference
// names a tool that is sent, not every tool is deferred, no tool has both
// defer_loading and cache_control, and no annotation reaches the wire.
func checkInvariants(t *testing.T, p *Prepared) {
	t.Helper()
	sent := map[string]bool{}
	loaded := 0
	for _, tool := range p.Request.Tools {
		sent[tool.Name] = true
		if !tool.DeferLoading {
			loaded++
		}
		if tool.DeferLoading && tool.CacheControl != nil {
			t.Errorf("%s has defer_loading and cache_control", tool.Name)
		}
	}
	if len(p.Request.Tools) > 0 && loaded == 0 {
		t.Error("every tool is deferred")
	}
	for _, m := range p.Request.Messages {
		if m.Boundary != nil || m.Delta != nil {
			t.Error("an annotation reached the wire")
		}
		for _, b := range m.Content {
			for _, n := range references(b) {
				if !sent[n] {
					t.Errorf("a reference to %s, which is not sent", n)
				}
			}
		}
	}
}
