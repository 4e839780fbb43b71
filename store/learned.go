package store

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
)

// LearnedPair is a query and the tool that answered it, as learned from
// use in one profile (package learn).
type LearnedPair struct {
	Profile, Tool, Query string
	Count                int
	Last                 time.Time
	// Origin is the pair's place in a replica's journal ("" when it came
	// from none): a pair landed twice counts once.
	Origin string
	// Sig is the pair's signature, when a fleet signs them (package
	// learn): kept with the pair as its writer gave it.
	Sig string
}

// Learned keeps what was learned from use (package learn).
type Learned interface {
	// AddPairs adds a batch (counts add up), then forgets the pairs
	// older than maxAge and the least recently used past maxPairs.
	AddPairs(ctx context.Context, batch []LearnedPair, maxAge time.Duration, maxPairs int) error
	// Pairs returns every pair.
	Pairs(ctx context.Context) ([]LearnedPair, error)
	// ForgetPairs removes the pairs match accepts (all when nil), and
	// says how many went.
	ForgetPairs(ctx context.Context, match func(LearnedPair) bool) (int, error)
}

var _ Learned = (*DB)(nil)

func (d *DB) AddPairs(ctx context.Context, batch []LearnedPair, maxAge time.Duration, maxPairs int) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, p := range batch {
			// A pair of a journal is counted once, however many times it
			// is landed (its journal's mark lost in a crash).
			b.Queue(`WITH fresh AS (INSERT INTO journal_landed (origin) SELECT $6 WHERE $6 <> '' ON CONFLICT DO NOTHING RETURNING 1)
				INSERT INTO learned_pairs (profile, tool, query, count, last, sig)
				SELECT $1, $2, $3, $4, $5, $7 WHERE $6 = '' OR EXISTS (SELECT 1 FROM fresh)
				ON CONFLICT (profile, tool, query) DO UPDATE
				SET count = learned_pairs.count + excluded.count, last = greatest(learned_pairs.last, excluded.last),
					sig = CASE WHEN excluded.sig <> '' THEN excluded.sig ELSE learned_pairs.sig END`,
				p.Profile, p.Tool, p.Query, p.Count, p.Last, p.Origin, p.Sig)
		}
		b.Queue(`DELETE FROM journal_landed WHERE at < now() - interval '7 days'`)
		b.Queue(`DELETE FROM learned_pairs WHERE last < $1`, time.Now().Add(-maxAge))
		b.Queue(`DELETE FROM learned_pairs WHERE (profile, tool, query) IN
			(SELECT profile, tool, query FROM learned_pairs ORDER BY last DESC OFFSET $1)`, maxPairs)
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return err
		}
		return d.announce(ctx, tx, KindLearned)
	})
}

func (d *DB) Pairs(ctx context.Context) ([]LearnedPair, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	rows, err := d.pool.Query(ctx, `SELECT profile, tool, query, count, last, sig FROM learned_pairs`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (LearnedPair, error) {
		var p LearnedPair
		err := r.Scan(&p.Profile, &p.Tool, &p.Query, &p.Count, &p.Last, &p.Sig)
		p.Last = p.Last.UTC()
		return p, err
	})
}

func (d *DB) ForgetPairs(ctx context.Context, match func(LearnedPair) bool) (int, error) {
	pairs, err := d.Pairs(ctx)
	if err != nil {
		return 0, err
	}
	n := 0
	err = d.inTx(ctx, func(tx pgx.Tx) error {
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
		return d.announce(ctx, tx, KindLearned)
	})
	return n, err
}
