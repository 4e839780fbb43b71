package gateway

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/learn"
)

// What is remembered of sessions' searches is bounded whatever the
// queries' length and the number of sessions, and forgotten when the
// sessions end.
func TestLearningIsBounded(t *testing.T) {
	var l learning
	huge := strings.Repeat("word ", 800_000) // 4 MB
	sessions := make([]*mcp.ServerSession, 5000)
	for i := range sessions {
		sessions[i] = new(mcp.ServerSession)
		for j := range maxRecentSearches + 2 {
			names := make([]string, 50)
			for k := range names {
				names[k] = fmt.Sprintf("mcp__server__tool_%d_%d", j, k)
			}
			l.searched(sessions[i], fmt.Sprintf("%d %s", j, huge[:min(len(huge), 1000+i)]), names, false)
		}
	}
	n, bytes := l.remembered()
	if bytes > maxLearningBytes || n > maxLearningSessions {
		t.Errorf("%d sessions, %d bytes remembered; want at most %d and %d", n, bytes, maxLearningSessions, maxLearningBytes)
	}
	for _, x := range l.sessions {
		for _, r := range x.searches {
			if len(r.query) > learn.MaxQuery {
				t.Fatalf("a query of %d bytes is remembered", len(r.query))
			}
		}
	}
	// The last session is remembered whole; once it ends, nothing is.
	last := sessions[len(sessions)-1]
	if x := l.sessions[last]; x == nil || len(x.searches) != maxRecentSearches {
		t.Errorf("the last session's searches: %+v", x)
	}
	l.sweep(map[*mcp.ServerSession]bool{})
	if n, bytes := l.remembered(); n != 0 || bytes != 0 {
		t.Errorf("after every session ended: %d sessions, %d bytes", n, bytes)
	}
}

// One profile's sessions cannot steer another's ranking: a guest that
// searches in many sessions and permutations of the admin's words and
// calls a tool of its choice leaves the admin's ranking as it was. Within
// a profile a pair counts once per session, and moves the ranking only
// once a second session has shown it.
func TestLearningPerProfile(t *testing.T) {
	st := learn.Open(filepath.Join(t.TempDir(), "usage.db"), nil)
	tools := []json.RawMessage{
		rawTool("read_graph", "Read the entire knowledge graph", nil),
		rawTool("open_nodes", "Open specific nodes in the knowledge graph by their names", nil),
		rawTool("export_everything", "Export a snapshot of the personal notes", nil),
	}
	admin, pool := gatewayFor(t, &Options{Learn: st}, memServer(t, "memory", tools))
	guest := newGateway(t, pool.Scope(&config.Profile{Name: "guest", Servers: []string{"memory"}}), &Options{Learn: st})
	const q = "read the entire knowledge graph"
	top := func(g *Server, query string) string {
		cs := connect(t, g, nil)
		defer cs.Close()
		var res struct{ Matches []struct{ Name string } }
		json.Unmarshal([]byte(text(call(t, cs, "search_tools", map[string]any{"query": query}))), &res)
		if len(res.Matches) == 0 {
			t.Fatalf("%q found nothing", query)
		}
		return res.Matches[0].Name
	}
	before := top(admin, q)
	const bait = "mcp__memory__export_everything"
	if before == bait {
		t.Fatalf("the bait ranks first already")
	}
	words := strings.Fields(q)
	for i := range 7 {
		cs := connect(t, guest, nil)
		w := append(words[i%len(words):], words[:i%len(words)]...)
		for range 3 { // the same session, again and again
			call(t, cs, "search_tools", map[string]any{"query": strings.Join(w, " ") + " personal notes snapshot export", "limit": 10})
			call(t, cs, "call_tool", map[string]any{"name": bait, "arguments": map[string]any{}})
		}
		cs.Close()
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	pairs, _ := st.Pairs()
	recorded := 0
	for _, p := range pairs {
		if p.Profile != "guest" {
			t.Errorf("pair %+v: want the guest's", p)
		}
		recorded += p.Count
	}
	if recorded != 7 {
		t.Errorf("the 7 sessions recorded %d times: %+v", recorded, pairs)
	}
	if after := top(admin, q); after != before {
		t.Errorf("the admin's first tool for %q went from %s to %s after a guest's use", q, before, after)
	}

	// In the admin's own profile: one session moves nothing, two do.
	const used = "mcp__memory__open_nodes"
	for i := range 2 {
		cs := connect(t, admin, nil)
		call(t, cs, "search_tools", map[string]any{"query": q})
		call(t, cs, "call_tool", map[string]any{"name": used, "arguments": map[string]any{}})
		cs.Close()
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
		got := top(admin, q)
		if i == 0 && got != before {
			t.Errorf("one session moved the admin's ranking to %s", got)
		}
		if i == 1 && got != used {
			t.Errorf("after two sessions used %s, %s ranks first", used, got)
		}
	}
}

// Tools a profile's sessions call one after the other become companions:
// a search that finds the second names the first beside it, once two
// sessions showed it (one does not), never in another profile, at most
// learn.MaxTogether of them; a session repeating the pair counts once.
func TestLearnedCompanions(t *testing.T) {
	st := learn.Open(filepath.Join(t.TempDir(), "usage.db"), nil)
	tools := []json.RawMessage{
		rawTool("lookup_place", "Look up a place by its name", nil),
		rawTool("plan_route", "Plan a route between two points", nil),
		rawTool("share_route", "Share a planned route with a friend", nil),
	}
	ops, pool := gatewayFor(t, &Options{Learn: st}, memServer(t, "maps", tools))
	guest := newGateway(t, pool.Scope(&config.Profile{Name: "guest", Servers: []string{"maps"}}), &Options{Learn: st})
	companionsOf := func(g *Server, tool string) []string {
		cs := connect(t, g, nil)
		defer cs.Close()
		var res searchResult
		json.Unmarshal([]byte(text(call(t, cs, "search_tools", map[string]any{"query": "plan a route between two points"}))), &res)
		for _, m := range res.Matches {
			if m.Name == tool {
				return m.Companions
			}
		}
		t.Fatalf("%s not found: %+v", tool, res.Matches)
		return nil
	}
	session := func(g *Server) {
		cs := connect(t, g, nil)
		defer cs.Close()
		call(t, cs, "search_tools", map[string]any{"query": "find a place"})
		for range 3 { // the same pair again counts once
			call(t, cs, "call_tool", map[string]any{"name": "mcp__maps__lookup_place", "arguments": map[string]any{}})
			call(t, cs, "call_tool", map[string]any{"name": "mcp__maps__plan_route", "arguments": map[string]any{}})
		}
		if err := st.Flush(); err != nil {
			t.Fatal(err)
		}
	}
	session(ops)
	if got := companionsOf(ops, "mcp__maps__plan_route"); len(got) != 0 {
		t.Errorf("one session made companions: %v", got)
	}
	session(ops)
	if got := companionsOf(ops, "mcp__maps__plan_route"); !slices.Equal(got, []string{"mcp__maps__lookup_place"}) {
		t.Errorf("after two sessions: %v", got)
	}
	if got := companionsOf(guest, "mcp__maps__plan_route"); len(got) != 0 {
		t.Errorf("another profile's companions: %v", got)
	}
	pairs, _ := st.Pairs()
	for _, p := range pairs {
		if _, ok := p.Before(); ok && p.Count != 2 {
			t.Errorf("pair %+v: want 2 sessions", p)
		}
	}
}
