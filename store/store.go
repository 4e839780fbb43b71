// Package store is toolshelf's shared state on PostgreSQL, for several
// replicas that act as one (serve --store postgres://...). Each kind of
// state has a small interface here (Pins, Signins, Learned, Audit,
// Sessions, Flows, Attempts), which DB implements; the packages that own
// the state's meaning (pin, signin, learn, audit, fleet) keep it through
// that interface, and keep it in their own files when there is no store.
// DB runs the schema's migrations once however many replicas start
// together (under an advisory lock), and its change feed (Follow) tells
// every replica about a change made through any of them.
//
// This package alone speaks to PostgreSQL: nothing else imports pgx.
package store

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// DB is a connection pool to the store, with its schema migrated.
type DB struct {
	pool  *pgxpool.Pool
	where string // the URL without its password, for messages

	// heard counts the changes the feed heard of, by kind.
	heard [kindCount]atomic.Uint64

	mu        sync.Mutex
	following map[*int]context.CancelFunc // Follow's listeners, stopped by Close
}

// Open connects to the PostgreSQL database at rawURL and brings its
// schema up to date. The error never holds the URL's password.
func Open(ctx context.Context, rawURL string) (*DB, error) {
	d := &DB{where: Redact(rawURL), following: map[*int]context.CancelFunc{}}
	cfg, err := pgxpool.ParseConfig(rawURL)
	if err != nil {
		return nil, fmt.Errorf("store %s: not a PostgreSQL URL (postgres://user:password@host:5432/db)", d.where)
	}
	if d.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("store %s: %w", d.where, err)
	}
	if err := d.migrate(ctx); err != nil {
		d.pool.Close()
		return nil, fmt.Errorf("store %s: %w", d.where, err)
	}
	return d, nil
}

// Redact returns a store URL without its password.
func Redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(a store URL that does not parse)"
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			u.User = url.UserPassword(u.User.Username(), "xxxxx")
		}
	}
	q := u.Query()
	if q.Has("password") {
		q.Set("password", "xxxxx")
		u.RawQuery = q.Encode()
	}
	return u.String()
}

// Where is the store's URL without its password.
func (d *DB) Where() string { return d.where }

// Close closes every connection. The feed's listener (Follow) stops
// first: a connection it holds would keep Close waiting.
func (d *DB) Close() {
	d.mu.Lock()
	for _, stop := range d.following {
		stop()
	}
	d.mu.Unlock()
	d.pool.Close()
}

// inTx runs fn in a transaction, bounded by storeTimeout.
func (d *DB) inTx(ctx context.Context, fn func(pgx.Tx) error) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return pgx.BeginFunc(ctx, d.pool, fn)
}

// storeTimeout bounds one round trip to the store: nothing waits without
// end on a database that is away.
const storeTimeout = 10 * time.Second

// IsStoreURL reports whether a --store value names a PostgreSQL store.
func IsStoreURL(s string) bool {
	return strings.HasPrefix(s, "postgres://") || strings.HasPrefix(s, "postgresql://")
}
