package gateway

import (
	"context"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/learn"
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
	query    string   // cut as the store keeps it (learn.CutQuery)
	tools    []string // best first: a tool's rank is its index + 1
	selected bool     // a select: search, which names tools, not ranks them
	used     bool     // a call of one of its tools followed
}

// size is about what a search costs to remember, in bytes.
func (r *recentSearch) size() int {
	n := len(r.query) + 64
	for _, t := range r.tools {
		n += len(t) + 24
	}
	return n
}

// sessionSearches is what is remembered of one session.
type sessionSearches struct {
	searches []recentSearch
	recorded map[string]bool // pairs recorded, so that each counts once
	bytes    int
	// lastCall is the tool the session called last with success, and
	// together the pairs of tools called one after the other it recorded
	// (each once, at most maxRecordedPerSession).
	lastCall string
	together map[[2]string]bool
}

// learning follows sessions' searches: what a call's tool ranked in the
// search that found it (the online search-quality metrics), and the
// pairs the learn store ranks by.
type learning struct {
	mu sync.Mutex
	// sessions are by the client's session (*mcp.ServerSession), or, for
	// a client without sessions (MCP 2026-07-28), by its caller (see
	// callerOf).
	sessions map[any]*sessionSearches
	order    []any // by first search, for forgetting
	bytes    int   // the sum of the sessions' bytes
	// unused is told of each ranked search forgotten with none of its
	// tools called.
	unused func()
}

