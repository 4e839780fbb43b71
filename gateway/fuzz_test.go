package gateway

import (
	"context"
	"encoding/json"
	"github.com/toolshelf/toolshelf/upstream"
	"testing"

	"github.com/toolshelf/toolshelf/internal/builtin"
)

// FuzzCallTool sends call_tool and search_tools arguments a model might
// write, any bytes at all, through the gateway's handlers over the
// built-in catalog: every input gets a result, none panics, and what is
// echoed back stays bounded.
func FuzzCallTool(f *testing.F) {
	for _, seed := range []string{
		`{"name": "mcp__github__create_issue", "arguments": {"title": "x"}}`,
		`{"name": "mcp__github__create_isue"}`,
		`{"name": "create_issue", "arguments": "{\"title\": \"x\"}"}`,
		`{"name": "mcp__github__create_issue", "arguments": {"arguments": {"title": "x"}}}`,
		`{"name": 3}`, `[]`, `null`, `{"name": ""}`, `{"query": "select:a,b,,", "limit": 2.5}`,
		`{"query": "+", "limit": -1}`, `{"query": "mcp__"}`,
	} {
		f.Add([]byte(seed))
	}
	g, err := New(upstream.Fixed(builtin.Catalog(), "the built-in catalog").Scope(nil), &Options{PendingWait: 1})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		ctx := context.Background()
		for _, res := range [...]any{g.callTool(ctx, nil, json.RawMessage(raw)), g.searchTools(ctx, nil, nil, json.RawMessage(raw))} {
			b, err := json.Marshal(res)
			if err != nil {
				t.Fatalf("result does not encode: %v", err)
			}
			if len(b) > 200_000 {
				t.Fatalf("a %d-byte input gave a %d-byte result", len(raw), len(b))
			}
		}
	})
}
