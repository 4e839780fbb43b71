package catalog

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzQualifiedName checks that any two tools get valid, distinct names,
// that unshortened MCP names split back into their parts, and that the
// name of a tool does not depend on the other tools in the catalog unless
// they collide.
func FuzzQualifiedName(f *testing.F) {
	f.Add("github", "create_issue", "gitlab", "create_issue")
	f.Add("a.b", "x", "a_b", "x")
	f.Add("", "Read", "", "Read!")
	f.Add(strings.Repeat("s", 70), strings.Repeat("t", 70), strings.Repeat("s", 70), strings.Repeat("t", 69)+"u")
	f.Add("日本", "ツール", "__", "__")
	f.Fuzz(func(t *testing.T, s1, t1, s2, t2 string) {
		if t1 == "" || t2 == "" {
			return // ParseTool rejects tools without names
		}
		e1 := entryNamed(s1, t1)
		e2 := entryNamed(s2, t2)
		c := New([]Entry{e1, e2}, nil)
		want := 2
		if s1 == s2 && t1 == t2 {
			want = 1
		}
		if c.Len() != want {
			t.Fatalf("catalog has %d entries, want %d", c.Len(), want)
		}
		if want == 2 && c.Entry(0).Name == c.Entry(1).Name {
			t.Fatalf("(%q,%q) and (%q,%q) share the name %q", s1, t1, s2, t2, c.Entry(0).Name)
		}
		for e := range c.All() {
			if !ValidName(e.Name) {
				t.Fatalf("name %q of (%q,%q) is invalid", e.Name, e.Server, e.Tool)
			}
			// The split is unambiguous when the server part has no "__" and
			// does not end in "_".
			if s := sanitize(e.Server); e.Server != "" && !e.Shortened && !strings.Contains(s, "__") && !strings.HasSuffix(s, "_") {
				server, tool, ok := SplitName(e.Name)
				if !ok || server+sep+tool != sanitize(e.Server)+sep+sanitize(e.Tool) {
					t.Fatalf("SplitName(%q) = %q, %q, %v", e.Name, server, tool, ok)
				}
			}
		}
		// Alone, a tool gets the same name unless it collided.
		alone := New([]Entry{e1}, nil).Entry(0).Name
		if got, _ := c.Lookup(alone); got != nil && (got.Server != s1 || got.Tool != t1) {
			if fullName(s1, t1) != fullName(s2, t2) {
				t.Fatalf("adding (%q,%q) gave (%q,%q)'s name %q to it", s2, t2, s1, t1, alone)
			}
		}
	})
}

func entryNamed(server, tool string) Entry {
	b, _ := json.Marshal(map[string]string{"name": tool})
	return Entry{Server: server, Tool: tool, Raw: b}
}
