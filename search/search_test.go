package search

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"unicode/utf8"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

var update = flag.Bool("update", false, "rewrite golden files")

// tinyCatalog builds a catalog from (server, name, description) triples.
func tinyCatalog(t testing.TB, tools ...[3]string) *catalog.Catalog {
	t.Helper()
	var entries []catalog.Entry
	for _, tl := range tools {
		raw, _ := json.Marshal(map[string]any{"name": tl[1], "description": tl[2], "inputSchema": map[string]any{"type": "object"}})
		e, err := catalog.ParseTool(tl[0], raw)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	return catalog.New(entries, nil)
}

// realCatalog loads the built-in catalog: the tools/list results of the
// pinned npm MCP servers of testdata/servers, run as examples/servers.json
// runs them (519 tools from 20 servers).
func realCatalog(t testing.TB) *catalog.Catalog {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "internal", "builtin", "catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	c, err := catalog.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

type scored struct {
	Name  string
	Score float64
}

func scores(hits []Hit) []scored {
	var out []scored
	for _, h := range hits {
		out = append(out, scored{h.Entry.Name, h.Score})
	}
	return out
}

// The worked example of Claude Code's keyword scoring.
func TestKeywordSeedExample(t *testing.T) {
	c := tinyCatalog(t,
		[3]string{"slack", "send_message", ""},
		[3]string{"slack", "list_channels", ""},
		[3]string{"github", "create_issue", ""},
		[3]string{"email", "send_email", ""},
	)
	hits, err := NewKeyword(c).Search(context.Background(), "slack send", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []scored{
		{"mcp__slack__send_message", 24},
		{"mcp__email__send_email", 12},
		{"mcp__slack__list_channels", 12},
	}
	if diff := cmp.Diff(want, scores(hits)); diff != "" {
		t.Errorf("scores (-want +got):\n%s", diff)
	}
}

func TestKeywordScoring(t *testing.T) {
	c := tinyCatalog(t,
		[3]string{"fs", "read_file", "Read a file from disk."},
		[3]string{"fs", "list_dir", "List a directory that already exists; reads nothing."},
		[3]string{"db", "spreadsheet_rows", "Rows of a spreadsheet."},
		[3]string{"", "Reader", "A built-in tool."},
		[3]string{"", "NotebookEdit", "Edit a notebook cell."},
		[3]string{"github", "create_pull_request", "Create a pull request."},
		[3]string{"gitlab", "create_merge_request", "Open a merge request on GitLab."},
	)
	k := NewKeyword(c)
	tests := []struct {
		query string
		want  []scored
	}{
		// "read" is a part of read_file (+12, +2 description), inside a part
		// of Reader (+5, built-in) and of spreadsheet (+6); "already" and
		// "reads" are not the word "read".
		{"read", []scored{{"mcp__fs__read_file", 14}, {"mcp__db__spreadsheet_rows", 6}, {"Reader", 5}}},
		// +required: only tools mentioning github survive, ranked by the rest.
		{"+github request", []scored{{"mcp__github__create_pull_request", 12 + 12 + 2}}},
		{"+gitlab create", []scored{{"mcp__gitlab__create_merge_request", 12 + 12 + 2}}},
		// The full-name fallback: "bookedit" spans two name parts.
		{"bookedit", []scored{{"NotebookEdit", 3}}},
		{"zebra", nil},
		{"mcp__fs", []scored{{"mcp__fs__list_dir", 1}, {"mcp__fs__read_file", 1}}},
		{"mcp__github__create_pull_request", []scored{{"mcp__github__create_pull_request", 1}}},
	}
	for _, tt := range tests {
		hits, err := k.Search(context.Background(), tt.query, 0)
		if err != nil {
			t.Errorf("Search(%q): %v", tt.query, err)
			continue
		}
		if diff := cmp.Diff(tt.want, scores(hits)); diff != "" {
			t.Errorf("Search(%q) (-want +got):\n%s", tt.query, diff)
		}
	}
}

func TestContainsWord(t *testing.T) {
	tests := []struct {
		text, term string
		want       bool
	}{
		{"read a file", "read", true},
		{"already threaded spreadsheet", "read", false},
		{"reads", "read", false},
		{"(read)", "read", true},
		{"create_issue", "issue", false}, // _ is a word character, as in \b
		{"pre-read", "read", true},
		{"bread read", "read", true},
		{"café read", "read", true},
		{"re", "read", false},
		{"", "read", false},
	}
	for _, tt := range tests {
		if got := containsWord(tt.text, tt.term); got != tt.want {
			t.Errorf("containsWord(%q, %q) = %v, want %v", tt.text, tt.term, got, tt.want)
		}
		re := regexp.MustCompile(`\b` + regexp.QuoteMeta(tt.term) + `\b`)
		if re.MatchString(tt.text) != tt.want {
			t.Errorf("test case disagrees with \\b%s\\b on %q", tt.term, tt.text)
		}
	}
}

func TestKeywordHint(t *testing.T) {
	raw := `{"name":"query","description":"Run it.","_meta":{"anthropic/searchHint":"sql database"}}`
	e, err := catalog.ParseTool("db", json.RawMessage(raw))
	if err != nil {
		t.Fatal(err)
	}
	c := catalog.New([]catalog.Entry{e}, nil)
	hits, err := NewKeyword(c).Search(context.Background(), "sql", 0)
	if err != nil {
		t.Fatal(err)
	}
	want := []Hit{{Entry: c.Entry(0), Score: 4, Matches: []Match{{Term: "sql", Fields: []string{FieldHint}, Score: 4}}}}
	if diff := cmp.Diff(want, hits); diff != "" {
		t.Errorf("hint search (-want +got):\n%s", diff)
	}
}

func TestBM25Ranking(t *testing.T) {
	c := tinyCatalog(t,
		[3]string{"a", "send_email", "Send an email message."},
		[3]string{"b", "post_message", "Post a message to a channel."},
		[3]string{"c", "archive", "Archive old email."},
		[3]string{"d", "weather", "Current weather."},
	)
	x := NewBM25(c)
	hits, err := x.Search(context.Background(), "email", 0)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, h := range hits {
		names = append(names, h.Entry.Name)
	}
	// In the name beats in the description only; weather has no "email".
	if diff := cmp.Diff([]string{"mcp__a__send_email", "mcp__c__archive"}, names); diff != "" {
		t.Errorf("ranking (-want +got):\n%s", diff)
	}
	if got := hits[0].Matches; len(got) != 2 || !cmp.Equal(got[0].Fields, []string{FieldName, FieldTool, FieldDescription}) || got[1].Term != TermNameBoost {
		t.Errorf("matches of send_email = %+v, want email in name, tool and description, and the name boost", got)
	}

	// +required filters.
	hits, _ = x.Search(context.Background(), "+channel message", 0)
	if len(hits) != 1 || hits[0].Entry.Name != "mcp__b__post_message" {
		t.Errorf("+channel message = %v, want only post_message", scores(hits))
	}

	// A query is a set of terms: repeats, stop words and plurals change
	// nothing.
	once, _ := x.Search(context.Background(), "weather", 0)
	for _, q := range []string{"weather weather", "the weather, please", "weathers"} {
		got, _ := x.Search(context.Background(), q, 0)
		if !cmp.Equal(scores(once), scores(got)) {
			t.Errorf("Search(%q) = %v, want %v as for \"weather\"", q, scores(got), scores(once))
		}
	}
	// A query of stop words only still searches.
	if hits, _ := x.Search(context.Background(), "an", 0); len(hits) != 1 || hits[0].Entry.Name != "mcp__a__send_email" {
		t.Errorf("stop-word-only query found %v, want send_email, the tool with \"an\"", scores(hits))
	}
}

func TestFoldPlural(t *testing.T) {
	for in, want := range map[string]string{
		"issues": "issue", "entries": "entry", "branches": "branch", "boxes": "box", "classes": "class",
		"files": "file", "access": "access", "status": "status", "analysis": "analysis", "gas": "gas",
		"list": "list", "repos": "repo",
	} {
		if got := foldPlural(in); got != want {
			t.Errorf("foldPlural(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestRegex(t *testing.T) {
	raw := `{"name":"get_forecast","description":"Weather forecast.","inputSchema":{"type":"object","properties":{"city":{"type":"string","description":"The CITY to look up"}}}}`
	e, _ := catalog.ParseTool("wx", json.RawMessage(raw))
	c := catalog.New([]catalog.Entry{e}, nil)
	x := NewRegex(c)
	tests := []struct {
		pattern string
		fields  []string
		err     string
	}{
		{pattern: "forecast", fields: []string{FieldName, FieldDescription}},
		{pattern: "^city$", fields: []string{FieldParams}},
		{pattern: "city to", fields: []string{FieldParamDescs}},
		{pattern: "weather|rain", fields: []string{FieldDescription}},
		{pattern: "snow"},
		{pattern: "(unclosed", err: `invalid pattern "(unclosed": missing closing )`},
		{pattern: strings.Repeat("a", 201), err: "the limit is 200"},
		{pattern: "  ", err: "pattern is empty"},
	}
	for _, tt := range tests {
		hits, err := x.Search(context.Background(), tt.pattern, 0)
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("Search(%q) error = %v, want %q", tt.pattern, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("Search(%q): %v", tt.pattern, err)
			continue
		}
		var got []string
		if len(hits) > 0 {
			got = hits[0].Matches[0].Fields
		}
		if diff := cmp.Diff(tt.fields, got); diff != "" {
			t.Errorf("Search(%q) fields (-want +got):\n%s", tt.pattern, diff)
		}
	}
}

func TestBadInput(t *testing.T) {
	c := tinyCatalog(t, [3]string{"s", "t", "d"})
	for _, kind := range Kinds {
		e, err := New(kind, c)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := e.Search(context.Background(), "t", -1); err == nil || !strings.Contains(err.Error(), "positive integer") {
			t.Errorf("%s: negative limit error = %v", kind, err)
		}
		if _, err := e.Search(context.Background(), "", 0); err == nil {
			t.Errorf("%s: empty query succeeded", kind)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if _, err := e.Search(ctx, "t", 0); err == nil {
			t.Errorf("%s: search with a cancelled context succeeded", kind)
		}
	}
	for _, kind := range []string{"bm25", "keyword"} {
		e, _ := New(kind, c)
		if _, err := e.Search(context.Background(), "?!", 0); err != ErrNoLetters {
			t.Errorf("%s: symbol-only query error = %v, want %v", kind, err, ErrNoLetters)
		}
	}
	if _, err := New("vector", c); err == nil || !strings.Contains(err.Error(), "bm25, keyword, regex") {
		t.Errorf("New(vector) error = %v", err)
	}
}

func TestEmptyCatalog(t *testing.T) {
	c := catalog.New(nil, nil)
	for _, kind := range Kinds {
		e, _ := New(kind, c)
		hits, err := e.Search(context.Background(), "anything", 0)
		if err != nil || len(hits) != 0 {
			t.Errorf("%s on an empty catalog = %v, %v; want no hits", kind, hits, err)
		}
	}
}

func TestLimits(t *testing.T) {
	c := realCatalog(t)
	for _, tt := range []struct {
		kind string
		def  int
	}{{"keyword", 5}, {"bm25", 8}, {"regex", 5}} {
		e, _ := New(tt.kind, c)
		hits, err := e.Search(context.Background(), "create", 0)
		if err != nil || len(hits) != tt.def {
			t.Errorf("%s: default limit gave %d hits (%v), want %d", tt.kind, len(hits), err, tt.def)
		}
		hits, _ = e.Search(context.Background(), "create", 2)
		if len(hits) != 2 {
			t.Errorf("%s: limit 2 gave %d hits", tt.kind, len(hits))
		}
	}
}

// TestConcurrentSearch runs searches on shared engines from many
// goroutines; with -race it checks that engines are safe to share.
func TestConcurrentSearch(t *testing.T) {
	c := realCatalog(t)
	queries := []string{"create issue", "+github pull request", "list files", "mcp__slack"}
	for _, kind := range Kinds {
		e, _ := New(kind, c)
		want := map[string][]scored{}
		for _, q := range queries {
			hits, _ := e.Search(context.Background(), q, 0)
			want[q] = scores(hits)
		}
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := range 10 { // enough for the race detector to see shared state
					q := queries[(g+i)%len(queries)]
					hits, _ := e.Search(context.Background(), q, 0)
					if !cmp.Equal(want[q], scores(hits)) {
						t.Errorf("%s: concurrent Search(%q) differs", kind, q)
						return
					}
				}
			}()
		}
		wg.Wait()
	}
}

// TestGolden records each engine's top results for a set of realistic
// queries over the real servers' tools. Review a changed golden file the
// way you would review a ranking change.
func TestGolden(t *testing.T) {
	c := realCatalog(t)
	data, err := os.ReadFile(filepath.Join("testdata", "queries.txt"))
	if err != nil {
		t.Fatal(err)
	}
	var queries []string
	for _, l := range strings.Split(string(data), "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			queries = append(queries, l)
		}
	}
	for _, kind := range Kinds {
		t.Run(kind, func(t *testing.T) {
			e, _ := New(kind, c)
			var b strings.Builder
			for _, q := range queries {
				fmt.Fprintf(&b, "## %s\n", q)
				// Through Find, as every face searches: select: is
				// answered there.
				res, err := Find(context.Background(), e, c, Request{Query: q, Limit: 5})
				if err != nil {
					fmt.Fprintf(&b, "error: %v\n", err)
				}
				for _, h := range res.Hits {
					fmt.Fprintf(&b, "%8.3f %s\n", h.Score, h.Entry.Name)
					for _, m := range h.Matches {
						fmt.Fprintf(&b, "         %s: %s (%.3f)\n", m.Term, strings.Join(m.Fields, ","), m.Score)
					}
				}
			}
			golden := filepath.Join("testdata", kind+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test ./search -update to create it)", err)
			}
			if diff := cmp.Diff(string(want), b.String()); diff != "" {
				t.Errorf("%s rankings changed (-want +got); rerun with -update if intended:\n%s", kind, diff)
			}
		})
	}
}

// What --explain prints adds up to the score it prints: the terms and
// the name boost of one ranking, or each part's share of a fused one.
func TestExplanationsAddUp(t *testing.T) {
	c := realCatalog(t)
	queries := []string{
		"get the current weather", "create a github issue", "read a file",
		"take a screenshot of the page, then post it to the slack channel",
		"list my stripe customers and then refund the last charge",
	}
	for _, kind := range []string{"bm25", "hybrid"} {
		eng, err := New(kind, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range queries {
			hits, err := eng.Search(context.Background(), q, 8)
			if err != nil {
				t.Fatal(err)
			}
			boosted := false
			for _, h := range hits {
				var sum float64
				for _, m := range h.Matches {
					sum += m.Score
					boosted = boosted || m.Term == TermNameBoost
				}
				if math.Abs(sum-h.Score) > 1e-9*max(1, h.Score) {
					t.Errorf("%s %q: %s scores %v, its matches add up to %v: %+v", kind, q, h.Entry.Name, h.Score, sum, h.Matches)
				}
			}
			if kind == "bm25" && q == "get the current weather" && !boosted {
				t.Errorf("%q: no hit explains its name boost", q)
			}
		}
	}
}

// server-filesystem's read_file says it is deprecated in favour of
// read_text_file; its shorter description matched "read a file" better,
// so it came first. It now comes after the tool that replaces it, and is
// still found.
func TestDeprecatedToolsRankLower(t *testing.T) {
	c := realCatalog(t)
	for _, kind := range []string{"bm25", "hybrid"} {
		eng, err := New(kind, c)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{"read the contents of a file", "read file"} {
			hits, err := eng.Search(context.Background(), q, 8)
			if err != nil {
				t.Fatal(err)
			}
			rank := map[string]int{}
			for i, h := range hits {
				rank[h.Entry.Name] = i + 1
			}
			old, cur := rank["mcp__filesystem__read_file"], rank["mcp__filesystem__read_text_file"]
			if cur == 0 || old == 0 || old < cur {
				t.Errorf("%s %q: read_text_file at %d, deprecated read_file at %d", kind, q, cur, old)
			}
		}
	}
	for text, want := range map[string]bool{
		"Read the complete contents of a file as text. DEPRECATED: Use read_text_file instead.":                             true,
		"This tool is deprecated; use search_v2.":                                                                           true,
		"(Deprecated) Lists issues.":                                                                                        true,
		"Identify deprecated NPM packages by analyzing a list of package names. Part of the NPM Sentinel MCP server suite.": false,
		"Lists the APIs of a project.":                                                                                      false,
	} {
		if got := Deprecated(text); got != want {
			t.Errorf("Deprecated(%q) = %v", text, got)
		}
	}
}

// select: is answered by Find, before any engine: the tools it names, in
// the order given, each once, whatever the engine.
func TestFindSelect(t *testing.T) {
	c := tinyCatalog(t,
		[3]string{"fs", "read_file", "Read a file from disk."},
		[3]string{"fs", "list_dir", "List a directory."},
		[3]string{"", "Reader", "A built-in tool."},
	)
	for _, kind := range []string{"keyword", "bm25", "regex"} {
		e, err := New(kind, c)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Find(context.Background(), e, c, Request{Query: "select:mcp__fs__list_dir,Reader,unknown,Reader"})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]scored{{"mcp__fs__list_dir", 1}, {"Reader", 1}}, scores(res.Hits)); diff != "" || !res.Select || !slices.Equal(res.Missing, []string{"unknown"}) {
			t.Errorf("%s: select (-want +got):\n%s%+v", kind, diff, res)
		}
	}
}

// containsFold agrees with lower-casing first, on text with and without
// the characters whose lower case is ASCII.
func TestContainsFold(t *testing.T) {
	texts := []string{"GitHub issues", "Café — GITHUB", "\u212aelvin", "\u0130stanbul", "ﬁle", "a\xffb", ""}
	subs := []string{"github", "kelvin", "istanbul", "file", "ab", "é", "b", ""}
	for _, s := range texts {
		for _, sub := range subs {
			if got, want := containsFold(s, sub), strings.Contains(strings.ToLower(s), sub); got != want {
				t.Errorf("containsFold(%q, %q) = %v, want %v", s, sub, got, want)
			}
		}
	}
}

// recordingEngine is an engine that keeps the queries it is asked.
type recordingEngine struct{ queries []string }

func (r *recordingEngine) Search(_ context.Context, query string, _ int) ([]Hit, error) {
	r.queries = append(r.queries, query)
	return nil, nil
}

// A query over MaxQuery is searched cut, as the note says, on a rune
// boundary: the engine never sees the rest.
func TestLongQueryIsSearchedCut(t *testing.T) {
	c := tinyCatalog(t, [3]string{"github", "create_issue", "Create an issue"})
	for _, query := range []string{
		strings.Repeat("zq ", 700) + "create issue",
		strings.Repeat("é", 1500) + " create issue",
	} {
		eng := &recordingEngine{}
		res, err := Find(context.Background(), eng, c, Request{Query: query})
		if err != nil {
			t.Fatal(err)
		}
		if !res.Cut || len(eng.queries) != 1 {
			t.Fatalf("cut %v, queries %d", res.Cut, len(eng.queries))
		}
		got := eng.queries[0]
		if len(got) > MaxQuery || strings.Contains(got, "create issue") || !utf8.ValidString(got) || !strings.HasPrefix(query, got) {
			t.Errorf("the engine was asked %d bytes ending %q", len(got), got[max(0, len(got)-20):])
		}
	}
}

// The answers' depth is the rule docs/search-quality.md says was chosen,
// and keeps what it says: at least Min, the hits within Ratio of the best.
func TestDefaultDepthAsChosen(t *testing.T) {
	d := DefaultDepth
	testenv.DocSays(t, "docs/search-quality.md", fmt.Sprintf("every set, is **%g,%d**", d.Ratio, d.Min))
	hits := []Hit{{Score: 10}, {Score: 6}, {Score: 4}, {Score: 3}, {Score: 2.4}, {Score: 1}}
	want := d.Min
	for want < len(hits) && hits[want].Score >= d.Ratio*10 {
		want++
	}
	if got := d.Keep(hits); got != want || got == len(hits) || got < d.Min {
		t.Errorf("Keep = %d, want %d of %d", got, want, len(hits))
	}
}

// A tool's search hint (_meta["anthropic/searchHint"], which a
// configuration's "describe": {"searchWords": ...} writes) is searched by
// every engine: a word found nowhere else in the catalog finds the tool,
// and the explanation says the hint matched.
func TestSearchHintReachesEveryEngine(t *testing.T) {
	raw := func(name, desc, hint string) catalog.Entry {
		tool := map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}}
		if hint != "" {
			tool["_meta"] = map[string]any{"anthropic/searchHint": hint}
		}
		b, _ := json.Marshal(tool)
		e, err := catalog.ParseTool("kb", b)
		if err != nil {
			t.Fatal(err)
		}
		return e
	}
	c := catalog.New([]catalog.Entry{
		raw("upsert_node", "Writes a node of the graph.", "zebrafinch remember a fact about a person"),
		raw("send_mail", "Sends an email to a person.", ""),
		raw("get_weather", "The weather of a city.", ""),
		raw("delete_node", "Deletes a node of the graph.", ""),
	}, nil)
	ctx := context.Background()
	for _, kind := range Kinds {
		e, err := New(kind, c)
		if err != nil {
			t.Fatal(err)
		}
		query := "zebrafinch"
		if kind == "semantic" {
			query = "remember a fact" // word vectors: the hint's meaning, not an unknown word
		}
		hits, err := e.Search(ctx, query, 3)
		if err != nil || len(hits) == 0 || hits[0].Entry.Tool != "upsert_node" {
			t.Errorf("%s: %q: %v %v", kind, query, hits, err)
			continue
		}
		if kind == "bm25" || kind == "keyword" || kind == "regex" {
			found := false
			for _, m := range hits[0].Matches {
				found = found || slices.Contains(m.Fields, FieldHint)
			}
			if !found {
				t.Errorf("%s: the explanation does not name the hint: %+v", kind, hits[0].Matches)
			}
		}
	}
	// Embedded by a model too: the hint is in the text embedded.
	for e := range c.All() {
		if e.Tool == "upsert_node" && !strings.Contains(EmbedText(e), "zebrafinch") {
			t.Errorf("the embedded text lacks the hint: %q", EmbedText(e))
		}
	}
}

