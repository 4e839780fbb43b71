package catalog

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func tool(t testing.TB, server, raw string) Entry {
	t.Helper()
	e, err := ParseTool(server, json.RawMessage(raw))
	if err != nil {
		t.Fatalf("ParseTool(%q, %s): %v", server, raw, err)
	}
	return e
}

func named(t testing.TB, server, name string) Entry {
	t.Helper()
	b, _ := json.Marshal(map[string]string{"name": name})
	return tool(t, server, string(b))
}

func TestQualifiedNames(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5) + "end"
	tests := []struct {
		server, tool string
		want         string
		shortened    bool
	}{
		{"github", "create_issue", "mcp__github__create_issue", false},
		{"notion", "API-post-search", "mcp__notion__API-post-search", false},
		{"my server", "get.thing", "mcp__my_server__get_thing", false},
		{"", "Read", "Read", false},
		{"café", "naïve tool", "mcp__caf___na_ve_tool", false},
		{"azure", long, "mcp__azure__very_long_tool_name_very_long_tool_name_very_" + nameHash("azure", long, 6), true},
		{strings.Repeat("s", 40), "list", "mcp__" + strings.Repeat("s", 40) + "__list", false},
		{strings.Repeat("s", 60), "list", "mcp__ssssssssssssssss__list_" + nameHash(strings.Repeat("s", 60), "list", 6), true},
	}
	for _, tt := range tests {
		c := New([]Entry{named(t, tt.server, tt.tool)}, nil)
		e := c.Entry(0)
		if e.Name != tt.want || e.Shortened != tt.shortened {
			t.Errorf("name of (%q, %q) = %q (shortened %v), want %q (shortened %v)", tt.server, tt.tool, e.Name, e.Shortened, tt.want, tt.shortened)
		}
		if !ValidName(e.Name) {
			t.Errorf("name of (%q, %q) = %q is not a valid tool name", tt.server, tt.tool, e.Name)
		}
	}
}

func TestCollisionsStayDistinct(t *testing.T) {
	c := New([]Entry{
		named(t, "a.b", "x"),
		named(t, "a_b", "x"),
		named(t, "s", "t y"),
		named(t, "s", "t_y"),
		named(t, "github", "create_issue"),
		named(t, "gitlab", "create_issue"),
		named(t, "github", "create_issue"), // listed twice: kept once
	}, nil)
	got := map[string]string{}
	for e := range c.All() {
		if prev, dup := got[e.Name]; dup {
			t.Fatalf("%s/%s and %s share the name %s", e.Server, e.Tool, prev, e.Name)
		}
		got[e.Name] = e.Server + "/" + e.Tool
	}
	want := map[string]string{
		"mcp__a_b__x":                            "a_b/x",
		"mcp__a_b__x_" + nameHash("a.b", "x", 6): "a.b/x",
		"mcp__s__t_y":                            "s/t_y",
		"mcp__s__t_y_" + nameHash("s", "t y", 6): "s/t y",
		"mcp__github__create_issue":              "github/create_issue",
		"mcp__gitlab__create_issue":              "gitlab/create_issue",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("names (-want +got):\n%s", diff)
	}
}

func TestCleanCollisionHashesBoth(t *testing.T) {
	// "a__b"/"c" and "a"/"b__c" both spell mcp__a__b__c without sanitising.
	c := New([]Entry{named(t, "a__b", "c"), named(t, "a", "b__c")}, nil)
	if c.Len() != 2 || c.Entry(0).Name == c.Entry(1).Name {
		t.Fatalf("names = %q, want two distinct", c.Names())
	}
	for e := range c.All() {
		if !e.Shortened {
			t.Errorf("%s/%s kept the colliding name %s", e.Server, e.Tool, e.Name)
		}
	}
}

func TestParseTool(t *testing.T) {
	e := tool(t, "db", `{"name":"query","description":"Run SQL","inputSchema":{"type":"object"},
		"annotations":{"title":"Query"},"execution":{"taskSupport":"optional"},
		"_meta":{"anthropic/alwaysLoad":true,"anthropic/searchHint":"sql database select"}}`)
	want := Entry{Server: "db", Tool: "query", Title: "Query", Description: "Run SQL", SearchHint: "sql database select", AlwaysLoad: true}
	if diff := cmp.Diff(want, e, cmp.FilterPath(func(p cmp.Path) bool {
		n := p.Last().String()
		return n == ".Raw" || n == ".InputSchema" || n == ".Params"
	}, cmp.Ignore())); diff != "" {
		t.Errorf("ParseTool (-want +got):\n%s", diff)
	}
	if !bytes.Contains(e.Raw, []byte(`"execution"`)) {
		t.Errorf("Raw lost the execution field: %s", e.Raw)
	}

	for _, bad := range []string{`[]`, `{"description":"x"}`, `{"name":""}`, `not json`} {
		if _, err := ParseTool("s", json.RawMessage(bad)); err == nil {
			t.Errorf("ParseTool(%s) succeeded, want an error", bad)
		}
	}
}

func TestParams(t *testing.T) {
	e := tool(t, "s", `{"name":"t","inputSchema":{"type":"object","properties":{"b":{"type":"string","description":"second"},"a":{"type":"number"},"c":true}}}`)
	want := []Param{{Name: "a"}, {Name: "b", Description: "second"}, {Name: "c"}}
	if diff := cmp.Diff(want, e.Params); diff != "" {
		t.Errorf("Params (-want +got):\n%s", diff)
	}
	for _, schema := range []string{``, `{"$schema":"x"}`, `"string"`} {
		if ps := parseParams(json.RawMessage(schema)); len(ps) != 0 {
			t.Errorf("Params of schema %q = %v, want none", schema, ps)
		}
	}
}

