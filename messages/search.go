package messages

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
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
	// Engine is the search engine kind; "bm25" when empty.
	Engine string

	mu      sync.Mutex
	version string
	engine  search.Engine
}

func (s *Searcher) name() string {
	if s.Name == "" {
		return DefaultSearchTool
	}
	return s.Name
}

var searchInputSchema = json.RawMessage(`{"type":"object","properties":{` +
	`"query":{"type":"string","description":"What the tool should do, in a few words (\"create a github issue\"), or select:NAME,NAME to load tools by exact name. +word makes a word required; mcp__server lists a server's tools."},` +
	`"limit":{"type":"integer","minimum":1,"description":"Most tools to load (default 8)."}},` +
	`"required":["query"]}`)

// Tool returns the search tool's definition.
func (s *Searcher) Tool() Tool {
	return Tool{
		Name: s.name(),
		Description: "Load deferred tools. Many tools are not loaded up front; their names are announced in " +
			"<available-deferred-tools>. Search by what you want to do, or select:NAME to load a tool you know; " +
			"the tools found are loaded for the rest of the conversation and can be called from the next turn.",
		InputSchema: searchInputSchema,
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
}

// noMatches is the result of a search that found nothing.
type noMatches struct {
	Matches []string `json:"matches"`
	// Closest names the weak matches, when no tool fits well: not loaded,
	// so that tools that do not fit cost nothing, but named, so that the
	// model can select: one.
	Closest    []string `json:"closest,omitempty"`
	Total      int      `json:"total_deferred_tools"`
	Pending    []string `json:"pending_mcp_servers,omitempty"`
	Suggestion string   `json:"suggestion,omitempty"`
}

// Handle answers one call of the search tool with its tool_result block.
// Problems with the input are in-band errors (is_error), which the model
// can read and correct.
func (s *Searcher) Handle(ctx context.Context, toolUseID string, input json.RawMessage, st SearchState) Block {
	fail := func(format string, args ...any) Block {
		return ToolResult(toolUseID, []Block{TextBlock(fmt.Sprintf(format, args...))}, true)
	}
	var in struct {
		Query *string         `json:"query"`
		Limit json.RawMessage `json:"limit"`
	}
	if err := json.Unmarshal(orEmptyObject(input), &in); err != nil {
		return fail("The input must be an object with \"query\" (a string) and an optional \"limit\": %v", err)
	}
	if in.Query == nil || strings.TrimSpace(*in.Query) == "" {
		return fail(`"query" is required and must not be empty.`)
	}
	limit := 0
	if len(in.Limit) > 0 && string(in.Limit) != "null" {
		var f float64
		if json.Unmarshal(in.Limit, &f) != nil || f != float64(int(f)) || f < 1 {
			return fail(`"limit" must be a positive integer, got %s.`, in.Limit)
		}
		limit = int(f)
	}
	q, err := search.ParseQuery(*in.Query)
	if err != nil {
		return fail("%v", err)
	}
	if q.Select != nil {
		return s.selectTools(toolUseID, q.Select, st)
	}
	eng, err := s.engineFor(st.Deferred)
	if err != nil {
		return fail("%v", err)
	}
	// Ask for more than the limit: discovered tools are dropped after.
	want := limit
	if want == 0 {
		want = search.DefaultBM25Limit
	}
	hits, err := eng.Search(ctx, *in.Query, want+len(st.Discovered))
	if err != nil {
		if errors.Is(err, search.ErrNoLetters) {
			return fail("%v", err)
		}
		return fail("Search failed: %v", err)
	}
	var refs []Block
	var closest []string
	for _, h := range hits {
		if st.Discovered[h.Entry.Name] || h.Entry.Unverified {
			continue
		}
		if h.Weak {
			closest = append(closest, h.Entry.Name)
			continue
		}
		refs = append(refs, ToolReference(h.Entry.Name))
		if len(refs) == want {
			break
		}
	}
	if len(refs) == 0 {
		nm := noMatches{Matches: []string{}, Closest: closest[:min(len(closest), want)], Total: st.Deferred.Len(), Pending: st.Pending}
		switch {
		case len(st.Pending) > 0:
			nm.Suggestion = "Some MCP servers are still connecting; search again shortly."
		case len(closest) > 0:
			nm.Suggestion = "No deferred tool fits this well. Load one of the closest with select:NAME if it does fit."
		}
		b, _ := marshal(nm)
		return ToolResult(toolUseID, []Block{TextBlock(string(b))}, false)
	}
	return ToolResult(toolUseID, refs, false)
}

// selectTools answers select:a,b: the deferred pool first, then every
// tool. Selecting a tool that is already loaded succeeds without a
// reference, so that the model does not retry.
func (s *Searcher) selectTools(toolUseID string, names []string, st SearchState) Block {
	var refs []Block
	var notes []string
	loaded := 0
	for _, n := range names {
		if e, ok := st.Deferred.Find(n); ok && !e.Unverified {
			refs = append(refs, ToolReference(e.Name))
			continue
		}
		if st.All != nil {
			if e, ok := st.All.Find(n); ok {
				loaded++
				notes = append(notes, e.Name+" is already loaded; call it directly.")
				continue
			}
		}
		notes = append(notes, fmt.Sprintf("No tool is named %q.", n))
	}
	if len(refs) == 0 {
		// Only a select: of nothing that exists is an error.
		return ToolResult(toolUseID, []Block{TextBlock(strings.Join(notes, " "))}, loaded == 0)
	}
	// References only: text beside them would undo the turn-boundary fix.
	return ToolResult(toolUseID, refs, false)
}

// engineFor returns the engine of a catalog snapshot, building it once.
func (s *Searcher) engineFor(c *catalog.Catalog) (search.Engine, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.engine != nil && s.version == c.Version() {
		return s.engine, nil
	}
	kind := s.Engine
	if kind == "" {
		kind = "bm25"
	}
	eng, err := search.New(kind, c)
	if err != nil {
		return nil, err
	}
	s.engine, s.version = eng, c.Version()
	return eng, nil
}

func orEmptyObject(raw json.RawMessage) json.RawMessage {
	if len(bytes.TrimSpace(raw)) == 0 {
		return json.RawMessage(`{}`)
	}
	return raw
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