// A request none of whose words a tool says, only words of the same stem
// ("person" in "personal") or related to them ("fact" and "information"),
// is flagged weak, however its best hit ranks: on the built-in catalog no
// tool says "remember", "fact" or "person".
func TestStemOnlyMatchIsWeak(t *testing.T) {
	c := realCatalog(t)
	e := NewBM25(c)
	hits, err := e.Search(context.Background(), "remember a fact about a person", 8)
	if err != nil || len(hits) == 0 {
		t.Fatal(hits, err)
	}
	if !hits[0].Weak || hits[0].WeakReason == "" {
		t.Errorf("%s, matched by %+v, is not flagged weak, or without a reason (%q)", hits[0].Entry.Name, hits[0].Matches, hits[0].WeakReason)
	}
	res, err := Find(context.Background(), e, c, Request{Query: "remember a fact about a person"})
	if err != nil || !res.Weak || res.WeakReason == "" || !strings.Contains(res.Note, res.WeakReason) {
		t.Errorf("Find: %v %q %q", err, res.WeakReason, res.Note)
	}
	// Each rule gives its own reason.
	tiny := NewBM25(tinyCatalog(t,
		[3]string{"mail", "send_mail", "Send mail"},
		[3]string{"fs", "list_files", "List files"},
		[3]string{"git", "create_issue", "Create an issue"},
		[3]string{"git", "delete_branch", "Delete a branch"},
		[3]string{"git", "merge_request", "Merge a request"},
		[3]string{"crm", "personal_notes", "Personal notes"},
		[3]string{"logs", "archive_logs", "Archive the logs"},
		[3]string{"sms", "send_text", "Send a text message"},
		[3]string{"notes", "omit_notes", "Omit notes"},
		[3]string{"todoist", "todoist_tasks", "Todoist tasks"},
		[3]string{"todoist", "todoist_projects", "Todoist projects"},
	))
	for query, want := range map[string]string{
		"send list create delete merge archive": WeakLowMatch,
		"bake a chocolate cake and send it":     WeakNotHere,
		"personalized":                          WeakOnlyAlike,
		"forget":                                WeakOnlyAlike,
		// Words English lacks are not counted against the catalog.
		"zqxv wvzq jxqz todoist": "",
		"send mail":              "",
	} {
		hits, _ := tiny.Search(context.Background(), query, 8)
		if len(hits) == 0 || hits[0].WeakReason != want || hits[0].Weak != (want != "") {
			t.Errorf("%q: weak for %q, want %q", query, reasonOf(hits), want)
		}
	}
	// A request whose words a tool says is not.
	if hits, _ := e.Search(context.Background(), "create a pull request", 8); len(hits) == 0 || hits[0].Weak {
		t.Errorf("create a pull request: %v", hits)
	}
}

