package messages

import (
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/policy"
)

// BetaToolSearch is the beta that defer_loading and tool_reference need.
const BetaToolSearch = "advanced-tool-use-2025-11-20"

// BetaInlineTools is the beta of tool definitions added by value in the
// middle of a conversation: a system message of tool_addition blocks
// (ToolAddition) after a user message.
const BetaInlineTools = "inline-tools-2026-09-15"

// toolAdditionModels are the models that take tool definitions added in
// the middle of a conversation (mid-conversation system messages are
// Claude Opus 4.8's).
var toolAdditionModels = []string{"claude-opus-4-8"}

// AddsToolsMidConversation reports whether a model takes tools added in
// the middle of a conversation (ToolAdditions).
func AddsToolsMidConversation(model string) bool {
	for _, m := range toolAdditionModels {
		if model == m || strings.HasPrefix(model, m+"-") || strings.HasPrefix(model, m+"@") {
			return true
		}
	}
	return false
}

// ToolAdditions is a system message adding tools by value, for a model
// that takes tools in the middle of a conversation: sent after a user
// message, it leaves the request's tools, its system prompt and every
// message before it as they were, so that the prompt cache holds.
func ToolAdditions(tools []Tool) Message {
	blocks := make([]Block, 0, len(tools))
	for _, t := range tools {
		t.DeferLoading, t.CacheControl = false, nil
		blocks = append(blocks, Block{Type: "tool_addition"}.With("tool", map[string]any{"type": "tool_definition", "definition": t}))
	}
	return Message{Role: "system", Content: blocks}
}

// AddedTools returns the tools a history's tool_addition blocks added.
func AddedTools(history []Message) map[string]bool {
	added := map[string]bool{}
	for _, m := range history {
		if m.Role != "system" {
			continue
		}
		for _, b := range m.Content {
			if b.Type != "tool_addition" {
				continue
			}
			var tool struct {
				Definition struct {
					Name string `json:"name"`
				} `json:"definition"`
			}
			if json.Unmarshal(b.Raw("tool"), &tool) == nil && tool.Definition.Name != "" {
				added[tool.Definition.Name] = true
			}
		}
	}
	return added
}

// Announce is how the deferred tools are announced to the model.
type Announce int

const (
	// AnnounceList prepends one user message listing every deferred tool
	// in <available-deferred-tools>. Simple, but the first message changes
	// whenever the pool does, which busts the prompt cache.
	AnnounceList Announce = iota
	// AnnounceDelta appends a message with the tools added and removed
	// since the history's earlier announcements, leaving the prefix
	// stable. The message must be kept in the history (Prepared.Delta).
	AnnounceDelta
)

// Texts the model reads, from Prepare.
const (
	toolLoadedText  = "Tool loaded."
	searchOffText   = "Tool search is off for this request; every tool is available directly."
	toolsGoneText   = "The tools this search found are no longer available."
	deferredListTag = "available-deferred-tools"
	deferredDiffTag = "deferred-tools-delta"
)

// Turn is what one request is prepared from.
type Turn struct {
	Model string
	// Tools is every tool the agent has, the search tool included.
	Tools []Tool
	// Decision is policy.Decide's answer for this request: with Enabled,
	// Decision.Deferred names the tools to defer.
	Decision policy.Decision
	// SearchTool is the name of the tool search tool; it is sent only
	// while tool search is on.
	SearchTool string
	// BetasDisabled is DISABLE_EXPERIMENTAL_BETAS: no defer_loading, no
	// tool_reference and no beta header reach the wire.
	BetasDisabled bool
	History       []Message
	Announce      Announce
	// Servers says what the deferred tools' servers do, one line each
	// (policy.Summaries), announced with the deferred tools: a model
	// that does not know what is behind the search tool rarely searches.
	// AnnounceDelta repeats it only when it changes.
	Servers []string
	// ToolAdditions is for a model that takes tools in the middle of a
	// conversation (AddsToolsMidConversation): a discovered tool is not
	// sent in the request's tools but added by a system message right
	// after the user message whose search result found it (its
	// tool_reference blocks become text), so that the tools, the system
	// prompt and every earlier message stay byte for byte the same from
	// turn to turn, and the prompt cache holds.
	ToolAdditions bool
	// Extra holds the request's other fields (system, max_tokens, ...).
	Extra map[string]json.RawMessage
}

