package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Replica is a replica's heartbeat: its address and when it was seen,
// with the signature of the fleet key over them (package fleet checks
// it; the store holds no key).
type Replica struct {
	ID, Address string
	SignedAt    int64 // Unix seconds, as signed
	Sig         string
	// Alive: the heartbeat is fresher than the gone given (read only).
	Alive bool
}

// Session is an MCP session as the fleet keeps it: the replica that holds
// it, its MCP path, the client's initialize request and the tools its
// searches added.
type Session struct {
	ID, Holder, Path string
	Initialize       []byte
	Activated        []string
}

// Sessions keeps the replicas serving and which holds each MCP session
// (package fleet).
type Sessions interface {
	// Beat writes r's heartbeat, marks the sessions touched as used, and
	// forgets sessions unused for keep and expired flows and failures.
	// It returns the replicas heard from within gone.
	Beat(ctx context.Context, r Replica, touched []string, keep, gone time.Duration) ([]Replica, error)
	// Leave removes a replica that stops.
	Leave(ctx context.Context, id string) error
	// ReplicaByID returns a replica; ok is false when there is none.
	ReplicaByID(ctx context.Context, id string, gone time.Duration) (r Replica, ok bool, err error)
	// Holder returns a session's path and its holder (Alive within
	// gone); ok is false when the store knows no such session.
	Holder(ctx context.Context, session string, gone time.Duration) (path string, holder Replica, ok bool, err error)
	// AddSession keeps a new session (or a session's new holder).
	AddSession(ctx context.Context, s Session) error
	// EndSession forgets a session.
	EndSession(ctx context.Context, id string) error
	// ClaimSession makes to the holder of the session of path that from
	// held, and returns it; ok is false when another claimed it first,
	// or it is gone.
	ClaimSession(ctx context.Context, id, path, from, to string) (s Session, ok bool, err error)
	// AddActivated adds names to a session's found tools, keeping at
	// most limit.
	AddActivated(ctx context.Context, id string, names []string, limit int) error
}

// Flows notes which replica waits for the browser's return of a person's
// sign-in (package fleet).
type Flows interface {
	NoteFlow(ctx context.Context, state, replica string, ttl time.Duration) error
	// FlowReplica returns the replica that noted state; ok is false when
	// none did, or its note expired.
	FlowReplica(ctx context.Context, state string) (replica string, ok bool, err error)
}

// Attempts counts the console's failed sign-ins by client address, for
// the whole fleet.
type Attempts interface {
	// AddFailure records one, and returns how many the address made
	// within window.
	AddFailure(ctx context.Context, addr string, window time.Duration) (int, error)
	// Failures returns how many the address made within window, and how
	// long until the oldest leaves it.
	Failures(ctx context.Context, addr string, window time.Duration) (int, time.Duration, error)
}

var (
	_ Sessions = (*DB)(nil)
	_ Flows    = (*DB)(nil)
	_ Attempts = (*DB)(nil)
)

