// Package shelf builds what a catalog snapshot implies, once, for every
// face that serves it: the search engine, the policy's view (the deferral
// checklist's verdicts and token counts) and, with a model's embedder,
// the hybrid engine that replaces the lexical one when its embeddings are
// ready. The gateway and the Messages library both search through a
// [Snapshot], so the two cannot drift.
//
// A Snapshot is immutable but for its engine, which is swapped atomically
// once: no lock guards a search.
package shelf

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/search"
)

// Options configures a Shelf. Nil means defaults.
type Options struct {
	// Engine is the search engine kind (search.DefaultEngine when empty).
	Engine string
	// Embedder is a model's embedder. With an engine that embeds, each
	// snapshot searches with bm25 until [Shelf.Run] has embedded its
	// tools, and again whenever the model fails. Without one, such
	// engines embed with the built-in word vectors, at once.
	Embedder search.Embedder
	// Counter measures tool definitions for the policy's view (the
	// offline tokenizer when nil). Checklist decides which tools are
	// deferrable, and Extra are the face's own tool definitions.
	Counter   policy.Counter
	Checklist policy.Checklist
	Extra     []json.RawMessage
	// Logger receives embedding progress and failures. Nil is silent.
	Logger *slog.Logger
	// Learned, when set, is what was learned from use: searches rank by
	// it (search.Learned) on top of the snapshot's engine.
	Learned *Learned
	// Budget bounds the tokens of a ranked answer's compact matches
	// (DefaultBudget when zero; none when negative): the hits past it are
	// left out, and the note says how many.
	Budget int
}

// Learned is what a shelf's searches learned from use: earlier searches
// and the tools called after them.
type Learned struct {
	// Version changes when what was learned does; it is asked once a
	// search, so it must be cheap. Nil means it never changes.
	Version func() string
	// Load reads what was learned; it is called when Version changes.
	Load func() (Past, error)
}

// Past is what was learned from use.
type Past struct {
	// Queries are earlier searches and the tools called after them.
	Queries []search.LearnedQuery
	// Together are, by tool, the tools called just before it
	// (learn.Together): its learned companions.
	Together map[string][]string
}

// Shelf follows a face's current catalog snapshot. It is safe for
// concurrent use.
type Shelf struct {
	opts   Options
	kind   search.EngineKind
	logger *slog.Logger

	cur atomic.Pointer[Snapshot]
	// budget is Options.Budget, which SetBudget changes.
	budget  atomic.Int64
	changed atomic.Pointer[chan struct{}] // closed and replaced by every new snapshot
	embed   chan struct{}                 // a snapshot awaits embedding (Run)

	// skills are found like tools (UpdateSkills); updates serialises
	// Update and UpdateSkills.
	updates sync.Mutex
	skills  *catalog.Catalog

	// The past last read, for version, and the learned engine last
	// built over base with it.
	learnMu sync.Mutex
	version string
	past    *Past
	base    search.Engine
	learned search.Engine
}

// New returns a shelf. The error is an unknown engine kind.
func New(opts *Options) (*Shelf, error) {
	s := &Shelf{embed: make(chan struct{}, 1)}
	if opts != nil {
		s.opts = *opts
	}
	kind, err := search.Kind(s.opts.Engine)
	if err != nil {
		return nil, err
	}
	s.kind = kind
	s.logger = s.opts.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	ch := make(chan struct{})
	s.changed.Store(&ch)
	s.SetBudget(s.opts.Budget)
	return s, nil
}

// SetBudget changes Options.Budget from the next search on.
func (s *Shelf) SetBudget(n int) { s.budget.Store(int64(n)) }

// Snapshot is one catalog and what it implies.
type Snapshot struct {
	// Catalog is the tools.
	Catalog *catalog.Catalog
	// searched is what a search ranks: the tools and the skills
	// (catalog.Entry.Skill), or Catalog itself when there are no skills.
	searched *catalog.Catalog
	skills   *catalog.Catalog

	shelf    *Shelf
	engine   atomic.Pointer[engineBox]
	embedded bool // Shelf.Run is to embed it

	viewOnce sync.Once
	view     *policy.View

	companionsOnce sync.Once
	companionIndex *search.Companions
}

