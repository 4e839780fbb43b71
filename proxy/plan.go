package proxy

import (
	"context"
	"encoding/json"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/shelf"
)

// toolSet is what the proxy derives from one request's custom tools:
// their snapshot (catalog and search, the same as every face's, package
// shelf), the policy's view of them, and what their servers do.
type toolSet struct {
	snap    *shelf.Snapshot
	view    *policy.View
	err     error
	servers []string // policy.Summaries of the deferrable tools
}

// plan is how one request is rewritten.
type plan struct {
	set        *toolSet
	decision   policy.Decision
	deferred   map[string]bool // tools kept out unless loaded
	loaded     map[string]bool // deferred tools sent in full
	searchName string
	// additions: found tools are added in system messages after the
	// search's results (Options.ToolAdditions), not to the tools.
	additions bool
	// toolsKey identifies the request's tools (see toolsKey).
	toolsKey string
}

// clientDefers reports whether a request's client does tool search
// itself: a server-side tool search tool, tools sent with defer_loading,
// or Claude Code's own ToolSearch tool. Such a request passes untouched.
func clientDefers(tools []messages.Tool) bool {
	return slices.ContainsFunc(tools, func(t messages.Tool) bool {
		return strings.HasPrefix(t.Type, "tool_search_tool") || t.DeferLoading || t.Name == "ToolSearch"
	})
}

// searchToolName picks the search tool's name: the Messages library's,
// unless the client has a tool of that name.
func searchToolName(tools []messages.Tool) string {
	for _, name := range []string{messages.DefaultSearchTool, "toolshelf_tool_search"} {
		if !slices.ContainsFunc(tools, func(t messages.Tool) bool { return t.Name == name }) {
			return name
		}
	}
	return "toolshelf_tool_search_2"
}

// planInput is what the deferral decision needs of a request, whatever
// its API.
type planInput struct {
	model string
	tools []messages.Tool // every tool; those with a Type are not searched
	// called names the tools the conversation's history called.
	called []string
	// deferAll defers every tool, not only MCP tools (Chat Completions).
	deferAll bool
}

// planFor decides how to rewrite a request; nil means it passes
// untouched.
func (s *Server) planFor(ctx context.Context, in planInput) *plan {
	if len(in.tools) == 0 || clientDefers(in.tools) {
		return nil
	}
	name := searchToolName(in.tools)
	searchDef, _ := json.Marshal(searchTool(name, 0))
	key, size := toolsKey(name, in.deferAll, in.tools)
	set, err := s.plans.get(ctx, key, size, func() *toolSet {
		c := toolCatalog(in.tools)
		sh, err := shelf.New(&shelf.Options{Engine: s.opts.Engine,
			Checklist: policy.Checklist{SearchTool: name, DeferAll: in.deferAll}, Extra: []json.RawMessage{searchDef}})
		if err != nil {
			return &toolSet{err: err}
		}
		t := &toolSet{snap: sh.Update(c)}
		t.view = t.snap.View(ctx)
		deferred := map[string]bool{}
		for e := range c.All() {
			deferred[e.Name] = t.view.Checklist.Defer(policy.ToolOf(e)).Deferred
		}
		t.servers = policy.Summaries(c.Filter(func(e *catalog.Entry) bool { return deferred[e.Name] }))
		return t
	})
	if err != nil {
		return nil // the client has gone
	}
	if set.err != nil {
		s.logger.Warn("cannot index the request's tools; passing it untouched", "error", set.err)
		return nil
	}
	d := set.view.Decide(policy.Request{
		Settings: s.opts.Settings, Model: in.model, ContextWindow: s.opts.ContextWindow,
		// The proxy sends found tools in full, which every model takes:
		// no model is unsupported, and no base URL turns it off.
		UnsupportedModels: []string{}, SearchAvailable: true,
	})
	if !d.Enabled || len(d.Deferred) == 0 {
		return nil
	}
	p := &plan{set: set, decision: d, deferred: map[string]bool{}, loaded: map[string]bool{}, searchName: name, toolsKey: key}
	for _, n := range d.Deferred {
		p.deferred[n] = true
	}
	// Tools the model called earlier in the conversation stay loaded.
	for _, n := range in.called {
		if p.deferred[n] {
			p.loaded[n] = true
		}
	}
	return p
}

// messagesInput is what planFor needs of a Messages API request.
func messagesInput(req *messages.Request) planInput {
	in := planInput{model: req.Model, tools: req.Tools}
	for _, m := range req.Messages {
		if m.Role != "assistant" {
			continue
		}
		for _, b := range m.Content {
			if b.Type == "tool_use" {
				in.called = append(in.called, b.String("name"))
			}
		}
	}
	return in
}

// toolCatalog makes a catalog of a request's custom tools (server tools,
// which have a type, are not searched). An mcp__server__tool name is an
// MCP tool of that server, which the checklist defers.
func toolCatalog(tools []messages.Tool) *catalog.Catalog {
	var es []catalog.Entry
	for _, t := range tools {
		if t.Type != "" || !catalog.ValidName(t.Name) {
			continue
		}
		raw, _ := json.Marshal(map[string]any{"name": t.Name, "description": t.Description, "inputSchema": t.InputSchema})
		server, tool := "", t.Name
		if rest, ok := strings.CutPrefix(t.Name, catalog.Prefix); ok {
			if srv, name, ok := strings.Cut(rest, "__"); ok && srv != "" && name != "" {
				server, tool = srv, name
			}
		}
		e, err := catalog.ParseTool(server, raw)
		if err != nil {
			continue
		}
		e.Tool = tool
		es = append(es, e)
	}
	// A tool whose name the catalog had to change (too long, or like
	// another's) is left out: it is never deferred, and the client calls
	// it by its own name.
	names := map[string]bool{}
	for _, t := range tools {
		names[t.Name] = true
	}
	return catalog.New(es, nil).Filter(func(e *catalog.Entry) bool { return names[e.Name] })
}

