package messages

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// A request with every block type the tool search flow produces, unknown
// fields at every level, and a block type the API does not have yet.
const realRequest = `{
  "model": "claude-sonnet-4-5",
  "max_tokens": 4096,
  "system": [{"type": "text", "text": "You are helpful.", "cache_control": {"type": "ephemeral"}}],
  "thinking": {"type": "enabled", "budget_tokens": 2048},
  "metadata": {"user_id": "u-1"},
  "some_future_field": {"x": [1, 2]},
  "tools": [
    {"type": "tool_search_tool_bm25_20251119", "name": "tool_search_tool_bm25"},
    {"name": "mcp__github__create_issue", "description": "Create an issue", "input_schema": {"type": "object", "properties": {"title": {"type": "string"}}}, "defer_loading": true, "strict": true},
    {"name": "read_file", "description": "Read a file", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}, "input_examples": [{"path": "a"}]}
  ],
  "messages": [
    {"role": "user", "content": "Open an issue about the crash."},
    {"role": "assistant", "content": [
      {"type": "thinking", "thinking": "I need the issue tool.", "signature": "c2ln"},
      {"type": "server_tool_use", "id": "srvtoolu_1", "name": "tool_search_tool_bm25", "input": {"query": "github issue"}},
      {"type": "tool_search_tool_result", "tool_use_id": "srvtoolu_1", "content": {"type": "tool_search_tool_search_result", "tool_references": [{"type": "tool_reference", "tool_name": "mcp__github__create_issue"}]}},
      {"type": "tool_use", "id": "toolu_1", "name": "tool_search", "input": {"query": "select:mcp__github__create_issue"}, "caller": {"type": "direct"}}
    ]},
    {"role": "user", "content": [
      {"type": "tool_result", "tool_use_id": "toolu_1", "content": [{"type": "tool_reference", "tool_name": "mcp__github__create_issue"}]},
      {"type": "text", "text": "Remember: be brief.", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
      {"type": "some_future_block", "payload": {"a": 1}}
    ], "some_future_message_field": true}
  ]
}`

func TestRoundTrip(t *testing.T) {
	var r Request
	if err := json.Unmarshal([]byte(realRequest), &r); err != nil {
		t.Fatal(err)
	}
	out, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var want, got any
	json.Unmarshal([]byte(realRequest), &want)
	json.Unmarshal(out, &got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("round trip changed the request (-want +got):\n%s", diff)
	}
	// What toolshelf reads is read.
	if len(r.Tools) != 3 || !r.Tools[1].DeferLoading || r.Tools[0].Type != "tool_search_tool_bm25_20251119" || r.Tools[2].CacheControl == nil {
		t.Errorf("tools: %+v", r.Tools)
	}
	if !r.Messages[0].Text || r.Messages[0].Content[0].String("text") != "Open an issue about the crash." {
		t.Errorf("string content: %+v", r.Messages[0])
	}
	if got := Discovered(r.Messages); !got["mcp__github__create_issue"] || len(got) != 1 {
		t.Errorf("Discovered = %v", got)
	}
}

func TestBoundaryAnnotationsRoundTrip(t *testing.T) {
	m := NewBoundary("Summary of earlier work.", []string{"b", "a"})
	b, _ := json.Marshal(m)
	var back Message
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"b", "a"}, back.Boundary.PreCompactDiscoveredTools); diff != "" {
		t.Errorf("snapshot lost: %s", diff)
	}
	w, _ := json.Marshal(back.wire())
	if string(w) != `{"content":[{"text":"Summary of earlier work.","type":"text"}],"role":"user"}` {
		t.Errorf("wire form keeps the annotation: %s", w)
	}
}

// DecodeRequest reads what UnmarshalJSON reads, without a copy: its
// fields are slices of the data; UnmarshalJSON's are not.
func TestDecodeRequestKeepsTheData(t *testing.T) {
	data := []byte(`{"model":"claude-sonnet-4-5","max_tokens":5,"tools":[{"name":"t","input_schema":{"type":"object"}}],"messages":[{"role":"user","content":"hi"}]}`)
	var copied Request
	if err := copied.UnmarshalJSON(data); err != nil {
		t.Fatal(err)
	}
	kept, err := DecodeRequest(data)
	if err != nil {
		t.Fatal(err)
	}
	if kept.Model != copied.Model || len(kept.Tools) != 1 || string(kept.Tools[0].InputSchema) != string(copied.Tools[0].InputSchema) {
		t.Fatalf("decoded %+v, want %+v", kept, copied)
	}
	at := bytes.Index(data, []byte(`"object"`))
	data[at+1] = 'O' // the caller writes to its buffer
	if string(copied.Tools[0].InputSchema) != `{"type":"object"}` {
		t.Errorf("UnmarshalJSON kept the caller's buffer: %s", copied.Tools[0].InputSchema)
	}
	if string(kept.Tools[0].InputSchema) != `{"type":"Object"}` {
		t.Errorf("DecodeRequest copied the data: %s", kept.Tools[0].InputSchema)
	}
	if _, err := DecodeRequest([]byte(`{"model":`)); err == nil {
		t.Error("a request cut short decodes")
	}
}
