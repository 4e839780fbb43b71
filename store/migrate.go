package store

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// migrations are the schema's versions, in order; each runs once, in a
// transaction. Append only.
var migrations = []string{
	// 1: what was learned from use (package learn).
	`CREATE TABLE learned_pairs (
		profile text NOT NULL,
		tool    text NOT NULL,
		query   text NOT NULL,
		count   integer NOT NULL,
		last    timestamptz NOT NULL,
		PRIMARY KEY (profile, tool, query)
	)`,
	// 2: pinned tool definitions, approvals and denials (package pin);
	// pins_version counts saves, so that replicas see a change cheaply.
	`CREATE TABLE pins (
		server text NOT NULL,
		tool   text NOT NULL,
		entry  jsonb NOT NULL,
		PRIMARY KEY (server, tool)
	);
	CREATE TABLE pins_version (
		id      integer PRIMARY KEY CHECK (id = 1),
		version bigint NOT NULL
	);
	INSERT INTO pins_version VALUES (1, 0)`,
	// 3: the audit trail of every replica (package audit).
	`CREATE TABLE audit_records (
		id     bigserial PRIMARY KEY,
		time   timestamptz NOT NULL,
		record jsonb NOT NULL
	);
	CREATE INDEX audit_records_time ON audit_records (time)`,
	// 4: the replicas serving now, and which one holds each MCP session
	// (package fleet), with the client's initialize request and the
	// tools its searches added to its list (--activate), so that another
	// replica can take a session over when its holder is gone.
	`CREATE TABLE replicas (
		id      text PRIMARY KEY,
		address text NOT NULL,
		seen    timestamptz NOT NULL
	);
	CREATE TABLE sessions (
		id         text PRIMARY KEY,
		owner      text NOT NULL,
		path       text NOT NULL,
		initialize bytea NOT NULL,
		activated  text[] NOT NULL DEFAULT '{}',
		seen       timestamptz NOT NULL
	);
	CREATE INDEX sessions_seen ON sessions (seen)`,
	// 5: sign-ins to remote servers (package signin), each sealed with
	// the operator's key; version counts changes, so that replicas see
	// one cheaply.
	`CREATE TABLE signins (
		server   text NOT NULL,
		resource text NOT NULL,
		sealed   bytea NOT NULL,
		updated  timestamptz NOT NULL,
		PRIMARY KEY (server, resource)
	)`,
	// 6: a sign-in per person (a server marked "signin": "per-person"):
	// the subject of the person's token, '' for the gateway's own.
	`ALTER TABLE signins ADD COLUMN subject text NOT NULL DEFAULT '';
	ALTER TABLE signins DROP CONSTRAINT signins_pkey;
	ALTER TABLE signins ADD PRIMARY KEY (server, resource, subject)`,
	// 7: people's sign-ins under way, by their OAuth state: the replica
	// whose flow waits for the browser's return (package fleet).
	`CREATE TABLE signin_flows (
		state   text PRIMARY KEY,
		replica text NOT NULL,
		expires timestamptz NOT NULL
	)`,
	// 8: a replica's heartbeat signed with the fleet key, which the store
	// does not hold: a row anyone with the store's password writes is
	// no replica (package fleet).
	`ALTER TABLE replicas ADD COLUMN signed_at bigint NOT NULL DEFAULT 0;
	ALTER TABLE replicas ADD COLUMN sig text NOT NULL DEFAULT ''`,
	// 9: failed sign-ins to the console, by client address, counted for
	// the whole fleet (package fleet).
	`CREATE TABLE signin_failures (
		address text NOT NULL,
		at      timestamptz NOT NULL
	);
	CREATE INDEX signin_failures_address ON signin_failures (address, at)`,
	// 10: a sign-in's version, which only grows and is sealed with it: a
	// saved row put back is older than what replicas have seen. A
	// sign-out leaves an empty row (a tombstone) with the next version.
	`ALTER TABLE signins ADD COLUMN version bigint NOT NULL DEFAULT 0`,
	// 11: where a record or pair came from in a replica's journal (package
	// journal): one landed twice (after a crash between the store's
	// commit and the journal's mark) is taken once.
	`ALTER TABLE audit_records ADD COLUMN origin text;
	CREATE UNIQUE INDEX audit_records_origin ON audit_records (origin);
	CREATE TABLE journal_landed (
		origin text PRIMARY KEY,
		at     timestamptz NOT NULL DEFAULT now()
	)`,
	// 12: tasks (MCP's tasks extension) of calls answered with a handle,
	// so that any replica answers tasks/get (package gateway).
	`CREATE TABLE tasks (
		id      text PRIMARY KEY,
		record  jsonb NOT NULL,
		expires timestamptz NOT NULL
	);
	CREATE INDEX tasks_expires ON tasks (expires)`,
	// 13: a task's record is opaque bytes: a fleet seals it with the
	// fleet key (fleet.SealedTasks), so that a store writer without the
	// key can neither read nor change it. Records of before are dropped:
	// they were not sealed, and would be refused.
	`DELETE FROM tasks;
	ALTER TABLE tasks ALTER COLUMN record TYPE bytea USING convert_to(record::text, 'UTF8')`,
	// 14: a learned pair's signature (a fleet signs its profile, tool
	// and query with the fleet key; package learn refuses a pair whose
	// signature does not hold).
	`ALTER TABLE learned_pairs ADD COLUMN sig text NOT NULL DEFAULT ''`,
	// 15: the ledger of model rounds and tool calls (package ledger):
	// the columns budgets sum, and the whole entry.
	`CREATE TABLE ledger (
		id      text PRIMARY KEY,
		at      timestamptz NOT NULL,
		kind    text NOT NULL,
		person  text NOT NULL,
		groups  text[] NOT NULL,
		profile text NOT NULL,
		own     boolean NOT NULL,
		void    boolean NOT NULL,
		tokens  bigint NOT NULL,
		nanos   bigint NOT NULL,
		entry   jsonb NOT NULL
	);
	CREATE INDEX ledger_at ON ledger (at);
	CREATE INDEX ledger_person ON ledger (person, at);
	CREATE INDEX ledger_profile ON ledger (profile, at);
	CREATE INDEX ledger_groups ON ledger USING gin (groups)`,
}