type engineBox struct{ search.Engine }

// unsearchable is the engine of a catalog that could not be indexed:
// every search fails with the reason.
type unsearchable struct{ err error }

func (u unsearchable) Search(context.Context, string, int) ([]search.Hit, error) { return nil, u.err }

// Update makes c the current catalog and returns its snapshot: the
// current one when c's version is the same. The lexical engine is built
// here; embeddings by a model are left to Run.
func (s *Shelf) Update(c *catalog.Catalog) *Snapshot {
	s.updates.Lock()
	defer s.updates.Unlock()
	if old := s.cur.Load(); old != nil && old.Catalog.Version() == c.Version() && old.skills == s.skills {
		return old
	}
	return s.update(c)
}

// UpdateSkills makes skills (entries whose Skill is set, in a catalog
// of their own) found by every search beside the tools, and returns the
// current snapshot: rebuilt when the skills changed.
func (s *Shelf) UpdateSkills(skills *catalog.Catalog) *Snapshot {
	s.updates.Lock()
	defer s.updates.Unlock()
	if skills != nil && skills.Len() == 0 {
		skills = nil
	}
	old := s.cur.Load()
	if skills.Version() == s.skills.Version() {
		return old
	}
	s.skills = skills
	if old == nil {
		return nil
	}
	return s.update(old.Catalog)
}

// update makes a snapshot of c and the shelf's skills current; with
// s.updates held.
func (s *Shelf) update(c *catalog.Catalog) *Snapshot {
	snap := &Snapshot{Catalog: c, searched: c, skills: s.skills, shelf: s}
	if s.skills != nil {
		snap.searched = catalog.Join(c, s.skills)
	}
	kind := s.kind.Name
	if s.kind.Embeds && s.opts.Embedder != nil {
		kind = "bm25" // until Run has the model's embeddings
		snap.embedded = true
	}
	eng, err := search.New(kind, snap.searched) // the kind is known
	if err != nil {
		eng = unsearchable{err} // a catalog too large to index
	}
	snap.engine.Store(&engineBox{eng})
	s.cur.Store(snap)
	next := make(chan struct{})
	close(*s.changed.Swap(&next))
	if snap.embedded {
		select {
		case s.embed <- struct{}{}:
		default: // Run will find the newest snapshot anyway
		}
	}
	return snap
}

// Changed returns a channel that is closed when the next snapshot is
// made current.
func (s *Shelf) Changed() <-chan struct{} { return *s.changed.Load() }

// Run embeds each new snapshot's tools with the model, when there is
// one, until ctx is done. It is the only goroutine a Shelf needs, and it
// returns only when its work has stopped.
func (s *Shelf) Run(ctx context.Context) error {
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-s.embed:
		}
		snap := s.cur.Load()
		if snap == nil || !snap.embedded {
			continue
		}
		s.logger.Info("embedding tools for "+s.kind.Name+" search; searching with bm25 meanwhile", "tools", snap.Catalog.Len())
		eng, err := search.NewEmbedded(ctx, s.kind.Name, snap.searched, s.opts.Embedder)
		if err != nil {
			if ctx.Err() == nil {
				s.logger.Warn("embeddings unavailable; searching with bm25", "error", err)
			}
			continue
		}
		if h, ok := eng.(*search.Hybrid); ok {
			h.OnFallback = func(err error) {
				s.logger.Warn("the embeddings endpoint failed; searching with bm25 until it answers", "error", err)
			}
		}
		snap.engine.Store(&engineBox{eng})
		s.logger.Info(s.kind.Name+" search ready", "tools", snap.Catalog.Len())
	}
}

