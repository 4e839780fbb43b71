package learn

import (
	"context"
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

// shared adapts a shared store to the pairs' backend.
type shared struct{ st Shared }

func (s *shared) where() string { return s.st.Where() }

func (s *shared) stamp() string { return strconv.FormatUint(s.st.Changes(store.KindLearned), 10) }

func (s *shared) write(ctx context.Context, batch []Pair) error {
	rows := make([]store.LearnedPair, len(batch))
	for i, p := range batch {
		rows[i] = store.LearnedPair{Profile: p.Profile, Tool: p.Tool, Query: p.Query, Count: p.Count, Last: p.Last, Origin: p.origin}
	}
	return s.st.AddPairs(ctx, rows, MaxAge, MaxPairs)
}

func (s *shared) read(ctx context.Context) ([]Pair, error) {
	rows, err := s.st.Pairs(ctx)
	if err != nil {
		return nil, err
	}
	pairs := make([]Pair, len(rows))
	for i, r := range rows {
		pairs[i] = fromRow(r)
	}
	return pairs, nil
}

func (s *shared) forget(ctx context.Context, match func(Pair) bool) (int, error) {
	return s.st.ForgetPairs(ctx, func(r store.LearnedPair) bool { return match == nil || match(fromRow(r)) })
}

func fromRow(r store.LearnedPair) Pair {
	return Pair{Profile: r.Profile, Tool: r.Tool, Query: r.Query, Count: r.Count, Last: r.Last}
}
