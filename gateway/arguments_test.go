package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/shelf"
)

// A call whose arguments do not fit the tool's schema is answered with
// the whole definition and never reaches the server; a call that fits
// goes through. Compact matches make such calls likelier, and one step
// mends them.
func TestMisfitArgumentsGetTheSchema(t *testing.T) {
	strict := map[string]any{"inputSchema": map[string]any{
		"type":     "object",
		"$schema":  "http://json-schema.org/draft-07/schema#",
		"required": []string{"channel", "text"},
		"properties": map[string]any{
			"channel": map[string]any{"type": "string"},
			"text":    map[string]any{"type": "string"},
			"urgency": map[string]any{"enum": []string{"low", "high"}},
		},
		"additionalProperties": false,
	}}
	g, _ := gatewayFor(t, nil, memServer(t, "slack", []json.RawMessage{rawTool("post_message", "Post a message to a channel", strict)}))
	cs := connect(t, g, nil)
	for _, args := range []map[string]any{
		{"text": "hi"},                // a required one missing
		{"channel": "ops", "text": 5}, // a wrong type
		{"channel": "ops", "text": "hi", "urgency": "medium"}, // not in the enum
		{"channel": "ops", "text": "hi", "colour": "red"},     // an unknown one
	} {
		res := call(t, cs, toolCall, map[string]any{"name": "mcp__slack__post_message", "arguments": args})
		got := text(res)
		if !res.IsError || !strings.Contains(got, "do not fit") || !strings.Contains(got, `"input_schema"`) || strings.Contains(got, `"tool":"post_message"`) {
			t.Errorf("arguments %v: %s", args, got)
		}
	}
	res := call(t, cs, toolCall, map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{"channel": "ops", "text": "hi", "urgency": "low"}})
	if res.IsError || !strings.Contains(text(res), `"tool":"post_message"`) {
		t.Errorf("arguments that fit: %s", text(res))
	}
}

// "search": {"results": "full"} gives whole definitions in every answer.
func TestFullResults(t *testing.T) {
	g, _ := gatewayFor(t, &Options{Results: shelf.Full}, standardUpstreams(t)...)
	cs := connect(t, g, nil)
	var sr searchResult
	json.Unmarshal([]byte(text(call(t, cs, toolSearch, map[string]any{"query": "create a pull request"}))), &sr)
	if len(sr.Matches) == 0 || sr.Matches[0].InputSchema == nil || sr.Matches[0].Description == "" || sr.Matches[0].Signature != "" {
		t.Errorf("full matches: %+v", sr.Matches)
	}
}