// migrationLock is the advisory lock that lets one replica migrate at a
// time ("toolshelf" in ASCII).
const migrationLock = 0x746f6f6c7368656c

// migrate applies the migrations the database lacks, one replica at a
// time.
func (d *DB) migrate(ctx context.Context) error {
	conn, err := d.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, "SELECT pg_advisory_lock($1)", int64(migrationLock)); err != nil {
		return err
	}
	defer conn.Exec(context.WithoutCancel(ctx), "SELECT pg_advisory_unlock($1)", int64(migrationLock))
	if _, err := conn.Exec(ctx, `CREATE TABLE IF NOT EXISTS toolshelf_migrations (version integer PRIMARY KEY, applied timestamptz NOT NULL DEFAULT now())`); err != nil {
		return err
	}
	var have int
	if err := conn.QueryRow(ctx, "SELECT coalesce(max(version), 0) FROM toolshelf_migrations").Scan(&have); err != nil {
		return err
	}
	if have > len(migrations) {
		return fmt.Errorf("the store's schema is version %d, newer than this toolshelf's %d: upgrade toolshelf", have, len(migrations))
	}
	for v := have + 1; v <= len(migrations); v++ {
		err := pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
			if _, err := tx.Exec(ctx, migrations[v-1]); err != nil {
				return err
			}
			_, err := tx.Exec(ctx, "INSERT INTO toolshelf_migrations (version) VALUES ($1)", v)
			return err
		})
		if err != nil {
			return fmt.Errorf("migration %d: %w", v, err)
		}
	}
	return nil
}

// Migrations is the schema version this toolshelf brings a store to.
func Migrations() int { return len(migrations) }