// searched remembers a session's search and the tools it returned, best
// first.
func (l *learning) searched(ss any, query string, names []string, selected bool) {
	query = learn.CutQuery(query)
	if ss == nil || len(names) == 0 || (query == "" && !selected) {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.sessions == nil {
		l.sessions = map[any]*sessionSearches{}
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
	r := recentSearch{query: query, tools: slices.Clone(names), selected: selected}
	x.searches = append(x.searches, r)
	x.bytes += r.size()
	l.bytes += r.size()
	if len(x.searches) > maxRecentSearches {
		l.dropLocked(&x.searches[0])
		x.bytes -= x.searches[0].size()
		x.searches = x.searches[1:]
	}
	// Past the byte budget, the sessions that searched first go first.
	for l.bytes > maxLearningBytes && len(l.order) > 1 && l.order[0] != ss {
		l.forgetLocked(l.order[0])
	}
}

// dropLocked forgets one search, counting it when nothing it ranked was
// called.
func (l *learning) dropLocked(r *recentSearch) {
	l.bytes -= r.size()
	if !r.used && !r.selected && l.unused != nil {
		l.unused()
	}
}

// forgetLocked drops what is remembered of a session.
func (l *learning) forgetLocked(ss any) {
	x, ok := l.sessions[ss]
	if !ok {
		return
	}
	for i := range x.searches {
		l.dropLocked(&x.searches[i])
	}
	delete(l.sessions, ss)
	if i := slices.Index(l.order, ss); i >= 0 {
		l.order = slices.Delete(l.order, i, i+1)
	}
}

// sweep forgets the sessions that have ended. Callers without sessions
// are forgotten oldest first, past the bounds.
func (l *learning) sweep(live map[*mcp.ServerSession]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for k := range l.sessions {
		if ss, ok := k.(*mcp.ServerSession); ok && !live[ss] {
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

// use is what a session's searches say of a call of one tool.
type use struct {
	rank     int    // in the latest ranked search that found it; 0 if none did
	selected bool   // else, a select: search named it
	query    string // the pair to record, or "" (recorded before, or the session's share is used)
}

// called looks a call's tool up in the session's searches, latest first,
// and marks the search that found it as used.
func (l *learning) called(ss any, tool string) use {
	l.mu.Lock()
	defer l.mu.Unlock()
	x := l.sessions[ss]
	if x == nil {
		return use{}
	}
	var u use
	for i := len(x.searches) - 1; i >= 0; i-- {
		r := &x.searches[i]
		at := slices.Index(r.tools, tool)
		if at < 0 {
			continue
		}
		r.used = true
		if r.selected {
			u.selected = true
			continue // a ranked search before it may have found it
		}
		u.rank = at + 1
		k := tool + "\x00" + r.query
		if !x.recorded[k] && len(x.recorded) < maxRecordedPerSession {
			if x.recorded == nil {
				x.recorded = map[string]bool{}
			}
			x.recorded[k] = true
			u.query = r.query
		}
		return u
	}
	return u
}

// calledAfter notes a session's successful call of tool and returns the
// tool it called just before, when that pair is the session's to record
// (once, within its share); "" otherwise.
func (l *learning) calledAfter(ss any, tool string) string {
	l.mu.Lock()
	defer l.mu.Unlock()
	x := l.sessions[ss]
	if x == nil {
		// A session that never searched is not followed: it found its
		// tools some other way, and nothing bounds what it would add.
		return ""
	}
	// Tool names are the catalog's (at most catalog.MaxNameLen bytes),
	// so a session keeps at most nine of them here, and no byte budget
	// is needed for them.
	before := x.lastCall
	x.lastCall = tool
	k := [2]string{before, tool}
	if before == "" || before == tool || x.together[k] || len(x.together) >= maxRecordedPerSession {
		return ""
	}
	if x.together == nil {
		x.together = map[[2]string]bool{}
	}
	x.together[k] = true
	return before
}

// learnerOf is whom a search and the calls after it are followed for:
// the client's session, or, for a request served without one (over HTTP,
// every such request is a session of its own), its caller, as the HTTP
// request names it (callerOf).
func learnerOf(ctx context.Context, ss *mcp.ServerSession) any {
	if c, ok := ctx.Value(callerKey{}).(string); ok {
		return c
	}
	if ss == nil {
		return nil
	}
	return ss
}

// learned is what the gateway's searches rank by: its profile's pairs that
// several sessions showed (nil without a usage store).
func (s *Server) learned() *shelf.Learned {
	st := s.opts.Learn
	if st == nil {
		return nil
	}
	return &shelf.Learned{
		Version: st.Version,
		// One read of the pairs serves both: the store is read again
		// only when it changed.
		Load: func() (shelf.Past, error) {
			pairs, err := st.Pairs()
			if err != nil {
				return shelf.Past{}, err
			}
			profile := s.up.Profile()
			return shelf.Past{Queries: learn.Queries(pairs, profile, learn.MinSessions), Together: learn.Together(pairs, profile, learn.MinSessions)}, nil
		},
	}
}

// noteCall follows a call of a tool that a session made through call_tool
// or after --activate listed it: the rank the tool had in the session's
// search that found it, or that no search ranked it; and, when the call
// succeeded, the pair for the learn store.
func (s *Server) noteCall(ctx context.Context, ss *mcp.ServerSession, tool, server string, ok bool) {
	if ss == nil {
		return
	}
	who := learnerOf(ctx, ss)
	u := s.learn.called(who, tool)
	if n, ok := ctx.Value(callNoteKey{}).(*callNote); ok {
		n.rank = u.rank
	}
	switch {
	case u.rank > 0:
		s.met.rank.Record(ctx, int64(u.rank), s.met.byServer(server))
	case u.selected:
		s.met.unfound.Add(ctx, 1, s.met.unsearched(server, "select"))
	default:
		s.met.unfound.Add(ctx, 1, s.met.unsearched(server, "none"))
	}
	if ok && u.query != "" && s.opts.Learn != nil {
		s.opts.Learn.Record(s.up.Profile(), u.query, tool)
	}
	if ok && s.opts.Learn != nil {
		if before := s.learn.calledAfter(who, tool); before != "" {
			s.opts.Learn.RecordTogether(s.up.Profile(), before, tool)
		}
	}
}
