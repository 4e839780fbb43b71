package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/proxy"
	"github.com/toolshelf/toolshelf/upstream"

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

// The gateway's search_tools, the Messages library's search tool and the
// proxy's hidden search rounds are three faces of one search (package
// shelf): the same query finds the same tools, in the same order, with
// the same note.
func TestFacesAgree(t *testing.T) {
	// What the proxy sees of a tool is what an API request carries: its
	// name, description and schema (no title, no _meta). All three faces
	// search that, so that they search the same words.
	var plain []catalog.Entry
	for e := range builtin.Catalog().All() {
		schema, _ := catalog.NormalizeSchema(e.InputSchema)
		raw, _ := json.Marshal(map[string]any{"name": e.Tool, "description": e.Description, "inputSchema": schema})
		p, err := catalog.ParseTool(e.Server, raw)
		if err != nil {
			t.Fatal(err)
		}
		plain = append(plain, p)
	}
	cat := catalog.New(plain, nil)
	cs := connect(t, newGateway(t, upstream.Fixed(cat, "the built-in catalog").Scope(nil), nil), nil)
	var lib messages.Searcher
	viaProxy := proxyFace(t, cat)
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
		// 0: no limit, the depth the ranking's confidence gives.
		for _, limit := range []int{0, 3, 5} {
			args := map[string]any{"query": q, "limit": limit}
			if limit == 0 {
				delete(args, "limit")
			}
			res := call(t, cs, toolSearch, args)
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

			input, _ := json.Marshal(args)
			block := lib.Handle(context.Background(), "toolu_1", input, messages.SearchState{Deferred: cat, All: cat})
			viaLibrary, refs := libraryAnswer(t, block)
			want := viaGateway
			if refs {
				// tool_reference blocks carry no text beside them (text
				// would undo the API's turn-boundary handling): a note
				// beside found tools (the budget's) is the gateway's and
				// the proxy's alone.
				want.Note = ""
			}
			if diff := cmp.Diff(want, viaLibrary); diff != "" {
				t.Errorf("query %q, limit %d: the faces differ (-gateway +library):\n%s", q, limit, diff)
			}
			if diff := cmp.Diff(viaGateway, viaProxy(q, limit)); diff != "" {
				t.Errorf("query %q, limit %d: the faces differ (-gateway +proxy):\n%s", q, limit, diff)
			}
		}
	}
}

// libraryAnswer reads the tools and note of a search tool result: its
// tool_reference blocks, or the names and note of a result that loaded
// nothing.
func libraryAnswer(t *testing.T, b messages.Block) (a faceAnswer, refs bool) {
	t.Helper()
	var res struct {
		IsError bool              `json:"is_error"`
		Content []json.RawMessage `json:"content"`
	}
	raw, _ := json.Marshal(b)
	if err := json.Unmarshal(raw, &res); err != nil || res.IsError {
		t.Fatalf("library result %s: %v", raw, err)
	}
	for _, c := range res.Content {
		var blk struct {
			Type     string `json:"type"`
			ToolName string `json:"tool_name"`
			Text     string `json:"text"`
		}
		json.Unmarshal(c, &blk)
		switch blk.Type {
		case "tool_reference":
			a.Names, refs = append(a.Names, blk.ToolName), true
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
	return a, refs
}

// proxyFace returns a function that sends one query through the proxy's
// search round, in front of a model API that calls the search tool with
// it, and reads what the round loaded from the tool result the proxy sent
// the API next.
func proxyFace(t *testing.T, cat *catalog.Catalog) func(query string, limit int) faceAnswer {
	var mu sync.Mutex
	var lastResult string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req messages.Request
		json.NewDecoder(r.Body).Decode(&req)
		w.Header().Set("Content-Type", "application/json")
		last := req.Messages[len(req.Messages)-1]
		for _, b := range last.Content {
			if b.Type == "tool_result" {
				var content []struct{ Text string }
				json.Unmarshal(b.Raw("content"), &content)
				mu.Lock()
				lastResult = content[0].Text
				mu.Unlock()
				io.WriteString(w, `{"id":"m2","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":"done"}],"stop_reason":"end_turn","usage":{"input_tokens":1,"output_tokens":1}}`)
				return
			}
		}
		var ask string
		json.Unmarshal(last.Content[0].Raw("text"), &ask)
		io.WriteString(w, `{"id":"m1","type":"message","role":"assistant","model":"m","content":[{"type":"tool_use","id":"toolu_1","name":"`+messages.DefaultSearchTool+`","input":`+ask+`}],"stop_reason":"tool_use","usage":{"input_tokens":1,"output_tokens":1}}`)
	}))
	t.Cleanup(api.Close)
	p, err := proxy.New(&proxy.Options{Upstream: api.URL})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	var tools []messages.Tool
	for e := range cat.All() {
		schema, _ := catalog.NormalizeSchema(e.InputSchema)
		tools = append(tools, messages.Tool{Name: e.Name, Description: e.Description, InputSchema: schema})
	}
	return func(query string, limit int) faceAnswer {
		args := map[string]any{"query": query, "limit": limit}
		if limit == 0 {
			delete(args, "limit")
		}
		input, _ := json.Marshal(args)
		text, _ := json.Marshal(string(input))
		body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 100, "tools": tools,
			"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": json.RawMessage(text)}}}}})
		resp, err := http.Post(srv.URL+"/v1/messages", "application/json", bytes.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		mu.Lock()
		got := lastResult
		mu.Unlock()
		var a faceAnswer
		if rest, ok := strings.CutPrefix(got, "Loaded "); ok {
			_, rest, _ = strings.Cut(rest, ": ")
			names, note, _ := strings.Cut(rest, ". Call them directly.")
			a.Names, a.Note = strings.Split(names, ", "), strings.TrimSpace(note)
		} else {
			a.Note = got
		}
		return a
	}
}
