package store

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// Tasks keeps the tasks of calls answered with a task handle (MCP's
// tasks extension, package gateway), as records the gateway reads, so
// that any replica answers for any task until it expires.
type Tasks interface {
	PutTask(ctx context.Context, id string, record []byte, expires time.Time) error
	// GetTask returns a task's record; nil when there is none, or it
	// expired.
	GetTask(ctx context.Context, id string) ([]byte, error)
}

var _ Tasks = (*DB)(nil)

func (d *DB) PutTask(ctx context.Context, id string, record []byte, expires time.Time) error {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	b := &pgx.Batch{}
	b.Queue(`INSERT INTO tasks (id, record, expires) VALUES ($1, $2, $3)
		ON CONFLICT (id) DO UPDATE SET record = $2, expires = $3`, id, record, expires)
	b.Queue("DELETE FROM tasks WHERE expires < now()")
	return d.pool.SendBatch(ctx, b).Close()
}

func (d *DB) GetTask(ctx context.Context, id string) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	var record []byte
	err := d.pool.QueryRow(ctx, "SELECT record FROM tasks WHERE id = $1 AND expires > now()", id).Scan(&record)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	return record, err
}
