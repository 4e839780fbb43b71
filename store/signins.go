package store

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
)

// SigninKey names a sign-in: the server, its resource, and the person's
// subject ("" for the gateway's own).
type SigninKey struct{ Server, Resource, Subject string }

// SealedSignin is a sign-in as the store keeps it: sealed by package
// signin, which alone can open it. Version only grows; an empty Sealed is
// a sign-out (a tombstone that keeps the version).
type SealedSignin struct {
	SigninKey
	Version int64
	Sealed  []byte
}

// Signins keeps the sign-ins to remote servers (package signin).
type Signins interface {
	// SealedSignins returns every sign-in, tombstones too, in the order
	// of their keys.
	SealedSignins(ctx context.Context) ([]SealedSignin, error)
	// SealedSignin returns one; ok is false when there is none.
	SealedSignin(ctx context.Context, k SigninKey) (s SealedSignin, ok bool, err error)
	// UpdateSignin calls change with the sign-in k (ok false when there
	// is none) under a lock of its own that every replica's update of it
	// waits for, and writes what change returns (nothing when nil).
	UpdateSignin(ctx context.Context, k SigninKey, change func(cur SealedSignin, ok bool) (*SealedSignin, error)) error
	// EndSignins puts a tombstone with the next version in place of the
	// sign-ins of server: of subject, or of everyone when all. It returns
	// the tombstones.
	EndSignins(ctx context.Context, server, subject string, all bool) ([]SealedSignin, error)
}

var _ Signins = (*DB)(nil)

func (d *DB) SealedSignins(ctx context.Context) ([]SealedSignin, error) {
	rows, err := d.pool.Query(ctx, "SELECT server, resource, subject, version, sealed FROM signins ORDER BY server, resource, subject")
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (SealedSignin, error) {
		var s SealedSignin
		err := r.Scan(&s.Server, &s.Resource, &s.Subject, &s.Version, &s.Sealed)
		return s, err
	})
}

func (d *DB) SealedSignin(ctx context.Context, k SigninKey) (SealedSignin, bool, error) {
	s := SealedSignin{SigninKey: k}
	err := d.pool.QueryRow(ctx, "SELECT version, sealed FROM signins WHERE server = $1 AND resource = $2 AND subject = $3", k.Server, k.Resource, k.Subject).Scan(&s.Version, &s.Sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, nil
	}
	return s, err == nil, err
}

func (d *DB) UpdateSignin(ctx context.Context, k SigninKey, change func(SealedSignin, bool) (*SealedSignin, error)) error {
	return pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		// A lock of the sign-in's own, held until the transaction ends:
		// it also covers a sign-in not yet in the table.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(1) || $2 || chr(1) || $3, 7))", k.Server, k.Resource, k.Subject); err != nil {
			return err
		}
		cur := SealedSignin{SigninKey: k}
		err := tx.QueryRow(ctx, "SELECT version, sealed FROM signins WHERE server = $1 AND resource = $2 AND subject = $3", k.Server, k.Resource, k.Subject).Scan(&cur.Version, &cur.Sealed)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		next, err := change(cur, err == nil)
		if err != nil || next == nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO signins (server, resource, subject, version, sealed, updated) VALUES ($1, $2, $3, $4, $5, now())
			ON CONFLICT (server, resource, subject) DO UPDATE SET version = $4, sealed = $5, updated = now()`, k.Server, k.Resource, k.Subject, next.Version, next.Sealed); err != nil {
			return err
		}
		return d.announce(ctx, tx, KindSignins)
	})
}

func (d *DB) EndSignins(ctx context.Context, server, subject string, all bool) (ended []SealedSignin, err error) {
	err = pgx.BeginFunc(ctx, d.pool, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `UPDATE signins SET sealed = ''::bytea, version = version + 1, updated = now()
			WHERE server = $1 AND ($3 OR subject = $2) AND length(sealed) > 0 RETURNING resource, subject, version`, server, subject, all)
		if err != nil {
			return err
		}
		ended, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (SealedSignin, error) {
			s := SealedSignin{SigninKey: SigninKey{Server: server}}
			err := r.Scan(&s.Resource, &s.Subject, &s.Version)
			return s, err
		})
		if err != nil {
			return err
		}
		return d.announce(ctx, tx, KindSignins)
	})
	return ended, err
}
