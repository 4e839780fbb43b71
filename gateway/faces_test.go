package gateway

import (
	"context"
	"encoding/json"
	"github.com/toolshelf/toolshelf/upstream"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/messages"
)

// faceAnswer is what a search answered, whichever face it came through:
// the tools in order, and the note.
type faceAnswer struct {
	Names []string
	Note  string
}

// The gateway's search_tools and the Messages library's search tool are
// two faces of one search: the same query finds the same tools, in the
// same order, with the same note.
func TestFacesAgree(t *testing.T) {
	cat := builtin.Catalog()
	cs := connect(t, newGateway(t, upstream.Fixed(cat, "the built-in catalog").Scope(nil), nil), nil)
	var lib messages.Searcher
	queries := []string{
		"create a github issue",
		"read a file from disk",
		"take a screenshot of a web page",
		"store a memory about the user",
		"+slack send a message",
		"mcp__filesystem",
		"query a postgres database",
		"weather forecast for tomorrow in Paris",
		"select:mcp__memory__read_graph,mcp__filesystem__read_text_file",
		"zzqx blorf",
	}
	for _, q := range queries {
		for _, limit := range []int{3, 5} {
			res := call(t, cs, toolSearch, map[string]any{"query": q, "limit": limit})
			if res.IsError {
				t.Fatalf("search_tools %q: %s", q, text(res))
			}
			var sr searchResult
			if err := json.Unmarshal([]byte(text(res)), &sr); err != nil {
				t.Fatal(err)
			}
			viaGateway := faceAnswer{Note: sr.Note}
			for _, m := range sr.Matches {
				viaGateway.Names = append(viaGateway.Names, m.Name)
			}

			input, _ := json.Marshal(map[string]any{"query": q, "limit": limit})
			block := lib.Handle(context.Background(), "toolu_1", input, messages.SearchState{Deferred: cat, All: cat})
			viaLibrary := libraryAnswer(t, block)
			if diff := cmp.Diff(viaGateway, viaLibrary); diff != "" {
				t.Errorf("query %q, limit %d: the faces differ (-gateway +library):\n%s", q, limit, diff)
			}
		}
	}
}

// libraryAnswer reads the tools and note of a search tool result: its
// tool_reference blocks, or the names and note of a result that loaded
// nothing.
func libraryAnswer(t *testing.T, b messages.Block) faceAnswer {
	t.Helper()
	var res struct {
		IsError bool              `json:"is_error"`
		Content []json.RawMessage `json:"content"`
	}
	raw, _ := json.Marshal(b)
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError {
		t.Fatalf("library result %s: %v", raw, err)
	}
	var a faceAnswer
	for _, c := range res.Content {
		var blk struct {
			Type     string `json:"type"`
			ToolName string `json:"tool_name"`
			Text     string `json:"text"`
		}
		json.Unmarshal(c, &blk)
		switch blk.Type {
		case "tool_reference":
			a.Names = append(a.Names, blk.ToolName)
		case "text":
			var nm struct {
				Closest []string `json:"closest"`
				Note    string   `json:"note"`
			}
			if err := json.Unmarshal([]byte(blk.Text), &nm); err != nil {
				t.Fatalf("library text %q: %v", blk.Text, err)
			}
			a.Names, a.Note = nm.Closest, nm.Note
		}
	}
	return a
}
