package store

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// PinSet is every pinned tool, by server and tool: each an entry as
// JSON, which package pin reads and checks.
type PinSet map[string]map[string]json.RawMessage

// Pins keeps pinned tool definitions, approvals and denials (package
// pin). Its version grows with each save.
type Pins interface {
	// LoadPins reads every pin and the version they are at.
	LoadPins(ctx context.Context) (PinSet, int64, error)
	// PinsVersion is the version the pins are at now.
	PinsVersion(ctx context.Context) (int64, error)
	// SavePins calls change with the pins as they are now, in one step no
	// other save (of any replica) interleaves with, and writes the
	// entries it returns. It returns the pins' new version.
	SavePins(ctx context.Context, change func(now PinSet) (writes PinSet, err error)) (int64, error)
}

var _ Pins = (*DB)(nil)

func (d *DB) LoadPins(ctx context.Context) (pins PinSet, version int64, err error) {
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		pins, version, err = loadPins(ctx, tx, false)
		return err
	})
	if err != nil {
		return nil, 0, fmt.Errorf("reading the pins in %s: %w", d.where, err)
	}
	return pins, version, nil
}

func (d *DB) PinsVersion(ctx context.Context) (int64, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	var v int64
	if err := d.pool.QueryRow(ctx, "SELECT version FROM pins_version").Scan(&v); err != nil {
		return 0, fmt.Errorf("the store %s is unreachable: %w", d.where, err)
	}
	return v, nil
}

// loadPins reads every pin and the version in tx; forUpdate locks the
// version row, so that saves follow one another.
func loadPins(ctx context.Context, tx pgx.Tx, forUpdate bool) (PinSet, int64, error) {
	q := "SELECT version FROM pins_version"
	if forUpdate {
		q += " FOR UPDATE"
	}
	var v int64
	if err := tx.QueryRow(ctx, q).Scan(&v); err != nil {
		return nil, 0, err
	}
	rows, err := tx.Query(ctx, "SELECT server, tool, entry FROM pins")
	if err != nil {
		return nil, 0, err
	}
	pins := PinSet{}
	for rows.Next() {
		var server, tool string
		var raw []byte
		if err := rows.Scan(&server, &tool, &raw); err != nil {
			return nil, 0, err
		}
		if pins[server] == nil {
			pins[server] = map[string]json.RawMessage{}
		}
		pins[server][tool] = raw
	}
	return pins, v, rows.Err()
}

func (d *DB) SavePins(ctx context.Context, change func(PinSet) (PinSet, error)) (version int64, err error) {
	err = d.inTx(ctx, func(tx pgx.Tx) error {
		now, _, err := loadPins(ctx, tx, true)
		if err != nil {
			return err
		}
		writes, err := change(now)
		if err != nil {
			return err
		}
		for server, tools := range writes {
			for tool, e := range tools {
				if _, err := tx.Exec(ctx, `INSERT INTO pins (server, tool, entry) VALUES ($1, $2, $3)
					ON CONFLICT (server, tool) DO UPDATE SET entry = excluded.entry`, server, tool, []byte(e)); err != nil {
					return err
				}
			}
		}
		if err := tx.QueryRow(ctx, "UPDATE pins_version SET version = version + 1 RETURNING version").Scan(&version); err != nil {
			return err
		}
		return d.announce(ctx, tx, KindPins)
	})
	if err != nil {
		return 0, fmt.Errorf("the pins were not saved in %s: %w", d.where, err)
	}
	return version, nil
}