// searchInput is what the search tool takes: every face's input, with
// the default of the faces that load what they find.
var searchInput = shelf.InputSchema()

// searchTool is the tool the proxy adds in place of the deferred ones.
func searchTool(name string, deferred int) messages.Tool {
	desc := "Load deferred tools. Many tools are not loaded up front; their names are in <available-deferred-tools> in the system prompt. " +
		"Search by what you want to do (or select:NAME to load a tool you know); the tools found are loaded and can be called at once."
	if deferred > 0 {
		desc += " " + plural(deferred, "tool is", "tools are") + " deferred."
	}
	return messages.Tool{Name: name, Description: desc, InputSchema: searchInput}
}

func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return itoa(n) + " " + many
}

func itoa(n int) string {
	b, _ := json.Marshal(n)
	return string(b)
}

// rewrite returns the request a round sends: the deferred tools that are
// not loaded left out, the search tool added, and the announcement
// appended to the system prompt.
func (p *plan) rewrite(req messages.Request, msgs []messages.Message) messages.Request {
	if p.additions {
		return p.rewriteAdding(req, msgs)
	}
	out, _ := p.withSearch(req, false)
	out.Messages = msgs
	return out
}

// withSearch is req with the deferred tools left out (all of them when
// inline, else those not loaded), the search tool added, and the left-out
// tools announced in the system prompt; held are the tools left out.
func (p *plan) withSearch(req messages.Request, inline bool) (out messages.Request, held map[string]messages.Tool) {
	out = req
	out.Tools = nil
	held = map[string]messages.Tool{}
	var announced []string
	for _, t := range req.Tools {
		if t.Type == "" && p.deferred[t.Name] && (inline || !p.loaded[t.Name]) {
			held[t.Name] = t
			announced = append(announced, t.Name)
			continue
		}
		out.Tools = append(out.Tools, t)
	}
	out.Tools = append(out.Tools, searchTool(p.searchName, len(announced)))
	slices.Sort(announced)
	out.Extra = make(map[string]json.RawMessage, len(req.Extra)+1)
	for k, v := range req.Extra {
		out.Extra[k] = v
	}
	text := messages.Announcement(announced, p.set.servers) +
		"\nThese tools are not loaded: call " + p.searchName + " to load the ones you need, then call them."
	out.Extra["system"] = appendSystem(req.Extra["system"], text)
	delete(out.Extra, "stream")
	return out, held
}

// appendSystem adds a text block to a request's system prompt, which may
// be absent, a string, or an array of blocks.
func appendSystem(system json.RawMessage, text string) json.RawMessage {
	block := map[string]any{"type": "text", "text": text}
	var s string
	var blocks []json.RawMessage
	switch {
	case len(system) == 0 || string(system) == "null":
		b, _ := json.Marshal(text)
		return b
	case json.Unmarshal(system, &s) == nil:
		b, _ := json.Marshal([]any{map[string]any{"type": "text", "text": s}, block})
		return b
	case json.Unmarshal(system, &blocks) == nil:
		nb, _ := json.Marshal(block)
		b, _ := json.Marshal(append(blocks, nb))
		return b
	}
	return system // not a shape the API takes; the API will say so
}

// rewriteAdding is rewrite for a model that takes tools in the middle of
// a conversation: the request's tools are those not deferred and the
// search tool, the system prompt announces every deferred tool, both the
// same in every round and every turn; a tool enters the conversation as
// a system message of tool_addition blocks, after the search results
// that found it (afterSearch) or, for one the history called, before the
// assistant message that first called it. Nothing before the newest
// message changes, so the prompt cache holds.
func (p *plan) rewriteAdding(req messages.Request, msgs []messages.Message) messages.Request {
	out, defs := p.withSearch(req, true)
	added := messages.AddedTools(msgs)
	out.Messages = make([]messages.Message, 0, len(msgs)+1)
	for _, m := range msgs {
		if m.Role == "assistant" {
			var need []messages.Tool
			for _, b := range m.Content {
				if n := b.String("name"); b.Type == "tool_use" && !added[n] {
					if t, ok := defs[n]; ok {
						need = append(need, t)
						added[n] = true
					}
				}
			}
			if len(need) > 0 {
				out.Messages = append(out.Messages, messages.ToolAdditions(need))
			}
		}
		out.Messages = append(out.Messages, m)
	}
	return out
}

// afterSearch is what follows a round's search results: with tool
// additions, the system message adding the tools the searches loaded
// (loaded before them: was).
func (p *plan) afterSearch(req messages.Request, msgs []messages.Message, was map[string]bool) []messages.Message {
	if !p.additions {
		return msgs
	}
	var found []messages.Tool
	for _, t := range req.Tools {
		if t.Type == "" && p.loaded[t.Name] && !was[t.Name] {
			found = append(found, t)
		}
	}
	if len(found) == 0 {
		return msgs
	}
	return append(msgs, messages.ToolAdditions(found))
}
