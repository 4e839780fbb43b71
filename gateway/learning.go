package gateway

import (
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/shelf"
)

// A session's search followed by a call of one of the tools it found is
// evidence that the query's words describe the tool (Options.Learn). The
// gateway remembers each session's last searches to see it, and records a
// pair once per session and per profile: the store ranks a profile's
// searches by its own pairs, and only by those that several sessions
// showed (learn.MinSessions), so one client cannot steer another's
// ranking.

// Bounds of what is remembered of sessions' searches: a model writes
// queries of any length in as many sessions as it likes, and none of it
// may grow without end. maxRecordedPerSession bounds the pairs one
// session adds to the store.
const (
	maxRecentSearches     = 8
	maxLearningSessions   = 4096
	maxLearningBytes      = 4 << 20
	maxRecordedPerSession = 8
)

type recentSearch struct {
	query string // cut as the store keeps it (learn.CutQuery)
	tools map[string]bool
}

// size is about what a search costs to remember, in bytes.
func (r *recentSearch) size() int {
	n := len(r.query) + 64
	for t := range r.tools {
		n += len(t) + 24
	}
	return n
}

// sessionSearches is what is remembered of one session.
type sessionSearches struct {
	searches []recentSearch
	recorded map[string]bool // pairs recorded, so that each counts once
	bytes    int
}

// learning follows sessions' searches and the usage the engine ranks by.
type learning struct {
	mu       sync.Mutex
	sessions map[*mcp.ServerSession]*sessionSearches
	order    []*mcp.ServerSession // by first search, for forgetting
	bytes    int                  // the sum of the sessions' bytes

}

// searched remembers a session's search and the tools it returned.
func (l *learning) searched(ss *mcp.ServerSession, query string, names []string) {
	query = learn.CutQuery(query)
	if ss == nil || len(names) == 0 || query == "" {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions == nil {
		l.sessions = map[*mcp.ServerSession]*sessionSearches{}
	}
	x := l.sessions[ss]
	if x == nil {
		if len(l.order) >= maxLearningSessions {
			l.forgetLocked(l.order[0])
		}
		x = &sessionSearches{}
		l.sessions[ss] = x
		l.order = append(l.order, ss)
	}
	r := recentSearch{query: query, tools: make(map[string]bool, len(names))}
	for _, n := range names {
		r.tools[n] = true
	}
	x.searches = append(x.searches, r)
	x.bytes += r.size()
	l.bytes += r.size()
	if len(x.searches) > maxRecentSearches {
		drop := x.searches[0].size()
		x.searches = x.searches[1:]
		x.bytes -= drop
		l.bytes -= drop
	}
	// Past the byte budget, the sessions that searched first go first.
	for l.bytes > maxLearningBytes && len(l.order) > 1 && l.order[0] != ss {
		l.forgetLocked(l.order[0])
	}
}

// forgetLocked drops what is remembered of a session.
func (l *learning) forgetLocked(ss *mcp.ServerSession) {
	x, ok := l.sessions[ss]
	if !ok {
		return
	}
	l.bytes -= x.bytes
	delete(l.sessions, ss)
	if i := slices.Index(l.order, ss); i >= 0 {
		l.order = slices.Delete(l.order, i, i+1)
	}
}

// sweep forgets the sessions that have ended.
func (l *learning) sweep(live map[*mcp.ServerSession]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for ss := range l.sessions {
		if !live[ss] {
			l.forgetLocked(ss)
		}
	}
}

// remembered reports how many sessions' searches are remembered, and
// their bytes.
func (l *learning) remembered() (sessions, bytes int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.sessions), l.bytes
}

// called returns the query of the session's latest search that found
// tool, or "" when there is none or the pair was already recorded for
// this session (or the session recorded its share).
func (l *learning) called(ss *mcp.ServerSession, tool string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	x := l.sessions[ss]
	if x == nil {
		return ""
	}
	for i := len(x.searches) - 1; i >= 0; i-- {
		if !x.searches[i].tools[tool] {
			continue
		}
		q := x.searches[i].query
		k := tool + "\x00" + q
		if x.recorded[k] || len(x.recorded) >= maxRecordedPerSession {
			return ""
		}
		if x.recorded == nil {
			x.recorded = map[string]bool{}
		}
		x.recorded[k] = true
		return q
	}
	return ""
}

// past is what the gateway's searches rank by: its profile's pairs that
// several sessions showed (nil without a usage store).
func (s *Server) learned() *shelf.Learned {
	st := s.opts.Learn
	if st == nil {
		return nil
	}
	return &shelf.Learned{
		Version: st.Version,
		Load: func() ([]search.LearnedQuery, error) {
			pairs, err := st.Pairs()
			if err != nil {
				return nil, err
			}
			return learn.Queries(pairs, s.up.Profile(), learn.MinSessions), nil
		},
	}
}

// recordUse records a call of tool after a search of the session that
// found it.
func (s *Server) recordUse(ss *mcp.ServerSession, tool string) {
	if s.opts.Learn == nil || ss == nil {
		return
	}
	if q := s.learn.called(ss, tool); q != "" {
		s.opts.Learn.Record(s.up.Profile(), q, tool)
	}
}