func TestVersion(t *testing.T) {
	a := tool(t, "s", `{"name":"a","description":"one"}`)
	b := tool(t, "s", `{"name":"b","description":"two"}`)
	b2 := tool(t, "s", `{"name":"b","description":"changed"}`)
	v1 := New([]Entry{a, b}, nil).Version()
	if v := New([]Entry{b, a}, nil).Version(); v != v1 {
		t.Errorf("version depends on input order: %s vs %s", v, v1)
	}
	if v := New([]Entry{a, b2}, nil).Version(); v == v1 {
		t.Errorf("version did not change when a description changed")
	}
	if v := New([]Entry{a}, nil).Version(); v == v1 {
		t.Errorf("version did not change when a tool was removed")
	}
	if got, want := New([]Entry{b, a}, nil).NameKey(), "mcp__s__a,mcp__s__b"; got != want {
		t.Errorf("NameKey = %q, want %q", got, want)
	}
}

func TestFind(t *testing.T) {
	c := New([]Entry{named(t, "github", "create_issue"), named(t, "gitlab", "create_issue"), named(t, "slack", "post_message")}, nil)
	tests := []struct {
		in, want string
	}{
		{"mcp__github__create_issue", "mcp__github__create_issue"},
		{"MCP__SLACK__POST_MESSAGE", "mcp__slack__post_message"},
		{"post_message", "mcp__slack__post_message"},
		{"create_issue", ""}, // two servers have it
		{"nothing", ""},
	}
	for _, tt := range tests {
		e, ok := c.Find(tt.in)
		got := ""
		if ok {
			got = e.Name
		}
		if got != tt.want {
			t.Errorf("Find(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

func TestFilter(t *testing.T) {
	c := New([]Entry{named(t, "a", "x"), named(t, "b", "y"), named(t, "b", "z")}, []Server{{Name: "b", Instructions: "hi"}})
	f := c.Filter(func(e *Entry) bool { return e.Server == "b" })
	if diff := cmp.Diff([]string{"mcp__b__y", "mcp__b__z"}, f.Names()); diff != "" {
		t.Errorf("Filter names (-want +got):\n%s", diff)
	}
	if f.Index("mcp__b__z") != 1 || f.Index("mcp__a__x") != -1 {
		t.Errorf("Filter index is wrong")
	}
	if s, ok := f.Server("b"); !ok || s.Instructions != "hi" {
		t.Errorf("Filter lost the server description")
	}
	if f.Version() == c.Version() {
		t.Errorf("Filter kept the parent's version")
	}
}

func TestFileError(t *testing.T) {
	bad := errors.New("bad")
	for _, tt := range []struct {
		err  error
		want string
	}{
		{&FileError{Line: 3, Err: bad}, "line 3: bad"},
		{&FileError{File: "a.json", Line: 3, Err: bad}, "a.json:3: bad"},
		{&FileError{File: "a.json", Err: bad}, "a.json: bad"},
		{InFile("b.json", &FileError{Line: 2, Err: bad}), "b.json:2: bad"},
		{InFile("b.json", bad), "b.json: bad"},
	} {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("%#v = %q, want %q", tt.err, got, tt.want)
		}
	}
}

func TestNormalizeSchema(t *testing.T) {
	tests := []struct {
		in, want string
		changed  bool
	}{
		{`{"type":"object","properties":{"a":{"type":"string"}}}`, `{"type":"object","properties":{"a":{"type":"string"}}}`, false},
		{`{"$schema":"http://json-schema.org/draft-07/schema#"}`, `{"$schema":"http://json-schema.org/draft-07/schema#","properties":{},"type":"object"}`, true},
		{`{"type":["object","null"],"properties":{"x":{}}}`, `{"properties":{"x":{}},"type":"object"}`, true},
		{``, `{"type":"object"}`, true},
		{`null`, `{"type":"object"}`, true},
		{`[1]`, `{"type":"object"}`, true},
		{`{"$defs":{"a":{"type":"string"}},"properties":{"p":{"$ref":"#/$defs/a"}}}`, `{"$defs":{"a":{"type":"string"}},"properties":{"p":{"$ref":"#/$defs/a"}},"type":"object"}`, true},
	}
	for _, tt := range tests {
		got, changed := NormalizeSchema(json.RawMessage(tt.in))
		if string(got) != tt.want || changed != tt.changed {
			t.Errorf("NormalizeSchema(%s) = %s, %v; want %s, %v", tt.in, got, changed, tt.want, tt.changed)
		}
	}
}

// A tool is found by its server's and its own names, also when its
// qualified name had to be shortened.
func TestTool(t *testing.T) {
	long := strings.Repeat("very_long_tool_name_", 5)
	var entries []Entry
	for _, tl := range [][2]string{{"github", "create_issue"}, {"my server", "do.it"}, {"github", long}} {
		e, err := ParseTool(tl[0], []byte(`{"name":`+strconv.Quote(tl[1])+`,"inputSchema":{"type":"object"}}`))
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	c := New(entries, nil)
	for _, tl := range [][2]string{{"github", "create_issue"}, {"my server", "do.it"}, {"github", long}} {
		if e, ok := c.Tool(tl[0], tl[1]); !ok || e.Server != tl[0] || e.Tool != tl[1] {
			t.Errorf("Tool(%q, %q) = %v, %v", tl[0], tl[1], e, ok)
		}
	}
	if _, ok := c.Tool("github", "delete_repo"); ok {
		t.Error("found a tool that is not there")
	}
}
