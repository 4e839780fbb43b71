package messages

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/shelf"
)

// DefaultSearchTool is the search tool's name unless a Searcher says
// otherwise.
const DefaultSearchTool = "tool_search"

// Searcher is the client-side tool search tool: its definition, and a
// handler that answers the model's calls with tool_reference blocks, which
// the API expands into the tools' definitions. It is safe for concurrent
// use; engines are built once per catalog snapshot.
type Searcher struct {
	// Name is the tool's name; DefaultSearchTool when empty.
	Name string
	// Engine is the search engine kind; search.DefaultEngine when empty.
	Engine string
	// Learned is what was learned from use: searches and the tools
	// called after them (Learned over earlier conversations, kept with
	// package learn). A query closely like an earlier one ranks its tools
	// higher (search.Learned); set it before the first search.
	Learned []search.LearnedQuery

	once  sync.Once
	shelf *shelf.Shelf
	err   error
}

func (s *Searcher) name() string {
	if s.Name == "" {
		return DefaultSearchTool
	}
	return s.Name
}

// Tool returns the search tool's definition.
func (s *Searcher) Tool() Tool {
	return Tool{
		Name: s.name(),
		Description: "Load deferred tools. Many tools are not loaded up front; their names are announced in " +
			"<available-deferred-tools>. Search by what you want to do, or select:NAME to load a tool you know; " +
			"the tools found are loaded for the rest of the conversation and can be called from the next turn.",
		InputSchema: shelf.InputSchema(),
	}
}

// SearchState is what a search looks at besides its query.
type SearchState struct {
	// Deferred is the deferred pool: the tools a search can load.
	Deferred *catalog.Catalog
	// All is every tool, for select: of a tool that is already loaded.
	All *catalog.Catalog
	// Discovered is the history's discovered set (see Discovered); those
	// tools are left out of ranked results, since they are loaded.
	Discovered map[string]bool
	// Pending names MCP servers still connecting.
	Pending []string
	// NotConnected are the MCP servers whose tools are unknown now, each
	// as a model reads it: "memory (failed: npm could not install it)"
	// (upstream.Pool.Unavailable's String). A search that finds nothing
	// fitting names them, so that the model tells the person rather than
	// rewording its search.
	NotConnected []string
	// Skills are the skills a search finds beside the tools (entries
	// made with catalog.SkillEntry: a server's skills, as the gateway
	// serves them), or nil.
	Skills *catalog.Catalog
}

// skillMatches is the answer of a search that found skills: they are
// instructions to read, not tools to load, so the answer is text, which
// tool_reference blocks must not have beside them; the tools found are
// named, to load with select:.
type skillMatches struct {
	Skills []skillMatch `json:"skills"`
	Tools  []string     `json:"tools,omitempty"`
	Note   string       `json:"note"`
}

type skillMatch struct {
	Name    string   `json:"name"`
	Server  string   `json:"server,omitempty"`
	Skill   string   `json:"skill"`
	Purpose string   `json:"purpose"`
	Uses    []string `json:"uses,omitempty"`
}

// noMatches is the result of a search that loaded nothing.
type noMatches struct {
	Matches []string `json:"matches"`
	// Closest names the weak matches, when no tool fits well: not loaded,
	// so that tools that do not fit cost nothing, but named, so that the
	// model can select: one.
	Closest []string `json:"closest,omitempty"`
	Total   int      `json:"total_deferred_tools"`
	Pending []string `json:"pending_mcp_servers,omitempty"`
	// NotConnected is SearchState.NotConnected.
	NotConnected []string `json:"not_connected_mcp_servers,omitempty"`
	// Note is the search front end's, word for word the gateway's.
	Note       string `json:"note,omitempty"`
	Suggestion string `json:"suggestion,omitempty"`
}

