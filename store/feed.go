package store

import (
	"context"
	"log/slog"
	"time"

	"github.com/jackc/pgx/v5"
)

// Kind is a kind of state whose changes the feed announces.
type Kind int

const (
	// KindPins: a tool pinned, approved, denied or forgotten.
	KindPins Kind = iota
	// KindSignins: a sign-in made, refreshed or ended.
	KindSignins
	// KindLearned: pairs learned from use written, or forgotten.
	KindLearned
	kindCount
)

var kindNames = [kindCount]string{"pins", "signins", "learned"}

func (k Kind) String() string { return kindNames[k] }

// feedChannel is the one channel every change is announced on; the
// payload names the kind.
const feedChannel = "toolshelf_changes"

// announce queues, in tx, the news of a change of kind: replicas hear of
// it when tx commits, and not at all if it does not.
func (d *DB) announce(ctx context.Context, tx pgx.Tx, k Kind) error {
	_, err := tx.Exec(ctx, "SELECT pg_notify($1, $2)", feedChannel, k.String())
	return err
}

// Changes counts the changes of kind the feed heard of, this process's
// own among them. It only grows; each time the feed starts listening
// (first, or again after the connection was lost, when changes may have
// gone unheard) it grows for every kind. A cache of a kind's state is
// good while this count is what it was when the cache was read.
func (d *DB) Changes(k Kind) uint64 { return d.heard[k].Load() }

// Follow listens for the changes every replica announces, counting them
// (Changes), until ctx is done or the DB is closed; a lost connection is
// retried, and said so to logger (nil is silent). The host that uses the
// DB runs it, once.
func (d *DB) Follow(ctx context.Context, logger *slog.Logger) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	ctx, cancel := context.WithCancel(ctx)
	token := new(int)
	d.mu.Lock()
	d.following[token] = cancel
	d.mu.Unlock()
	defer func() {
		d.mu.Lock()
		delete(d.following, token)
		d.mu.Unlock()
		cancel()
	}()
	delay := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := d.listen(ctx)
		if ctx.Err() != nil {
			return
		}
		logger.Warn("store: the change feed stopped; retrying", "store", d.where, "error", err)
		select {
		case <-ctx.Done():
			return
		case <-time.After(delay):
		}
		delay = min(2*delay, 5*time.Second)
	}
}

func (d *DB) listen(ctx context.Context) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "LISTEN "+feedChannel); err != nil {
		return err
	}
	// Whatever changed before this point (before the first listen, or
	// while the connection was lost) was not heard of.
	for k := range kindCount {
		d.heard[k].Add(1)
	}
	defer func() {
		// The connection goes back to the pool: stop listening on it.
		c, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		defer cancel()
		conn.Exec(c, "UNLISTEN *")
	}()
	for {
		n, err := conn.Conn().WaitForNotification(ctx)
		if err != nil {
			return err
		}
		for k, name := range kindNames {
			if name == n.Payload {
				d.heard[k].Add(1)
			}
		}
	}
}
