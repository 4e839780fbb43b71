package policy

import (
	"slices"

	"github.com/toolshelf/toolshelf/catalog"
)

// Tool is what the deferral checklist looks at.
type Tool struct {
	Name string
	// MCP reports that the tool comes from an MCP server.
	MCP bool
	// AlwaysLoad is _meta["anthropic/alwaysLoad"] or the server's
	// configuration: the tool opts out of deferral.
	AlwaysLoad bool
	// ShouldDefer marks a non-MCP tool that asks to be deferred.
	ShouldDefer bool
}

// ToolOf returns the checklist's view of a catalog entry.
func ToolOf(e *catalog.Entry) Tool {
	return Tool{Name: e.Name, MCP: e.IsMCP(), AlwaysLoad: e.AlwaysLoad}
}

// Why a tool was or was not deferred.
const (
	ReasonAlwaysLoad  = "always_load"  // opted out: never deferred
	ReasonMCP         = "mcp"          // MCP tools are deferred
	ReasonSearchTool  = "search_tool"  // the search tool is the way in: never deferred
	ReasonEssential   = "essential"    // a core tool the model needs on turn one
	ReasonShouldDefer = "should_defer" // marked deferrable
	ReasonNotMarked   = "not_marked"   // a non-MCP tool without the mark
)

// Verdict is the checklist's answer for one tool.
type Verdict struct {
	Deferred bool
	Reason   string
}

// Checklist decides which tools are deferred.
type Checklist struct {
	// SearchTool is the name of the tool search tool.
	SearchTool string
	// Essential names core tools that are never deferred.
	Essential []string
	// DeferAll defers every other tool too, MCP or not: for clients
	// whose tools are all alike (an agent on the Chat Completions API
	// has no core tools to keep).
	DeferAll bool
}

// Defer runs the checklist for one tool. The order is the point: each
// rule overrides the ones after it. alwaysLoad comes before the MCP rule,
// so an MCP tool can opt out; the search tool comes after it, so a search
// tool wrapped in an MCP server is deferred like any MCP tool.
func (c *Checklist) Defer(t Tool) Verdict {
	switch {
	case t.AlwaysLoad:
		return Verdict{false, ReasonAlwaysLoad}
	case t.MCP:
		return Verdict{true, ReasonMCP}
	case t.Name == c.SearchTool:
		return Verdict{false, ReasonSearchTool}
	case slices.Contains(c.Essential, t.Name):
		return Verdict{false, ReasonEssential}
	case t.ShouldDefer, c.DeferAll:
		return Verdict{true, ReasonShouldDefer}
	}
	return Verdict{false, ReasonNotMarked}
}