// Handle answers one call of the search tool with its tool_result block.
// Problems with the input are in-band errors (is_error), which the model
// can read and correct. The search itself is the gateway's (package
// shelf): the same query finds the same tools in the same order.
func (s *Searcher) Handle(ctx context.Context, toolUseID string, input json.RawMessage, st SearchState) Block {
	fail := func(format string, args ...any) Block {
		return ToolResult(toolUseID, []Block{TextBlock(fmt.Sprintf(format, args...))}, true)
	}
	in, err := shelf.ParseInput(input)
	if err != nil {
		return fail("%v", err)
	}
	s.once.Do(func() {
		learned := s.Learned // set before the first search
		s.shelf, s.err = shelf.New(&shelf.Options{Engine: s.Engine,
			Learned: &shelf.Learned{Load: func() (shelf.Past, error) { return shelf.Past{Queries: learned}, nil }}})
	})
	if s.err != nil {
		return fail("%v", s.err)
	}
	s.shelf.Update(st.Deferred)
	snap := s.shelf.UpdateSkills(st.Skills)
	exclude := maps.Clone(st.Discovered)
	for e := range st.Deferred.All() {
		if e.Unverified { // not in the request's tools: a reference to it would be refused
			if exclude == nil {
				exclude = map[string]bool{}
			}
			exclude[e.Name] = true
		}
	}
	req := in.Request()
	req.Loaded, req.Exclude, req.Pending = st.All, exclude, st.Pending
	found, err := snap.Search(ctx, req)
	if err != nil {
		if errors.Is(err, search.ErrNoLetters) {
			return fail("%v", err)
		}
		return fail("Search failed: %v", err)
	}
	if found.Select {
		return selectResult(toolUseID, found)
	}
	if len(found.Hits) == 0 || found.Weak {
		nm := noMatches{Matches: []string{}, Total: st.Deferred.Len(), Pending: found.Pending, Note: found.Note, NotConnected: st.NotConnected}
		if len(st.NotConnected) > 0 {
			nm.Note = search.NotConnectedNote(st.NotConnected, len(found.Hits) == 0, found.Note)
		}
		for _, h := range found.Hits {
			nm.Closest = append(nm.Closest, h.Entry.Name)
		}
		if len(nm.Closest) > 0 {
			nm.Suggestion = "Load one of the closest with select:NAME if it does fit."
		}
		b, _ := marshal(nm)
		return ToolResult(toolUseID, []Block{TextBlock(string(b))}, false)
	}
	if slices.ContainsFunc(found.Hits, func(h search.Hit) bool { return h.Entry.Skill != "" }) {
		return skillResult(toolUseID, found)
	}
	refs := make([]Block, 0, len(found.Hits))
	for _, h := range found.Hits {
		refs = append(refs, ToolReference(h.Entry.Name))
	}
	return ToolResult(toolUseID, refs, false)
}

// skillResult answers a search that found skills: each skill (read its
// SKILL.md), and the tools found, to load with select:.
func skillResult(toolUseID string, found search.Result) Block {
	var sm skillMatches
	for _, h := range found.Hits {
		if e := h.Entry; e.Skill != "" {
			sm.Skills = append(sm.Skills, skillMatch{Name: e.Title, Server: e.Server, Skill: e.Skill, Purpose: shelf.Purpose(e.Description), Uses: e.Uses})
		} else {
			sm.Tools = append(sm.Tools, e.Name)
		}
	}
	sm.Note = "A skill is instructions for a task, not a tool: read its SKILL.md (the URI in \"skill\"), then load the tools it uses with select:NAME,NAME."
	b, _ := marshal(sm)
	return ToolResult(toolUseID, []Block{TextBlock(string(b))}, false)
}

// selectResult answers select:a,b: the deferred pool first, then every
// tool. Selecting a tool that is already loaded succeeds without a
// reference, so that the model does not retry.
func selectResult(toolUseID string, found search.Result) Block {
	var refs []Block
	for _, h := range found.Hits {
		if !h.Entry.Unverified {
			refs = append(refs, ToolReference(h.Entry.Name))
		}
	}
	if len(refs) > 0 {
		// References only: text beside them would undo the turn-boundary fix.
		return ToolResult(toolUseID, refs, false)
	}
	var notes []string
	for _, n := range found.AlreadyLoaded {
		notes = append(notes, n+" is already loaded; call it directly.")
	}
	for _, n := range found.Missing {
		notes = append(notes, fmt.Sprintf("No tool is named %q.", n))
	}
	// Only a select: of nothing that exists is an error.
	return ToolResult(toolUseID, []Block{TextBlock(strings.Join(notes, " "))}, len(found.AlreadyLoaded) == 0)
}

// SchemaHint explains a failed call to a deferred tool that was never
// discovered: its schema was not sent, so the model guessed the input.
// It returns "" when the tool is not deferred or was discovered.
func SchemaHint(tool string, deferred, discovered map[string]bool, searchTool string) string {
	if !deferred[tool] || discovered[tool] {
		return ""
	}
	if searchTool == "" {
		searchTool = DefaultSearchTool
	}
	return fmt.Sprintf("This tool's schema was not sent to the API: %s was not in the discovered-tool set. "+
		"Load it first with %s({\"query\": \"select:%s\"}), then call it again.", tool, searchTool, tool)
}