// Prepared is one request ready to send.
type Prepared struct {
	Request Request
	// Betas are the anthropic-beta values the request needs.
	Betas []string
	// Delta is the announcement AnnounceDelta appended to the request, or
	// nil. Append it to the history as well: later turns announce only
	// what changed since.
	Delta *Message
}

// Prepare builds the request for one turn:
//
//   - tools: with tool search on, the tools that are not deferred, the
//     search tool, and the deferred tools the history has discovered:
//     with defer_loading when a tool_reference in the history expands
//     them (and never also with cache_control, which the API rejects: it
//     moves to the last tool that is not deferred), in full when their
//     reference was compacted away;
//     undiscovered deferred tools are left out and only announced. If no
//     tool would be left without defer_loading (which the API rejects), or
//     the search tool is not among the tools, nothing is deferred. With
//     tool search off, every tool but the search tool, in full;
//   - history: toolshelf's annotations removed; tool_reference blocks
//     removed when search is off, or when they name a tool not sent;
//     with search on, the turn-boundary fix: a user message with tool
//     references gets a text block, and its text siblings move to the
//     next user message that has tool results but no references;
//   - the announcement of deferred tools (see [Announce]);
//   - the beta header when defer_loading or tool_reference is used.
func Prepare(t Turn) (*Prepared, error) {
	for _, tool := range t.Tools {
		if tool.Type == "" && !catalog.ValidName(tool.Name) {
			return nil, fmt.Errorf("tool name %q is not valid for the Messages API (1 to 64 of a-z, A-Z, 0-9, _ and -)", tool.Name)
		}
	}
	search := t.Decision.Enabled && !t.BetasDisabled
	deferred := map[string]bool{}
	if search {
		for _, n := range t.Decision.Deferred {
			deferred[n] = true
		}
	}
	referenced := referencedIn(t.History)
	discovered := withBoundaries(maps.Clone(referenced), t.History)
	adding := search && t.ToolAdditions
	if adding {
		// Found tools come by system messages (addTools), not the tools.
		referenced, discovered = map[string]bool{}, map[string]bool{}
	}

	tools, ok := selectTools(t.Tools, deferred, discovered, referenced, t.SearchTool, search)
	if !ok {
		// Fail closed: the API rejects a request whose every tool is
		// deferred, so defer nothing.
		search, deferred, adding = false, map[string]bool{}, false
		tools, _ = selectTools(t.Tools, deferred, discovered, referenced, t.SearchTool, false)
	}
	sent := map[string]bool{}
	for _, tool := range tools {
		sent[tool.Name] = true
	}
	if adding {
		for n := range deferred {
			sent[n] = true // added where found (addTools)
		}
	}

	p := &Prepared{Request: Request{Model: t.Model, Tools: tools, Extra: maps.Clone(t.Extra)}}
	msgs := make([]Message, 0, len(t.History)+1)
	for _, m := range t.History {
		msgs = append(msgs, cleanMessage(m.wire(), search, sent))
	}
	if adding {
		msgs = addTools(msgs, t.Tools, deferred)
	} else if search {
		msgs = fixTurnBoundaries(msgs)
	}
	if search {
		var names []string
		for _, tool := range t.Tools {
			if deferred[tool.Name] {
				names = append(names, tool.Name)
			}
		}
		slices.Sort(names)
		switch t.Announce {
		case AnnounceList:
			if len(names) > 0 {
				list := Announcement(names, t.Servers)
				msgs = append([]Message{{Role: "user", Content: []Block{TextBlock(list)}}}, msgs...)
			}
		case AnnounceDelta:
			if d := delta(t.History, t.Tools, names, t.Servers); d != nil {
				msgs = append(msgs, d.wire())
				p.Delta = d
			}
		}
	}
	p.Request.Messages = msgs
	switch {
	case adding && len(AddedTools(p.Request.Messages)) > 0:
		p.Betas = []string{BetaInlineTools}
	case search && usesBeta(p.Request):
		p.Betas = []string{BetaToolSearch}
	}
	return p, nil
}

