package learn

import (
	"context"
	"crypto/hmac"
	"log/slog"
	"strconv"

	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/store"
)

// Shared is a store that keeps the pairs of several replicas, and counts
// the changes it hears of (store.DB is one).
type Shared interface {
	store.Learned
	Changes(store.Kind) uint64
	Where() string
}

// OpenShared returns a store whose pairs live in a store that several
// replicas share (serve --store): a pair one replica learns ranks on
// every other once written (FlushEvery) and heard of through the store's
// feed. With j, each pair is in this machine's journal from Record until
// the store has it (the journal's Sync puts it on disk), and Run lands
// what a journal left unlanded.
func OpenShared(st Shared, logger *slog.Logger, j *journal.Journal) *Store {
	s := newStore(&shared{st: st}, logger)
	s.journal = j
	return s
}

// SignPairs makes a shared store's pairs signed: each pair written is
// signed with mac (a fleet's key: fleet.Member.MAC), and a pair read whose
// signature does not hold (written by someone without the key) is
// refused and logged, never ranked. Call it before Run.
func (s *Store) SignPairs(mac func(parts ...string) string) {
	if sh, ok := s.b.(*shared); ok {
		sh.mac = mac
		sh.logger = s.logger
	}
}

// shared adapts a shared store to the pairs' backend.
type shared struct {
	st     Shared
	mac    func(parts ...string) string // nil: pairs are not signed
	logger *slog.Logger
}

// sig is a pair's signature: its profile, tool and query (its count and
// time change as replicas add to it; a pair that is not there cannot be
// made up).
func (s *shared) sig(profile, tool, query string) string {
	if s.mac == nil {
		return ""
	}
	return s.mac("learned", profile, tool, query)
}

func (s *shared) where() string { return s.st.Where() }

func (s *shared) stamp() string { return strconv.FormatUint(s.st.Changes(store.KindLearned), 10) }

func (s *shared) write(ctx context.Context, batch []Pair) error {
	rows := make([]store.LearnedPair, len(batch))
	for i, p := range batch {
		rows[i] = store.LearnedPair{Profile: p.Profile, Tool: p.Tool, Query: p.Query, Count: p.Count, Last: p.Last, Origin: p.origin,
			Sig: s.sig(p.Profile, p.Tool, p.Query)}
	}
	return s.st.AddPairs(ctx, rows, MaxAge, MaxPairs)
}

func (s *shared) read(ctx context.Context) ([]Pair, error) {
	rows, err := s.st.Pairs(ctx)
	if err != nil {
		return nil, err
	}
	pairs := make([]Pair, 0, len(rows))
	refused := 0
	for _, r := range rows {
		if s.mac != nil && !hmac.Equal([]byte(r.Sig), []byte(s.sig(r.Profile, r.Tool, r.Query))) {
			refused++
			continue
		}
		pairs = append(pairs, fromRow(r))
	}
	if refused > 0 && s.logger != nil {
		s.logger.Warn("learned pairs in the store refused: their signature does not hold (written without the fleet key)", "pairs", refused)
	}
	return pairs, nil
}

func (s *shared) forget(ctx context.Context, match func(Pair) bool) (int, error) {
	return s.st.ForgetPairs(ctx, func(r store.LearnedPair) bool { return match == nil || match(fromRow(r)) })
}

func fromRow(r store.LearnedPair) Pair {
	return Pair{Profile: r.Profile, Tool: r.Tool, Query: r.Query, Count: r.Count, Last: r.Last}
}
