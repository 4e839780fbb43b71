package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/messages"
)

// fakeAPI is a Messages API server for tests. It rejects requests the way
// the real API does for the rules tool search depends on, and answers
// with a scripted model: each step sees the request and returns the
// model's content, stop reason and reported input tokens.
type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	steps  []step
	next   int
	bodies []messages.Request // every accepted /v1/messages request
}

// step is one model turn: it may inspect the request (failing the test
// when the library sent the wrong thing) and returns the response.
type step func(t *testing.T, req messages.Request, visible map[string]bool) (content []messages.Block, stop string, inputTokens int)

func newFakeAPI(t *testing.T, steps ...step) *fakeAPI {
	f := &fakeAPI{t: t, steps: steps}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func apiError(w http.ResponseWriter, status int, typ, msg string) {
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}})
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/messages" {
		apiError(w, 404, "not_found_error", "Not found")
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req messages.Request
	if err := json.Unmarshal(body, &req); err != nil {
		apiError(w, 400, "invalid_request_error", "invalid JSON: "+err.Error())
		return
	}
	if msg := validate(req, r.Header.Get("anthropic-beta")); msg != "" {
		apiError(w, 400, "invalid_request_error", msg)
		return
	}
	f.mu.Lock()
	f.bodies = append(f.bodies, req)
	if f.next >= len(f.steps) {
		f.mu.Unlock()
		apiError(w, 500, "api_error", "the script has no more turns")
		return
	}
	s := f.steps[f.next]
	f.next++
	f.mu.Unlock()
	content, stop, input := s(f.t, req, visibleTools(req))
	json.NewEncoder(w).Encode(map[string]any{
		"id": fmt.Sprintf("msg_%d", f.next), "type": "message", "role": "assistant", "model": req.Model,
		"content": content, "stop_reason": stop, "usage": map[string]int{"input_tokens": input, "output_tokens": 10},
	})
}

// validate applies the real API's rules for deferred loading.
func validate(req messages.Request, betas string) string {
	sent := map[string]bool{}
	loaded := 0
	deferLoading := false
	for i, t := range req.Tools {
		if t.Type == "" && !catalog.ValidName(t.Name) {
			return fmt.Sprintf("tools.%d.name: String should match pattern '^[a-zA-Z0-9_-]{1,64}$'", i)
		}
		if t.DeferLoading && t.CacheControl != nil {
			return fmt.Sprintf("tools.%d: defer_loading cannot be used together with cache_control", i)
		}
		if t.DeferLoading {
			deferLoading = true
		} else {
			loaded++
		}
		sent[t.Name] = true
	}
	if len(req.Tools) > 0 && loaded == 0 {
		return "At least one tool must not have defer_loading set: all tools cannot be deferred"
	}
	hasRef := false
	for _, m := range req.Messages {
		for _, b := range m.Content {
			if b.Type != "tool_result" {
				continue
			}
			inner, _ := b.Results()
			for _, r := range inner {
				if r.Type != "tool_reference" {
					continue
				}
				hasRef = true
				if !sent[r.String("tool_name")] {
					return "Tool reference not found in available tools: " + r.String("tool_name")
				}
			}
		}
	}
	if (deferLoading || hasRef) && !strings.Contains(betas, messages.BetaToolSearch) {
		return "defer_loading and tool_reference require the anthropic-beta header " + messages.BetaToolSearch
	}
	return ""
}

// visibleTools are the tools the model can call: those sent without
// defer_loading, and deferred ones a tool_reference has expanded.
func visibleTools(req messages.Request) map[string]bool {
	v := map[string]bool{}
	for _, t := range req.Tools {
		if !t.DeferLoading {
			v[t.Name] = true
		}
	}
	for _, m := range req.Messages {
		for _, b := range m.Content {
			inner, _ := b.Results()
			for _, r := range inner {
				if b.Type == "tool_result" && r.Type == "tool_reference" {
					v[r.String("tool_name")] = true
				}
			}
		}
	}
	return v
}

// Helpers for scripts.

func toolUse(id, name string, input any) messages.Block {
	return messages.Block{Type: "tool_use"}.With("id", id).With("name", name).With("input", input)
}

// lastResults returns the tool_result blocks of the request's last user
// message that has any.
func lastResults(req messages.Request) []messages.Block {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		var out []messages.Block
		for _, b := range req.Messages[i].Content {
			if b.Type == "tool_result" {
				out = append(out, b)
			}
		}
		if len(out) > 0 {
			return out
		}
	}
	return nil
}

func resultText(b messages.Block) string {
	inner, _ := b.Results()
	var parts []string
	for _, r := range inner {
		if r.Type == "text" {
			parts = append(parts, r.String("text"))
		}
	}
	return strings.Join(parts, "")
}

func TestFakeAPIRules(t *testing.T) {
	tool := func(name string, deferLoading bool, cache bool) messages.Tool {
		tl := messages.Tool{Name: name, InputSchema: json.RawMessage(`{"type":"object"}`), DeferLoading: deferLoading}
		if cache {
			tl.CacheControl = json.RawMessage(`{"type":"ephemeral"}`)
		}
		return tl
	}
	ref := messages.Message{Role: "user", Content: []messages.Block{messages.ToolResult("t1", []messages.Block{messages.ToolReference("mcp__a__gone")}, false)}}
	for _, tt := range []struct {
		req  messages.Request
		beta string
		want string
	}{
		{messages.Request{Tools: []messages.Tool{tool(strings.Repeat("x", 65), false, false)}}, "", "String should match pattern"},
		{messages.Request{Tools: []messages.Tool{tool("a", true, false)}}, messages.BetaToolSearch, "all tools cannot be deferred"},
		{messages.Request{Tools: []messages.Tool{tool("s", false, false), tool("a", true, true)}}, messages.BetaToolSearch, "defer_loading cannot be used together with cache_control"},
		{messages.Request{Tools: []messages.Tool{tool("s", false, false)}, Messages: []messages.Message{ref}}, messages.BetaToolSearch, "Tool reference not found in available tools"},
		{messages.Request{Tools: []messages.Tool{tool("s", false, false), tool("a", true, false)}}, "", "require the anthropic-beta header"},
		{messages.Request{Tools: []messages.Tool{tool("s", false, false), tool("a", true, false)}}, messages.BetaToolSearch, ""},
	} {
		if got := validate(tt.req, tt.beta); (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
			t.Errorf("validate = %q, want %q", got, tt.want)
		}
	}
}