// selectTools picks the tools of a request. ok is false when search is on
// and every selected tool would be deferred.
//
// A discovered tool is sent with defer_loading when a tool_reference in
// the history expands it for the model; a discovered tool whose reference
// was compacted away is sent in full instead, so that the model still
// sees its schema.
func selectTools(all []Tool, deferred, discovered, referenced map[string]bool, searchTool string, search bool) (tools []Tool, ok bool) {
	var movedCache json.RawMessage
	lastLoaded := -1
	for _, tool := range all {
		switch {
		case tool.Name == searchTool && !search:
			continue
		case deferred[tool.Name] && !discovered[tool.Name]:
			continue // announced, not sent
		case deferred[tool.Name] && referenced[tool.Name]:
			tool.DeferLoading = true
			if tool.CacheControl != nil {
				movedCache, tool.CacheControl = tool.CacheControl, nil
			}
		default:
			tool.DeferLoading = false
			lastLoaded = len(tools)
		}
		tools = append(tools, tool)
	}
	if search && (lastLoaded < 0 || !slices.ContainsFunc(tools, func(t Tool) bool { return t.Name == searchTool })) {
		// Nothing would be sent in full, or there is no way to load the
		// deferred tools: either way the request cannot work.
		return nil, false
	}
	if lastLoaded < 0 {
		return tools, true
	}
	if movedCache != nil && tools[lastLoaded].CacheControl == nil {
		tools[lastLoaded].CacheControl = movedCache
	}
	return tools, true
}

// addTools turns a history's discoveries into tool additions: each
// user message whose search results reference deferred tools gets them
// as text ("Tool loaded."), and a system message after it adds the tools
// not added before; tools a compaction boundary carries are added after
// the boundary's message (or the next user message). What a history
// gives is added at the same place every turn.
func addTools(msgs []Message, all []Tool, deferred map[string]bool) []Message {
	defs := map[string]Tool{}
	for _, t := range all {
		if deferred[t.Name] {
			defs[t.Name] = t
		}
	}
	added := map[string]bool{}
	var pending []string // a boundary's tools, waiting for a user message
	out := make([]Message, 0, len(msgs)+1)
	for _, m := range msgs {
		var names []string
		if m.Boundary != nil {
			pending = append(pending, m.Boundary.PreCompactDiscoveredTools...)
		}
		if m.Role == "user" {
			names = pending
			for _, b := range m.Content {
				names = append(names, references(b)...)
			}
			pending = nil
			m = loadedAsText(m)
		}
		out = append(out, m)
		var need []Tool
		for _, n := range names {
			if t, ok := defs[n]; ok && !added[n] {
				added[n] = true
				need = append(need, t)
			}
		}
		if len(need) > 0 {
			out = append(out, ToolAdditions(need))
		}
	}
	return out
}

// loadedAsText replaces a user message's tool_reference blocks with text
// saying the tool was loaded.
func loadedAsText(m Message) Message {
	if !hasReferences(m) {
		return m
	}
	content := make([]Block, 0, len(m.Content))
	for _, b := range m.Content {
		if b.Type == "tool_result" && b.hasArrayContent() {
			inner, _ := b.Results()
			kept := make([]Block, 0, len(inner))
			for _, r := range inner {
				if r.Type == "tool_reference" {
					r = TextBlock(toolLoadedText + " " + r.String("tool_name"))
				}
				kept = append(kept, r)
			}
			b = b.With("content", kept)
		}
		content = append(content, b)
	}
	m.Content, m.Text = content, false
	return m
}

// cleanMessage removes what the API must not see: tool_reference blocks
// when search is off or the tool is not sent, and the caller field of
// tool_use blocks when search is off.
func cleanMessage(m Message, search bool, sent map[string]bool) Message {
	switch m.Role {
	case "user":
		changed := false
		content := make([]Block, 0, len(m.Content))
		for _, b := range m.Content {
			if b.Type == "tool_result" && b.hasArrayContent() {
				if nb, ok := stripReferences(b, search, sent); ok {
					b, changed = nb, true
				}
			}
			content = append(content, b)
		}
		if changed {
			m.Content, m.Text = content, false
		}
	case "assistant":
		if search {
			return m
		}
		content := slices.Clone(m.Content)
		for i, b := range content {
			if b.Type == "tool_use" && b.Raw("caller") != nil {
				content[i] = b.With("caller", nil)
			}
		}
		m.Content = content
	}
	return m
}

// stripReferences removes the references of a tool_result that the
// request cannot have. ok reports a change.
func stripReferences(b Block, search bool, sent map[string]bool) (Block, bool) {
	inner, _ := b.Results()
	kept := make([]Block, 0, len(inner))
	removed := false
	for _, r := range inner {
		if r.Type == "tool_reference" && (!search || !sent[r.String("tool_name")]) {
			removed = true
			continue
		}
		kept = append(kept, r)
	}
	if !removed {
		return b, false
	}
	if len(kept) == 0 {
		text := toolsGoneText
		if !search {
			text = searchOffText
		}
		kept = []Block{TextBlock(text)}
	}
	return b.With("content", kept), true
}

