package messages_test

import (
	"encoding/json"
	"fmt"

	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/policy"
)

// One turn of an agent: the model searched and found create_issue, so this
// request sends it (deferred, expanded by the reference in the history)
// and leaves list_issues out, announced by name only.
func ExamplePrepare() {
	search := &messages.Searcher{}
	tools := []messages.Tool{
		search.Tool(),
		{Name: "mcp__github__create_issue", Description: "Create an issue", InputSchema: json.RawMessage(`{"type":"object"}`)},
		{Name: "mcp__github__list_issues", Description: "List issues", InputSchema: json.RawMessage(`{"type":"object"}`)},
	}
	history := []messages.Message{
		{Role: "user", Content: []messages.Block{messages.TextBlock("File a bug about the crash.")}},
		{Role: "assistant", Content: []messages.Block{messages.Block{Type: "tool_use"}.
			With("id", "toolu_1").With("name", messages.DefaultSearchTool).With("input", map[string]string{"query": "github issue"})}},
		{Role: "user", Content: []messages.Block{messages.ToolResult("toolu_1",
			[]messages.Block{messages.ToolReference("mcp__github__create_issue")}, false)}},
	}
	p, err := messages.Prepare(messages.Turn{
		Model: "claude-sonnet-4-5", Tools: tools, History: history, SearchTool: messages.DefaultSearchTool,
		Decision: policy.Decision{Enabled: true, Deferred: []string{"mcp__github__create_issue", "mcp__github__list_issues"}},
	})
	if err != nil {
		panic(err)
	}
	for _, t := range p.Request.Tools {
		fmt.Println(t.Name, t.DeferLoading)
	}
	fmt.Println(p.Betas)
	// Output:
	// tool_search false
	// mcp__github__create_issue true
	// [advanced-tool-use-2025-11-20]
}