// Engine returns the snapshot's engine: the lexical one until a model's
// embeddings are ready.
func (s *Snapshot) Engine() search.Engine { return s.engine.Load().Engine }

// View returns the policy's view of the snapshot, measuring it the first
// time it is asked for: counting tokens means tokenising every
// definition, which only some faces and modes need.
func (s *Snapshot) View(ctx context.Context) *policy.View {
	s.viewOnce.Do(func() {
		o := &s.shelf.opts
		s.view = policy.NewView(ctx, s.Catalog, o.Checklist, o.Extra, o.Counter)
	})
	return s.view
}

// Search answers a request over the snapshot (see [search.Find]), ranked
// by what was learned from use when the shelf has a past, each hit with
// its companions (companions). Every face searches through here: the
// same query finds the same tools in the same order, whichever face it
// came through.
func (s *Snapshot) Search(ctx context.Context, r search.Request) (search.Result, error) {
	past := s.shelf.currentPast()
	found, err := search.Find(ctx, s.shelf.learnedEngine(s, past), s.searched, r)
	if err != nil {
		return found, err
	}
	found.Searched -= s.skills.Len() // tools searched
	if !found.Select {
		for i := range found.Hits {
			found.Hits[i].Companions = s.companions(found.Hits[i].Entry, past)
		}
	}
	budget := int(s.shelf.budget.Load())
	if budget == 0 {
		budget = DefaultBudget
	}
	if n, held := fit(&found, budget, r.Limit); n > 0 {
		found.Note = strings.TrimSpace(found.Note + fmt.Sprintf(" %d more matched past this answer's budget of %d tokens: search with more words, or give a limit.", n, held))
	}
	return found, nil
}

// companions returns the tools that produce what e needs: those the
// catalog's names and parameters imply (search.Companions, built the
// first time a snapshot is asked), then those this profile's sessions
// called just before e, at most search.MaxCompanions.
func (s *Snapshot) companions(e *catalog.Entry, past *Past) []*catalog.Entry {
	s.companionsOnce.Do(func() { s.companionIndex = search.NewCompanions(s.Catalog) })
	if e.Skill != "" {
		return nil // a skill names the tools it needs itself
	}
	out := s.companionIndex.Of(e, search.MaxCompanions)
	if past == nil {
		return out
	}
	for _, name := range past.Together[e.Name] {
		if len(out) == search.MaxCompanions {
			break
		}
		if c, ok := s.Catalog.Find(name); ok && c != e && !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// currentPast returns what was learned, read again only when its version
// changes; nil when the shelf has no past, or it cannot be read (logged:
// the search goes on without it).
func (s *Shelf) currentPast() *Past {
	p := s.opts.Learned
	if p == nil || p.Load == nil {
		return nil
	}
	version := ""
	if p.Version != nil {
		version = p.Version()
	}
	s.learnMu.Lock()
	if s.past != nil && s.version == version {
		past := s.past
		s.learnMu.Unlock()
		return past
	}
	s.learnMu.Unlock()
	loaded, err := p.Load()
	if err != nil {
		s.logger.Warn("cannot read what was learned from use; searching without it", "error", err)
		return nil
	}
	s.learnMu.Lock()
	s.version, s.past = version, &loaded
	s.learnMu.Unlock()
	return &loaded
}

// learnedEngine returns the snapshot's engine ranked with past, rebuilt
// only when the engine or the past changes.
func (s *Shelf) learnedEngine(snap *Snapshot, past *Past) search.Engine {
	base := snap.Engine()
	if past == nil || len(past.Queries) == 0 {
		return base
	}
	s.learnMu.Lock()
	if s.base == base && s.past == past && s.learned != nil {
		e := s.learned
		s.learnMu.Unlock()
		return e
	}
	s.learnMu.Unlock()
	e := search.NewLearned(base, snap.searched, past.Queries, nil)
	s.learnMu.Lock()
	if s.past == past {
		s.base, s.learned = base, e
	}
	s.learnMu.Unlock()
	return e
}
