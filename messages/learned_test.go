package messages

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/search"
)

func TestLearned(t *testing.T) {
	var history []Message
	err := json.Unmarshal([]byte(`[
	  {"role": "user", "content": "Open an issue about the crash."},
	  {"role": "assistant", "content": [{"type": "tool_use", "id": "s1", "name": "tool_search", "input": {"query": "file an issue"}}]},
	  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "s1", "content": [
	    {"type": "tool_reference", "tool_name": "mcp__github__create_issue"},
	    {"type": "tool_reference", "tool_name": "mcp__github__list_issues"}]}]},
	  {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "mcp__github__create_issue", "input": {"title": "secret title"}}]},
	  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "created"}]},
	  {"role": "assistant", "content": [{"type": "tool_use", "id": "s2", "name": "tool_search", "input": {"query": "send a slack message"}}]},
	  {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "s2", "content": [
	    {"type": "tool_reference", "tool_name": "mcp__slack__post_message"}]}]},
	  {"role": "assistant", "content": [{"type": "text", "text": "I will not post after all."}]}
	]`), &history)
	if err != nil {
		t.Fatal(err)
	}
	got := Learned(history, "tool_search")
	want := []search.LearnedQuery{{Query: "file an issue", Tools: []string{"mcp__github__create_issue"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Learned (-want +got):\n%s", diff)
	}
}
