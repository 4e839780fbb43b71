package shelf

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
)

// A signature names every parameter with its type, required ones first,
// optional ones marked, enums and long lists cut short.
func TestSignature(t *testing.T) {
	for schema, want := range map[string]string{
		`{"type":"object","properties":{"body":{"type":"string"},"repo":{"type":"string"},"owner":{"type":"string"},"labels":{"type":"array","items":{"type":"string"}},"state":{"enum":["open","closed","all","draft","merged"]},"n":{"type":"integer"}},"required":["owner","repo"]}`: `(owner: string, repo: string, body?: string, labels?: string[], n?: number, state?: "open"|"closed"|"all"|"draft"|…)`,
		`{"type":"object","properties":{"entities":{"type":"array","items":{"type":"object","properties":{"name":{"type":"string"}}}}},"required":["entities"]}`:                                                                                                                        `(entities: object[])`,
		`{"type":"object","properties":{"when":{"anyOf":[{"type":"string"},{"type":"null"}]},"at":{"type":["number","null"]},"x":{"$ref":"#/$defs/X"}}}`:                                                                                                                                `(at?: number, when?: string, x?: object)`,
		`{"type":"object"}`: `()`,
		`not json`:          `()`,
	} {
		if got := Signature(json.RawMessage(schema)); got != want {
			t.Errorf("Signature(%s)\n got %s\nwant %s", schema, got, want)
		}
	}
	var props []string
	for i := range 200 {
		props = append(props, `"parameter_number_`+strings.Repeat("x", i%7)+string(rune('a'+i%26))+`_`+string(rune('a'+i/26))+`":{"type":"string"}`)
	}
	if got := Signature(json.RawMessage(`{"properties":{` + strings.Join(props, ",") + `}}`)); len(got) > maxSignature+20 || !strings.Contains(got, "more)") {
		t.Errorf("200 parameters: %d bytes: %s", len(got), got)
	}
}

// A purpose is the description's first sentence, not cut at an
// abbreviation or a version, and bounded.
func TestPurpose(t *testing.T) {
	for desc, want := range map[string]string{
		"Create a new issue in a GitHub repository. Requires a token.": "Create a new issue in a GitHub repository.",
		"Search files, e.g. by name. Then read them.":                  "Search files, e.g. by name.",
		"Reads v1.2 of the API\nMore lines":                            "Reads v1.2 of the API",
		"  No period at all  ":                                         "No period at all",
		"查询天气。然后返回":                                                    "查询天气",
	} {
		if got := Purpose(desc); got != want {
			t.Errorf("Purpose(%q) = %q, want %q", desc, got, want)
		}
	}
	if got := Purpose(strings.Repeat("word ", 1000)); len(got) > maxPurpose {
		t.Errorf("a description without a period: %d bytes", len(got))
	}
}

// Depth keeps the hits close to the best, at least Min, at most all.
func TestDepthKeep(t *testing.T) {
	hits := func(scores ...float64) []search.Hit {
		var hs []search.Hit
		for _, s := range scores {
			hs = append(hs, search.Hit{Score: s})
		}
		return hs
	}
	d := search.Depth{Ratio: 0.5, Min: 2}
	for _, tt := range []struct {
		hits []search.Hit
		want int
	}{
		{hits(10, 1, 1, 1), 2},       // the best stands out: Min
		{hits(10, 9, 8, 7, 2), 4},    // several alike
		{hits(10), 1},                // fewer than Min
		{nil, 0},                     // none
		{hits(0, 0, 0), 2},           // no scores to judge by
		{hits(10, 6, 5, 5, 5, 4), 5}, // up to the ratio
	} {
		if got := d.Keep(tt.hits); got != tt.want {
			t.Errorf("Keep(%v) = %d, want %d", tt.hits, got, tt.want)
		}
	}
}

// On a catalog of short descriptions, compact matches can cost more than
// whole definitions: an answer never costs more than its five best hits'
// whole definitions (its old shape), whatever its budget.
func TestAnswerNeverCostsMoreThanTheOldShape(t *testing.T) {
	var entries []catalog.Entry
	for i := range 12 {
		// A tool of a few words, whose signature is as long as its
		// definition: the compact match is hardly smaller.
		raw := fmt.Sprintf(`{"name":"note_%02d","description":"Note it.","inputSchema":{"type":"object","properties":{"text":{"type":"string"},"tag":{"type":"string"}},"required":["text"]}}`, i)
		e, err := catalog.ParseTool("notes", json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	s, err := New(&Options{Budget: 10000})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Update(catalog.New(entries, nil))
	found, err := snap.Search(context.Background(), search.Request{Query: "note it"})
	if err != nil {
		t.Fatal(err)
	}
	var all []search.Hit
	for e := range snap.Catalog.All() {
		all = append(all, search.Hit{Entry: e})
	}
	old := WholeCost(all[:6])
	spent := 0
	for _, h := range found.Hits {
		spent += Tokens(CompactMatch(h))
	}
	if len(found.Hits) < OldLimit || spent > old {
		t.Errorf("%d matches costing %d tokens; five whole definitions cost %d", len(found.Hits), spent, old)
	}
	if !strings.Contains(found.Note, "past this answer's budget") {
		t.Errorf("the cut is not said: %q", found.Note)
	}
}
