package messages

import (
	"encoding/json"
	"maps"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/search"
)

// Discovered returns the tools the model has discovered in a history: the
// tool_name of every tool_reference inside a tool_result of a user
// message, and every name a compaction boundary carries. The set
// only grows as a conversation goes on, through any number of
// compactions, as long as compactors keep the boundaries they make.
func Discovered(history []Message) map[string]bool {
	return withBoundaries(referencedIn(history), history)
}

// withBoundaries adds the names a history's compaction boundaries carry to
// set, and returns it.
func withBoundaries(set map[string]bool, history []Message) map[string]bool {
	for _, m := range history {
		if m.Boundary != nil {
			for _, n := range m.Boundary.PreCompactDiscoveredTools {
				set[n] = true
			}
		}
	}
	return set
}

// referencedIn returns the tools that tool_reference blocks of a
// history's user messages name (not what compaction boundaries carry).
func referencedIn(history []Message) map[string]bool {
	set := map[string]bool{}
	for _, m := range history {
		if m.Role != "user" {
			continue
		}
		for _, b := range m.Content {
			for _, n := range references(b) {
				set[n] = true
			}
		}
	}
	return set
}

// references returns the tool names a tool_result block references.
func references(b Block) []string {
	if b.Type != "tool_result" || !b.hasArrayContent() {
		return nil
	}
	inner, _ := b.Results()
	var names []string
	for _, r := range inner {
		if r.Type == "tool_reference" {
			if n := r.String("tool_name"); n != "" {
				names = append(names, n)
			}
		}
	}
	return names
}

// DiscoveredNames returns the discovered set of a history, sorted: what a
// compactor stores on the boundary it puts in place of the history it
// summarises (see [NewBoundary]), so that compaction loses no tool.
func DiscoveredNames(history []Message) []string {
	return slices.Sorted(maps.Keys(Discovered(history)))
}

// NewBoundary returns the user message that replaces compacted history:
// the summary as text, carrying the names of the discovered tools. Call
// DiscoveredNames on the whole history before summarising it.
func NewBoundary(summary string, discovered []string) Message {
	return Message{
		Role:     "user",
		Content:  []Block{TextBlock(summary)},
		Boundary: &Boundary{PreCompactDiscoveredTools: slices.Clone(discovered)},
	}
}

// announced replays the deferred-tool announcements of a history: the
// names announced as added and not since removed.
// announcedServers returns the servers' summary last announced in the
// history.
func announcedServers(history []Message) []string {
	for i := len(history) - 1; i >= 0; i-- {
		if d := history[i].Delta; d != nil && len(d.Servers) > 0 {
			return d.Servers
		}
	}
	return nil
}

func announced(history []Message) map[string]bool {
	set := map[string]bool{}
	for _, m := range history {
		if m.Delta == nil {
			continue
		}
		for _, n := range m.Delta.Added {
			set[n] = true
		}
		for _, n := range m.Delta.Removed {
			delete(set, n)
		}
	}
	return set
}

// Learned returns what a history says about which tools fit which searches:
// for each call of the search tool (a tool_use named searchTool with a
// "query"), the tools its result loaded (tool_reference blocks) that the
// model then called (a later tool_use). Give the pairs to a usage store
// (package usage) so that later searches in similar words rank those
// tools higher. Only queries and tool names are returned, never inputs;
// select: queries, which name tools, are left out.
func Learned(history []Message, searchTool string) []search.LearnedQuery {
	queries := map[string]string{} // tool_use id of a search → its query
	loadedBy := map[string][]int{} // tool → the search that last loaded it
	var out []search.LearnedQuery
	for _, m := range history {
		for _, b := range m.Content {
			switch {
			case m.Role == "assistant" && b.Type == "tool_use" && b.String("name") == searchTool:
				var in struct {
					Query string `json:"query"`
				}
				if json.Unmarshal(b.Raw("input"), &in) != nil || strings.TrimSpace(in.Query) == "" {
					continue
				}
				// select: names tools; it says nothing about words.
				if q, err := search.ParseQuery(in.Query); err == nil && q.Select == nil {
					queries[b.String("id")] = in.Query
				}
			case m.Role == "assistant" && b.Type == "tool_use":
				name := b.String("name")
				for _, i := range loadedBy[name] {
					if !slices.Contains(out[i].Tools, name) {
						out[i].Tools = append(out[i].Tools, name)
					}
				}
			case m.Role == "user" && b.Type == "tool_result":
				q, ok := queries[b.String("tool_use_id")]
				if !ok {
					continue
				}
				i := len(out)
				out = append(out, search.LearnedQuery{Query: q})
				for _, n := range references(b) {
					loadedBy[n] = []int{i} // a call credits the latest search that loaded the tool
				}
			}
		}
	}
	return slices.DeleteFunc(out, func(p search.LearnedQuery) bool { return len(p.Tools) == 0 })
}