func reasonOf(hits []Hit) string {
	if len(hits) == 0 {
		return "(no hits)"
	}
	return hits[0].WeakReason
}

// A posting keeps a document's number and its fields apart, up to the
// largest number an index holds; a catalog past that is refused.
func TestPostingPacksDocAndFields(t *testing.T) {
	all := fieldSet(1<<numFields - 1)
	for _, tt := range []struct {
		doc    int
		fields fieldSet
	}{{0, inName}, {1, all}, {MaxDocs - 1, all}, {MaxDocs - 1, inGloss}, {12345, inParams | inHint}} {
		p := newPosting(tt.doc, 1.5, tt.fields)
		if int(p.doc()) != tt.doc || p.fields() != tt.fields || p.tf != 1.5 {
			t.Errorf("newPosting(%d, 1.5, %b) = doc %d, fields %b, tf %v", tt.doc, tt.fields, p.doc(), p.fields(), p.tf)
		}
	}
	for _, bit := range fieldBits {
		if bit >= 1<<numFields {
			t.Errorf("a field's bit (%b) is past the %d bits a posting keeps for fields", bit, numFields)
		}
	}
	if err := checkSize(MaxDocs); err != nil {
		t.Errorf("checkSize(MaxDocs) = %v", err)
	}
	if err := checkSize(MaxDocs + 1); err == nil || !strings.Contains(err.Error(), "more than a search index holds") {
		t.Errorf("checkSize(MaxDocs+1) = %v, want a refusal", err)
	}
	if unsafe.Sizeof(posting{}) != 8 {
		t.Errorf("a posting is %d bytes, want 8", unsafe.Sizeof(posting{}))
	}
}
