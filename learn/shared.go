package learn

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/store"
)

// OpenShared returns a store whose pairs live in a PostgreSQL store that
// several replicas share (serve --store): a pair one replica learns ranks
// on every other once written (FlushEvery) and announced. With j, each
// pair is in this machine's journal from Record until the store has it
// (the journal's Sync puts it on disk), and Run lands what a journal left
// unlanded.
func OpenShared(db *store.DB, logger *slog.Logger, j *journal.Journal) *Store {
	s := newStore(&shared{db: db}, logger)
	s.journal = j
	return s
}

// channel is where replicas announce new pairs.
const channel = "toolshelf_learned"

// shared keeps the pairs in the store's learned_pairs table.
type shared struct {
	db *store.DB
	// heard counts the announcements of other replicas' writes.
	heard atomic.Int64
}

func (s *shared) where() string { return s.db.Where() }
func (s *shared) stamp() string { return strconv.FormatInt(s.heard.Load(), 10) }

func (s *shared) run(ctx context.Context) {
	s.db.Listen(ctx, channel, func(string) { s.heard.Add(1) })
}

func (s *shared) write(ctx context.Context, batch []Pair) error {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	err := pgx.BeginFunc(ctx, s.db.Pool(), func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, p := range batch {
			// A pair of a journal is counted once, however many times it
			// is landed (its journal's mark lost in a crash).
			b.Queue(`WITH fresh AS (INSERT INTO journal_landed (origin) SELECT $6 WHERE $6 <> '' ON CONFLICT DO NOTHING RETURNING 1)
				INSERT INTO learned_pairs (profile, tool, query, count, last)
				SELECT $1, $2, $3, $4, $5 WHERE $6 = '' OR EXISTS (SELECT 1 FROM fresh)
				ON CONFLICT (profile, tool, query) DO UPDATE
				SET count = learned_pairs.count + excluded.count, last = greatest(learned_pairs.last, excluded.last)`,
				p.Profile, p.Tool, p.Query, p.Count, p.Last, p.origin)
		}
		b.Queue(`DELETE FROM journal_landed WHERE at < now() - interval '7 days'`)
		b.Queue(`DELETE FROM learned_pairs WHERE last < $1`, time.Now().Add(-MaxAge))
		b.Queue(`DELETE FROM learned_pairs WHERE (profile, tool, query) IN
			(SELECT profile, tool, query FROM learned_pairs ORDER BY last DESC OFFSET $1)`, MaxPairs)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", channel)
		return err
	})
	return err
}

func (s *shared) read(ctx context.Context) ([]Pair, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	rows, err := s.db.Pool().Query(ctx, `SELECT profile, tool, query, count, last FROM learned_pairs`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (Pair, error) {
		var p Pair
		err := r.Scan(&p.Profile, &p.Tool, &p.Query, &p.Count, &p.Last)
		p.Last = p.Last.UTC()
		return p, err
	})
}

func (s *shared) forget(ctx context.Context, match func(Pair) bool) (int, error) {
	pairs, err := s.read(ctx)
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	n := 0
	err = pgx.BeginFunc(ctx, s.db.Pool(), func(tx pgx.Tx) error {
		for _, p := range pairs {
			if match != nil && !match(p) {
				continue
			}
			tag, err := tx.Exec(ctx, `DELETE FROM learned_pairs WHERE profile = $1 AND tool = $2 AND query = $3`, p.Profile, p.Tool, p.Query)
			if err != nil {
				return err
			}
			n += int(tag.RowsAffected())
		}
		_, err := tx.Exec(ctx, "SELECT pg_notify($1, '')", channel)
		return err
	})
	return n, err
}