// fixTurnBoundaries applies the two mitigations of the turn-boundary
// problem. The API expands tool references into a functions block inline;
// text beside them in the same user message then reads as a second human
// turn, and a model that has seen that pattern ends conversations early.
// So a message with references gets its text siblings moved to the next
// user message that has tool results and no references (if there is
// one), and a message with references and no text gets a short one.
func fixTurnBoundaries(msgs []Message) []Message {
	out := slices.Clone(msgs)
	for i := range out {
		if out[i].Role != "user" || !hasReferences(out[i]) {
			continue
		}
		var texts, rest []Block
		for _, b := range out[i].Content {
			if b.Type == "text" {
				texts = append(texts, b)
			} else {
				rest = append(rest, b)
			}
		}
		if len(texts) > 0 {
			for j := i + 1; j < len(out); j++ {
				if out[j].Role == "user" && hasToolResults(out[j]) && !hasReferences(out[j]) {
					out[j].Content = append(slices.Clone(out[j].Content), texts...)
					out[j].Text = false
					out[i].Content, texts = rest, nil
					break
				}
			}
		}
		if len(texts) == 0 {
			out[i].Content = append(slices.Clone(out[i].Content), TextBlock(toolLoadedText))
		}
		out[i].Text = false
	}
	return out
}

func hasReferences(m Message) bool {
	for _, b := range m.Content {
		if len(references(b)) > 0 {
			return true
		}
	}
	return false
}

func hasToolResults(m Message) bool {
	for _, b := range m.Content {
		if b.Type == "tool_result" {
			return true
		}
	}
	return false
}

// delta returns the announcement of what changed in the deferred pool
// since the history's announcements, or nil. A tool announced earlier
// that is now loaded (no longer deferred but still a tool) is not
// removed: it is still there, just loaded differently.
func delta(history []Message, tools []Tool, deferredNames []string, servers []string) *Message {
	before := announced(history)
	pool := map[string]bool{}
	for _, t := range tools {
		pool[t.Name] = true
	}
	var d Delta
	for _, n := range deferredNames {
		if !before[n] {
			d.Added = append(d.Added, n)
		}
	}
	for _, n := range slices.Sorted(maps.Keys(before)) {
		if !pool[n] {
			d.Removed = append(d.Removed, n)
		}
	}
	if len(servers) > 0 && !slices.Equal(servers, announcedServers(history)) {
		d.Servers = servers
	}
	if len(d.Added) == 0 && len(d.Removed) == 0 && d.Servers == nil {
		return nil
	}
	var b strings.Builder
	b.WriteString("<" + deferredDiffTag + ">\n")
	b.WriteString(serversText(d.Servers))
	if len(d.Added) > 0 {
		b.WriteString("Deferred tools now available (load with the tool search tool):\n" + strings.Join(d.Added, "\n") + "\n")
	}
	if len(d.Removed) > 0 {
		b.WriteString("No longer available:\n" + strings.Join(d.Removed, "\n") + "\n")
	}
	b.WriteString("</" + deferredDiffTag + ">")
	return &Message{Role: "user", Content: []Block{TextBlock(b.String())}, Delta: &d}
}

// Announcement is the text that announces deferred tools to a model:
// what their servers do (policy.Summaries; may be empty), then their
// names, in <available-deferred-tools>.
func Announcement(names, servers []string) string {
	head := serversText(servers)
	if head != "" {
		head += "Tools:\n"
	}
	return "<" + deferredListTag + ">\n" + head + strings.Join(names, "\n") + "\n</" + deferredListTag + ">"
}

// serversText introduces the servers' summary in an announcement.
func serversText(servers []string) string {
	if len(servers) == 0 {
		return ""
	}
	return "Servers whose tools the tool search tool finds:\n" + strings.Join(servers, "\n") + "\n"
}

// usesBeta reports whether a request has defer_loading or tool_reference.
func usesBeta(r Request) bool {
	for _, t := range r.Tools {
		if t.DeferLoading {
			return true
		}
	}
	for _, m := range r.Messages {
		if m.Role == "user" && hasReferences(m) {
			return true
		}
	}
	return false
}
