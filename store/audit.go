package store

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AuditRow is one record of the audit trail (package audit), as JSON.
type AuditRow struct {
	Time   time.Time
	Record json.RawMessage
	// Origin is the record's place in a replica's journal ("" when it
	// came from none): a record landed twice is kept once.
	Origin string
}

// Audit keeps the audit trail of every replica (package audit).
type Audit interface {
	// AddRecords writes a batch, all or none.
	AddRecords(ctx context.Context, batch []AuditRow) error
	// Records returns the records from since on (all when since is
	// zero), oldest first.
	Records(ctx context.Context, since time.Time) ([]json.RawMessage, error)
}

var _ Audit = (*DB)(nil)

func (d *DB) AddRecords(ctx context.Context, batch []AuditRow) error {
	return d.inTx(ctx, func(tx pgx.Tx) error {
		b := &pgx.Batch{}
		for _, r := range batch {
			b.Queue("INSERT INTO audit_records (time, record, origin) VALUES ($1, $2, NULLIF($3, '')) ON CONFLICT (origin) DO NOTHING", r.Time, []byte(r.Record), r.Origin)
		}
		return tx.SendBatch(ctx, b).Close()
	})
}

func (d *DB) Records(ctx context.Context, since time.Time) ([]json.RawMessage, error) {
	rows, err := d.pool.Query(ctx, "SELECT record FROM audit_records WHERE time >= $1 ORDER BY time, id", since)
	if err != nil {
		return nil, fmt.Errorf("reading the audit records in %s: %w", d.where, err)
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (json.RawMessage, error) {
		var raw []byte
		err := r.Scan(&raw)
		return raw, err
	})
}
