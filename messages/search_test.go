package messages

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/catalog"
)

func testCatalog(t *testing.T) *catalog.Catalog {
	t.Helper()
	var es []catalog.Entry
	for _, tl := range [][3]string{
		{"github", "create_issue", "Create a new issue in a GitHub repository"},
		{"github", "list_issues", "List issues in a GitHub repository"},
		{"slack", "post_message", "Post a message to a Slack channel"},
		{"db", "query", "Run a SQL query"},
	} {
		raw, _ := json.Marshal(map[string]any{"name": tl[1], "description": tl[2], "inputSchema": map[string]any{"type": "object"}})
		e, err := catalog.ParseTool(tl[0], raw)
		if err != nil {
			t.Fatal(err)
		}
		es = append(es, e)
	}
	return catalog.New(es, nil)
}

// result summarises a tool_result: its references, or its text, and
// whether it is an error.
func result(b Block) (refs []string, text string, isError bool) {
	inner, _ := b.Results()
	for _, r := range inner {
		switch r.Type {
		case "tool_reference":
			refs = append(refs, r.String("tool_name"))
		case "text":
			text += r.String("text")
		}
	}
	return refs, text, string(b.Raw("is_error")) == "true"
}

func TestSearcher(t *testing.T) {
	all := testCatalog(t)
	deferred := all.Filter(func(e *catalog.Entry) bool { return e.Server != "db" }) // db__query is loaded
	s := &Searcher{}
	st := SearchState{Deferred: deferred, All: all, Discovered: map[string]bool{"mcp__github__list_issues": true}}
	tests := []struct {
		input   string
		refs    []string
		text    string
		isError bool
	}{
		{`{"query":"github issues"}`, []string{"mcp__github__create_issue"}, "", false}, // list_issues is already discovered
		{`{"query":"post to slack","limit":1}`, []string{"mcp__slack__post_message"}, "", false},
		{`{"query":"select:mcp__github__list_issues,post_message"}`, []string{"mcp__github__list_issues", "mcp__slack__post_message"}, "", false},
		{`{"query":"select:mcp__db__query"}`, nil, "mcp__db__query is already loaded; call it directly.", false},
		{`{"query":"select:nope"}`, nil, `No tool is named "nope".`, true},
		{`{"query":"kubernetes pods"}`, nil, `{"matches":[],"total_deferred_tools":3,"note":"No match. Try other words, or mcp__<server> to list a server's tools."}`, false},
		{`{}`, nil, `"query" is required`, true},
		{`{"query":"   "}`, nil, `"query" is required`, true},
		{`{"query":"?!"}`, nil, "Query must contain at least one letter or number.", true},
		{`{"query":"x","limit":0}`, nil, `"limit" must be a positive integer, got 0`, true},
		{`{"query":"x","limit":"5"}`, nil, `"limit" must be a positive integer`, true},
		{`[1]`, nil, `the input must be an object with "query" (a string) and an optional "limit", not an array`, true},
	}
	for _, tt := range tests {
		b := s.Handle(context.Background(), "toolu_9", json.RawMessage(tt.input), st)
		if b.Type != "tool_result" || b.String("tool_use_id") != "toolu_9" {
			t.Fatalf("%s: not a tool_result for toolu_9: %+v", tt.input, b)
		}
		refs, text, isError := result(b)
		if diff := cmp.Diff(tt.refs, refs); diff != "" || !strings.Contains(text, tt.text) || isError != tt.isError {
			t.Errorf("%s: refs %v text %q error %v; want %v %q %v", tt.input, refs, text, isError, tt.refs, tt.text, tt.isError)
		}
	}
	// Nothing found while servers connect: they are named.
	st.Pending = []string{"jira"}
	_, text, _ := result(s.Handle(context.Background(), "t", json.RawMessage(`{"query":"jira ticket"}`), st))
	if !strings.Contains(text, `"pending_mcp_servers":["jira"]`) {
		t.Errorf("no pending servers in %s", text)
	}
	// Nothing found with a server down: it is named with why, and the
	// model is told not to reword.
	st.Pending, st.NotConnected = nil, []string{"jira (failed: npm could not install it)"}
	_, text, _ = result(s.Handle(context.Background(), "t", json.RawMessage(`{"query":"jira ticket"}`), st))
	if !strings.Contains(text, `"not_connected_mcp_servers":["jira (failed: npm could not install it)"]`) ||
		!strings.Contains(text, "tell the person instead of searching again") {
		t.Errorf("no server down in %s", text)
	}
	if def := s.Tool(); def.Name != DefaultSearchTool || !json.Valid(def.InputSchema) {
		t.Errorf("tool definition: %+v", def)
	}
}

func TestSchemaHint(t *testing.T) {
	deferred := map[string]bool{"mcp__a__x": true, "mcp__a__y": true}
	discovered := map[string]bool{"mcp__a__y": true}
	if h := SchemaHint("mcp__a__x", deferred, discovered, ""); !strings.Contains(h, `tool_search({"query": "select:mcp__a__x"})`) {
		t.Errorf("hint = %q", h)
	}
	if SchemaHint("mcp__a__y", deferred, discovered, "") != "" || SchemaHint("read_file", deferred, discovered, "") != "" {
		t.Error("a hint for a tool that was discovered or is not deferred")
	}
}

// Skills given to a search are found beside the tools: a search that
// finds one answers in text (the skill to read, the tools it uses, the
// tools found, to load with select:), never a skill as a reference; one
// that finds none answers with references as before.
func TestSearcherFindsSkills(t *testing.T) {
	cat := testCatalog(t)
	skills := catalog.New([]catalog.Entry{catalog.SkillEntry("docs", "skill://docs/triage/SKILL.md", "triage",
		"Triage the open issues of a repository: label, deduplicate and assign them", []string{"mcp__github__list_issues"})}, nil)
	var s Searcher
	input, _ := json.Marshal(map[string]any{"query": "triage the open issues"})
	refs, text, isErr := result(s.Handle(context.Background(), "t1", input, SearchState{Deferred: cat, All: cat, Skills: skills}))
	if isErr || len(refs) != 0 || !strings.Contains(text, `"skill":"skill://docs/triage/SKILL.md"`) || !strings.Contains(text, `"uses":["mcp__github__list_issues"]`) || !strings.Contains(text, "select:NAME") {
		t.Errorf("a search finding a skill: refs %v\n%s", refs, text)
	}
	input, _ = json.Marshal(map[string]any{"query": "post a message to slack"})
	if refs, _, _ := result(s.Handle(context.Background(), "t2", input, SearchState{Deferred: cat, All: cat, Skills: skills})); len(refs) == 0 || refs[0] != "mcp__slack__post_message" {
		t.Errorf("a search finding tools only: %v", refs)
	}
	// Skills taken away: the search is the tools' again.
	input, _ = json.Marshal(map[string]any{"query": "triage the open issues"})
	if refs, text, _ := result(s.Handle(context.Background(), "t3", input, SearchState{Deferred: cat, All: cat})); strings.Contains(text, "skill://") {
		t.Errorf("without skills: %v %s", refs, text)
	}
}
