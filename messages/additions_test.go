package messages

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/policy"
)

// With ToolAdditions, a tool a search found is added by a system message
// right after the result that found it, never to the request's tools:
// turn after turn, the tools and the other fields are the same bytes and
// each request's messages begin with the previous turn's.
func TestToolAdditionsKeepThePrefix(t *testing.T) {
	schema := json.RawMessage(`{"type":"object","properties":{"x":{"type":"string"}}}`)
	tools := []Tool{{Name: "Bash", Description: "Run a command.", InputSchema: schema}, {Name: "tool_search", Description: "Find tools.", InputSchema: schema}}
	for _, n := range []string{"mcp__a__one", "mcp__a__two", "mcp__b__three"} {
		tools = append(tools, Tool{Name: n, Description: "Does " + n, InputSchema: schema})
	}
	deferred := []string{"mcp__a__one", "mcp__a__two", "mcp__b__three"}
	var history []Message
	add := func(raw string) {
		var m Message
		if err := json.Unmarshal([]byte(raw), &m); err != nil {
			t.Fatal(err)
		}
		history = append(history, m)
	}
	prepare := func() ([]json.RawMessage, []byte, []string) {
		p, err := Prepare(Turn{Model: "claude-opus-4-8", Tools: tools, History: history, SearchTool: "tool_search",
			Decision: policy.Decision{Enabled: true, Deferred: deferred}, ToolAdditions: true,
			Extra: map[string]json.RawMessage{"system": json.RawMessage(`"Be brief."`)}})
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(p.Request)
		var w struct {
			Messages []json.RawMessage `json:"messages"`
		}
		json.Unmarshal(b, &w)
		fixed, _ := json.Marshal(map[string]any{"tools": p.Request.Tools, "system": p.Request.Extra["system"]})
		return w.Messages, fixed, p.Betas
	}

	add(`{"role":"user","content":"Do the thing."}`)
	m1, f1, _ := prepare()
	add(`{"role":"assistant","content":[{"type":"tool_use","id":"s1","name":"tool_search","input":{"query":"one"}}]}`)
	add(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"s1","content":[{"type":"tool_reference","tool_name":"mcp__a__one"}]}]}`)
	m2, f2, b2 := prepare()
	add(`{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"mcp__a__one","input":{"x":"1"}}]}`)
	add(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"done"}]}`)
	add(`{"role":"assistant","content":[{"type":"tool_use","id":"s2","name":"tool_search","input":{"query":"three"}}]}`)
	add(`{"role":"user","content":[{"type":"tool_result","tool_use_id":"s2","content":[{"type":"tool_reference","tool_name":"mcp__b__three"}]}]}`)
	m3, f3, b3 := prepare()

	if !bytes.Equal(f1, f2) || !bytes.Equal(f2, f3) {
		t.Errorf("the tools or the system prompt changed from turn to turn:\n%s\n%s", f1, f3)
	}
	if strings.Contains(string(f3), "mcp__a__one") || strings.Contains(string(f3), "defer_loading") {
		t.Errorf("a found tool was sent in the tools: %s", f3)
	}
	for i, pair := range [][2][]json.RawMessage{{m1, m2}, {m2, m3}} {
		a, b := pair[0], pair[1]
		if len(a) > len(b) {
			t.Fatalf("turn %d has fewer messages than the one before", i+2)
		}
		for j := range a {
			if !bytes.Equal(a[j], b[j]) {
				t.Errorf("turn %d's message %d is not the previous turn's:\n%s\n%s", i+2, j, a[j], b[j])
			}
		}
	}
	last := string(m2[len(m2)-1])
	if !strings.Contains(last, `"role":"system"`) || !strings.Contains(last, `"tool_addition"`) || !strings.Contains(last, `"name":"mcp__a__one"`) {
		t.Errorf("turn 2 does not add the tool found after its result: %s", last)
	}
	if strings.Contains(string(m3[len(m3)-2]), "tool_reference") {
		t.Errorf("a tool_reference reached the API: %s", m3[len(m3)-2])
	}
	if last := string(m3[len(m3)-1]); !strings.Contains(last, `"name":"mcp__b__three"`) || strings.Contains(last, `"name":"mcp__a__one"`) {
		t.Errorf("turn 3's addition: %s", last)
	}
	if len(b2) != 1 || b2[0] != BetaInlineTools || len(b3) != 1 {
		t.Errorf("betas: %v %v", b2, b3)
	}
}
