package gateway

import (
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/usage"
)

// A session's search followed by a call of one of the tools it found is
// evidence that the query's words describe the tool (Options.Usage). The
// gateway remembers each session's last searches to see it.

// maxRecentSearches is how many searches of a session are remembered;
// maxLearningSessions how many sessions (the oldest forgotten first).
const (
	maxRecentSearches   = 8
	maxLearningSessions = 4096
)

type recentSearch struct {
	query string
	tools map[string]bool
}

// learning follows sessions' searches and the usage the engine ranks by.
type learning struct {
	mu       sync.Mutex
	sessions map[*mcp.ServerSession][]recentSearch
	order    []*mcp.ServerSession // by first search, for forgetting

	// The engine last built: for one engine and one version of the store.
	base    search.Engine
	version string
	learned search.Engine
}

// searched remembers a session's search and the tools it returned.
func (l *learning) searched(ss *mcp.ServerSession, query string, names []string) {
	if ss == nil || len(names) == 0 {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions == nil {
		l.sessions = map[*mcp.ServerSession][]recentSearch{}
	}
	if _, ok := l.sessions[ss]; !ok {
		if len(l.order) >= maxLearningSessions {
			delete(l.sessions, l.order[0])
			l.order = l.order[1:]
		}
		l.order = append(l.order, ss)
	}
	r := recentSearch{query: query, tools: make(map[string]bool, len(names))}
	for _, n := range names {
		r.tools[n] = true
	}
	rs := append(l.sessions[ss], r)
	if len(rs) > maxRecentSearches {
		rs = rs[len(rs)-maxRecentSearches:]
	}
	l.sessions[ss] = rs
}

// called returns the query of the session's latest search that found
// tool, or "".
func (l *learning) called(ss *mcp.ServerSession, tool string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	rs := l.sessions[ss]
	for i := len(rs) - 1; i >= 0; i-- {
		if rs[i].tools[tool] {
			return rs[i].query
		}
	}
	return ""
}

// engine returns base ranked with what the store learned, rebuilt when
// the engine or the store changes.
func (s *Server) learnedEngine(snap *snapshot) search.Engine {
	base := snap.Engine()
	st := s.opts.Usage
	if st == nil {
		return base
	}
	l := &s.learn
	version := st.Version()
	l.mu.Lock()
	if l.base == base && l.version == version {
		e := l.learned
		l.mu.Unlock()
		return e
	}
	l.mu.Unlock()
	pairs, err := st.Pairs()
	if err != nil {
		s.logger.Warn("cannot read what was learned from use; searching without it", "error", err)
		return base
	}
	e := search.NewLearned(base, snap.Catalog, usage.Past(pairs), nil)
	l.mu.Lock()
	l.base, l.version, l.learned = base, version, e
	l.mu.Unlock()
	return e
}

// recordUse records a call of tool after a search of the session that
// found it.
func (s *Server) recordUse(ss *mcp.ServerSession, tool string) {
	if s.opts.Usage == nil || ss == nil {
		return
	}
	if q := s.learn.called(ss, tool); q != "" {
		s.opts.Usage.Record(q, tool)
	}
}
