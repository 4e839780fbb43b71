package pin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/toolshelf/toolshelf/store"
)

// OpenShared returns the pins kept in a PostgreSQL store that replicas
// share (serve --store): an approval or a denial through one replica is
// seen by every other the next time it asks Reload (every two seconds in
// a gateway), and tools pinned on first use by any replica are pinned for
// all.
func OpenShared(db *store.DB, trust Trust) (*Lock, error) {
	return open(&sharedPins{db: db}, trust)
}

// sharedPins keeps the pins in the store's pins table; pins_version
// counts saves.
type sharedPins struct{ db *store.DB }

// storeTimeout bounds one round trip to the store: a gateway asks every
// two seconds, and must not hang on a database that is away.
const storeTimeout = 10 * time.Second

func (s *sharedPins) where() string { return s.db.Where() + " (pins)" }

func (s *sharedPins) current() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var v int64
	if err := s.db.Pool().QueryRow(ctx, "SELECT version FROM pins_version").Scan(&v); err != nil {
		return "", fmt.Errorf("the store %s is unreachable: %w", s.db.Where(), err)
	}
	return strconv.FormatInt(v, 10), nil
}

func (s *sharedPins) load() (map[string]map[string]entry, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var pins map[string]map[string]entry
	var version string
	err := pgx.BeginFunc(ctx, s.db.Pool(), func(tx pgx.Tx) error {
		var err error
		pins, version, err = loadPins(ctx, tx, false)
		return err
	})
	if err != nil {
		return nil, "", fmt.Errorf("reading the pins in %s: %w", s.db.Where(), err)
	}
	return pins, version, nil
}

// loadPins reads every pin and the version in tx, checking each as the
// lock file's are checked; forUpdate locks the version row, so that saves
// follow one another.
func loadPins(ctx context.Context, tx pgx.Tx, forUpdate bool) (map[string]map[string]entry, string, error) {
	q := "SELECT version FROM pins_version"
	if forUpdate {
		q += " FOR UPDATE"
	}
	var v int64
	if err := tx.QueryRow(ctx, q).Scan(&v); err != nil {
		return nil, "", err
	}
	rows, err := tx.Query(ctx, "SELECT server, tool, entry FROM pins")
	if err != nil {
		return nil, "", err
	}
	pins := map[string]map[string]entry{}
	for rows.Next() {
		var server, tool string
		var raw []byte
		if err := rows.Scan(&server, &tool, &raw); err != nil {
			return nil, "", err
		}
		var e entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, "", fmt.Errorf("server %q, tool %q: %v", server, tool, err)
		}
		def, err := Canonical(e.Definition)
		if err != nil {
			return nil, "", fmt.Errorf("server %q, tool %q: %v", server, tool, err)
		}
		if def.Hash() != e.SHA256 {
			return nil, "", fmt.Errorf("server %q, tool %q: sha256 does not match the definition", server, tool)
		}
		e.Definition = json.RawMessage(def)
		if pins[server] == nil {
			pins[server] = map[string]entry{}
		}
		pins[server][tool] = e
	}
	return pins, strconv.FormatInt(v, 10), rows.Err()
}

func (s *sharedPins) save(merge func(map[string]map[string]entry)) (map[string]map[string]entry, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	var pins map[string]map[string]entry
	var version string
	err := pgx.BeginFunc(ctx, s.db.Pool(), func(tx pgx.Tx) error {
		before, _, err := loadPins(ctx, tx, true)
		if err != nil {
			return err
		}
		pins = map[string]map[string]entry{}
		for server, tools := range before {
			pins[server] = map[string]entry{}
			for tool, e := range tools {
				pins[server][tool] = e
			}
		}
		merge(pins)
		for server, tools := range pins {
			for tool, e := range tools {
				if old, ok := before[server][tool]; ok && old.SHA256 == e.SHA256 && old.Denied == e.Denied && old.Later == e.Later {
					continue
				}
				raw, err := json.Marshal(e)
				if err != nil {
					return err
				}
				if _, err := tx.Exec(ctx, `INSERT INTO pins (server, tool, entry) VALUES ($1, $2, $3)
					ON CONFLICT (server, tool) DO UPDATE SET entry = excluded.entry`, server, tool, raw); err != nil {
					return err
				}
			}
		}
		var v int64
		if err := tx.QueryRow(ctx, "UPDATE pins_version SET version = version + 1 RETURNING version").Scan(&v); err != nil {
			return err
		}
		version = strconv.FormatInt(v, 10)
		return nil
	})
	if err != nil {
		return nil, "", fmt.Errorf("the pins were not saved in %s: %w", s.db.Where(), err)
	}
	return pins, version, nil
}
