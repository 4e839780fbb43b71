package messages

import (
	"encoding/json"
	"slices"
	"testing"
)

// A tool found twice, in one search result or in two turns, is added to
// a conversation once: where it was first found.
func TestToolFoundTwiceIsAddedOnce(t *testing.T) {
	tools := []Tool{{Name: "a", DeferLoading: true}, {Name: "b", DeferLoading: true}, {Name: "search"}}
	deferred := map[string]bool{"a": true, "b": true}
	found := func(id string, names ...string) Message {
		var refs []Block
		for _, n := range names {
			refs = append(refs, ToolReference(n))
		}
		return Message{Role: "user", Content: []Block{ToolResult(id, refs, false)}}
	}
	history := []Message{
		{Role: "user", Content: []Block{TextBlock("hello")}},
		found("s1", "a", "a"),
		{Role: "assistant", Content: []Block{TextBlock("again")}},
		found("s2", "a", "b"),
	}
	var added [][]string
	for _, m := range addTools(history, tools, deferred) {
		if m.Role != "system" {
			continue
		}
		var names []string
		for _, b := range m.Content {
			var tool struct {
				Definition struct{ Name string }
			}
			if err := json.Unmarshal(b.Raw("tool"), &tool); err != nil {
				t.Fatal(err)
			}
			names = append(names, tool.Definition.Name)
		}
		added = append(added, names)
	}
	if len(added) != 2 || !slices.Equal(added[0], []string{"a"}) || !slices.Equal(added[1], []string{"b"}) {
		t.Errorf("additions = %v, want [[a] [b]]", added)
	}
}