func (d *DB) Beat(ctx context.Context, r Replica, touched []string, keep, gone time.Duration) ([]Replica, error) {
	var live []Replica
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO replicas (id, address, seen, signed_at, sig) VALUES ($1, $2, now(), $3, $4)
		ON CONFLICT (id) DO UPDATE SET address = $2, seen = now(), signed_at = $3, sig = $4`, r.ID, r.Address, r.SignedAt, r.Sig)
	if len(touched) > 0 {
		b.Queue("UPDATE sessions SET seen = now() WHERE id = ANY($1)", touched)
	}
	b.Queue("DELETE FROM sessions WHERE seen < now() - make_interval(secs => $1)", keep.Seconds())
	b.Queue("DELETE FROM replicas WHERE seen < now() - interval '1 hour'")
	b.Queue("DELETE FROM signin_flows WHERE expires < now()")
	b.Queue("DELETE FROM signin_failures WHERE at < now() - interval '1 hour'")
	b.Queue("SELECT id, address, signed_at, sig FROM replicas WHERE seen > now() - make_interval(secs => $1)", gone.Seconds()).Query(func(rows pgx.Rows) error {
		var err error
		live, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Replica, error) {
			r := Replica{Alive: true}
			err := row.Scan(&r.ID, &r.Address, &r.SignedAt, &r.Sig)
			return r, err
		})
		return err
	})
	return live, d.pool.SendBatch(ctx, b).Close()
}

func (d *DB) Leave(ctx context.Context, id string) error {
	_, err := d.pool.Exec(ctx, "DELETE FROM replicas WHERE id = $1", id)
	return err
}

func (d *DB) ReplicaByID(ctx context.Context, id string, gone time.Duration) (Replica, bool, error) {
	r := Replica{ID: id}
	err := d.pool.QueryRow(ctx, "SELECT address, seen > now() - make_interval(secs => $2), signed_at, sig FROM replicas WHERE id = $1", id, gone.Seconds()).Scan(&r.Address, &r.Alive, &r.SignedAt, &r.Sig)
	if errors.Is(err, pgx.ErrNoRows) {
		return r, false, nil
	}
	return r, err == nil, err
}

func (d *DB) Holder(ctx context.Context, session string, gone time.Duration) (path string, r Replica, ok bool, err error) {
	var address, sig *string
	var alive *bool
	var at *int64
	err = d.pool.QueryRow(ctx, `SELECT s.owner, s.path, r.address, r.seen > now() - make_interval(secs => $2), r.signed_at, r.sig
		FROM sessions s LEFT JOIN replicas r ON r.id = s.owner WHERE s.id = $1`, session, gone.Seconds()).Scan(&r.ID, &path, &address, &alive, &at, &sig)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", r, false, nil
	}
	if err != nil {
		return "", r, false, err
	}
	// A holder with no replica row is a replica gone.
	if address != nil && alive != nil && at != nil && sig != nil {
		r.Address, r.Alive, r.SignedAt, r.Sig = *address, *alive, *at, *sig
	}
	return path, r, true, nil
}

func (d *DB) AddSession(ctx context.Context, s Session) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO sessions (id, owner, path, initialize, seen) VALUES ($1, $2, $3, $4, now())
		ON CONFLICT (id) DO UPDATE SET owner = $2, path = $3, initialize = $4, seen = now()`, s.ID, s.Holder, s.Path, s.Initialize)
	return err
}

func (d *DB) EndSession(ctx context.Context, id string) error {
	_, err := d.pool.Exec(ctx, "DELETE FROM sessions WHERE id = $1", id)
	return err
}

func (d *DB) ClaimSession(ctx context.Context, id, path, from, to string) (Session, bool, error) {
	s := Session{ID: id, Holder: to, Path: path}
	err := d.pool.QueryRow(ctx, "UPDATE sessions SET owner = $3, seen = now() WHERE id = $1 AND owner = $2 AND path = $4 RETURNING initialize, activated",
		id, from, to, path).Scan(&s.Initialize, &s.Activated)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, nil
	}
	return s, err == nil, err
}

func (d *DB) AddActivated(ctx context.Context, id string, names []string, limit int) error {
	_, err := d.pool.Exec(ctx, `UPDATE sessions SET activated = ARRAY(SELECT DISTINCT unnest(activated || $2::text[]))
		WHERE id = $1 AND cardinality(activated) < $3`, id, names, limit)
	return err
}

func (d *DB) NoteFlow(ctx context.Context, state, replica string, ttl time.Duration) error {
	_, err := d.pool.Exec(ctx, `INSERT INTO signin_flows (state, replica, expires) VALUES ($1, $2, now() + make_interval(secs => $3))
		ON CONFLICT (state) DO UPDATE SET replica = $2, expires = now() + make_interval(secs => $3)`, state, replica, ttl.Seconds())
	return err
}

func (d *DB) FlowReplica(ctx context.Context, state string) (string, bool, error) {
	var replica string
	err := d.pool.QueryRow(ctx, "SELECT replica FROM signin_flows WHERE state = $1 AND expires > now()", state).Scan(&replica)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", false, nil
	}
	return replica, err == nil, err
}

func (d *DB) AddFailure(ctx context.Context, addr string, window time.Duration) (int, error) {
	var n int
	err := d.pool.QueryRow(ctx, `WITH added AS (INSERT INTO signin_failures (address, at) VALUES ($1, now()))
		SELECT count(*) + 1 FROM signin_failures WHERE address = $1 AND at > now() - make_interval(secs => $2)`, addr, window.Seconds()).Scan(&n)
	return n, err
}

func (d *DB) Failures(ctx context.Context, addr string, window time.Duration) (int, time.Duration, error) {
	var n int
	var left float64
	err := d.pool.QueryRow(ctx, `SELECT count(*), coalesce(extract(epoch FROM min(at) + make_interval(secs => $2) - now()), 0)
		FROM signin_failures WHERE address = $1 AND at > now() - make_interval(secs => $2)`, addr, window.Seconds()).Scan(&n, &left)
	return n, time.Duration(left * float64(time.Second)), err
}
