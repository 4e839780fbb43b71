package store

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// LedgerRow is one entry of the ledger (package ledger): the fields
// budgets sum, and the entry itself as JSON.
type LedgerRow struct {
	ID      string
	At      time.Time
	Kind    string
	Person  string
	Groups  []string
	Profile string
	Own     bool
	Void    bool
	// Held is an entry not settled: it never replaces a settled one.
	Held   bool
	Tokens int64
	Nanos  int64
	Entry  []byte
}

// LedgerScope is what one budget counts: rows from Since on of a person,
// a profile, a group ("person", "profile", "group"), or everyone.
type LedgerScope struct {
	Kind, Name string
	Since      time.Time
}

// LedgerSums are a scope's sums: the client's model requests (rounds
// not the proxy's own), tool calls, tokens and cost, and the oldest row
// counted.
type LedgerSums struct {
	Requests, Calls, Tokens, Nanos int64
	Oldest                         time.Time
}

// Ledger keeps the ledger of every replica.
type Ledger interface {
	// AdmitLedger sums each scope and, unless decide refuses, inserts
	// row, in one transaction under one lock across the fleet: budgets
	// hold exactly however many replicas admit at once.
	AdmitLedger(ctx context.Context, row LedgerRow, scopes []LedgerScope, decide func([]LedgerSums) error) error
	// PutLedger writes rows, in order and all or none, each over the
	// row of its id (or added); a held row never replaces a settled one.
	PutLedger(ctx context.Context, rows []LedgerRow) error
	// LedgerEntries returns the entries from since on, oldest first.
	LedgerEntries(ctx context.Context, since time.Time) ([][]byte, error)
}

var _ Ledger = (*DB)(nil)

// ledgerLock is the advisory lock admissions take ("ledger" in ASCII).
const ledgerLock = 0x6c6564676572

// scopeCondition is each scope kind's condition on a row ($2 its name).
var scopeCondition = map[string]string{
	"person":   "person = $2",
	"profile":  "profile = $2",
	"group":    "$2 = ANY(groups)",
	"everyone": "$2::text IS NOT NULL",
}

func (d *DB) AdmitLedger(ctx context.Context, row LedgerRow, scopes []LedgerScope, decide func([]LedgerSums) error) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		sums := make([]LedgerSums, len(scopes))
		if len(scopes) > 0 {
			if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock($1)", int64(ledgerLock)); err != nil {
				return fmt.Errorf("ledger lock: %w", err)
			}
		}
		for i, s := range scopes {
			cond, ok := scopeCondition[s.Kind]
			if !ok {
				return fmt.Errorf("ledger: a budget for %q, which is no kind of scope", s.Kind)
			}
			var oldest *time.Time
			err := tx.QueryRow(ctx, `SELECT
				count(*) FILTER (WHERE kind = 'round' AND NOT own),
				count(*) FILTER (WHERE kind = 'call'),
				coalesce(sum(tokens), 0)::bigint, coalesce(sum(nanos), 0)::bigint, min(at)
				FROM ledger WHERE NOT void AND at >= $1 AND `+cond, s.Since, s.Name).
				Scan(&sums[i].Requests, &sums[i].Calls, &sums[i].Tokens, &sums[i].Nanos, &oldest)
			if err != nil {
				return fmt.Errorf("ledger sums: %w", err)
			}
			if oldest != nil {
				sums[i].Oldest = *oldest
			}
		}
		if err := decide(sums); err != nil {
			return err
		}
		return insertLedger(ctx, tx, row)
	})
}

func insertLedger(ctx context.Context, tx pgx.Tx, r LedgerRow) error {
	groups := r.Groups
	if groups == nil {
		groups = []string{}
	}
	_, err := tx.Exec(ctx, `INSERT INTO ledger (id, at, kind, person, groups, profile, own, void, tokens, nanos, entry)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
		ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, person = excluded.person, groups = excluded.groups,
		profile = excluded.profile, own = excluded.own, void = excluded.void, tokens = excluded.tokens,
		nanos = excluded.nanos, entry = excluded.entry
		WHERE NOT $12 OR coalesce(ledger.entry->'held', 'false'::jsonb) = 'true'::jsonb`,
		r.ID, r.At, r.Kind, r.Person, groups, r.Profile, r.Own, r.Void, r.Tokens, r.Nanos, string(r.Entry), r.Held)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	return nil
}

func (d *DB) PutLedger(ctx context.Context, rows []LedgerRow) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		for _, r := range rows {
			if err := insertLedger(ctx, tx, r); err != nil {
				return err
			}
		}
		return nil
	})
}

func (d *DB) LedgerEntries(ctx context.Context, since time.Time) ([][]byte, error) {
	rows, err := d.pool.Query(ctx, "SELECT entry::text FROM ledger WHERE at >= $1 ORDER BY at, id", since)
	if err != nil {
		return nil, fmt.Errorf("reading the ledger in %s: %w", d.where, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) ([]byte, error) {
		var s string
		err := r.Scan(&s)
		return []byte(s), err
	})
}
