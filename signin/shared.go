package signin

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/toolshelf/toolshelf/store"
)

// changesChannel is where replicas hear of each other's sign-ins.
const changesChannel = "toolshelf_signins"

// OpenShared returns the sign-ins of a fleet's replicas, kept in the
// shared store db, each sealed with key (AES-256-GCM, the server and
// resource bound to it) so that the database and its backups hold no
// usable token. Until ctx is done the store hears of the sign-ins,
// sign-outs and refreshes made through other replicas, which the next
// request to a server then uses.
func OpenShared(ctx context.Context, db *store.DB, key []byte) (*Store, error) {
	block, err := aes.NewCipher(key)
	if err != nil || len(key) != 32 {
		return nil, errors.New("the store key must be 32 bytes")
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, err
	}
	s := &Store{where: db.Where(), back: &sharedSignins{db: db, aead: aead}}
	go db.Listen(ctx, changesChannel, func(string) { s.changes.Add(1) })
	return s, nil
}

// ParseKey reads a store key: 32 random bytes, base64 or hex encoded.
func ParseKey(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	for _, decode := range []func(string) ([]byte, error){
		base64.StdEncoding.DecodeString, base64.RawStdEncoding.DecodeString,
		base64.URLEncoding.DecodeString, base64.RawURLEncoding.DecodeString, hex.DecodeString,
	} {
		if b, err := decode(s); err == nil && len(b) == 32 {
			return b, nil
		}
	}
	return nil, errors.New("want 32 random bytes, base64-encoded (openssl rand -base64 32)")
}

// sharedSignins is the signins table of the shared store.
type sharedSignins struct {
	db   *store.DB
	aead cipher.AEAD
}

// boundTo is what a sealed row is bound to: its server, resource and
// subject, so that a row moved to another's place does not open. The
// gateway's own sign-ins keep the binding they had before sign-ins had
// subjects.
func boundTo(k Key) []byte {
	if k.Subject == "" {
		return []byte(k.Server + "\x00" + k.Resource)
	}
	return []byte(k.Server + "\x00" + k.Resource + "\x00" + k.Subject)
}

func (s *sharedSignins) seal(r *Record) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	nonce := make([]byte, s.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return s.aead.Seal(nonce, nonce, data, boundTo(r.key())), nil
}

func (s *sharedSignins) open(k Key, sealed []byte) (*Record, error) {
	n := s.aead.NonceSize()
	var data []byte
	err := errors.New("too short")
	if len(sealed) > n {
		data, err = s.aead.Open(nil, sealed[:n], sealed[n:], boundTo(k))
	}
	if err != nil {
		return nil, unsealError(fmt.Sprintf("the sign-in of %s in the store does not open with this store key: it was sealed with another key, or altered", k.Server))
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, unsealError(fmt.Sprintf("the sign-in of %s in the store: %v", k.Server, err))
	}
	return &r, nil
}

// unsealError is a sign-in the store key does not open.
type unsealError string

func (e unsealError) Error() string { return string(e) }

// unreachable words an error of the database.
func (s *sharedSignins) unreachable(err error) error {
	var na *NeedsAuthError
	var ue unsealError
	if err == nil || errors.As(err, &na) || errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("sign-ins are kept in the shared store %s, which cannot be reached or failed: %w", s.db.Where(), err)
}

func (s *sharedSignins) list(ctx context.Context) ([]Record, error) {
	rows, err := s.db.Pool().Query(ctx, "SELECT server, resource, subject, sealed FROM signins ORDER BY server, resource, subject")
	if err != nil {
		return nil, s.unreachable(err)
	}
	defer rows.Close()
	var out []Record
	for rows.Next() {
		var k Key
		var sealed []byte
		if err := rows.Scan(&k.Server, &k.Resource, &k.Subject, &sealed); err != nil {
			return nil, s.unreachable(err)
		}
		r, err := s.open(k, sealed)
		if err != nil {
			return nil, err
		}
		out = append(out, *r)
	}
	return out, s.unreachable(rows.Err())
}

func (s *sharedSignins) update(ctx context.Context, k Key, fn func(*Record) (*Record, error)) (*Record, error) {
	var out *Record
	err := pgx.BeginFunc(ctx, s.db.Pool(), func(tx pgx.Tx) error {
		// A lock of the sign-in's own, held until the transaction ends:
		// it also covers a sign-in not yet in the table.
		if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtextextended($1 || chr(1) || $2 || chr(1) || $3, 7))", k.Server, k.Resource, k.Subject); err != nil {
			return err
		}
		var sealed []byte
		var cur *Record
		err := tx.QueryRow(ctx, "SELECT sealed FROM signins WHERE server = $1 AND resource = $2 AND subject = $3", k.Server, k.Resource, k.Subject).Scan(&sealed)
		switch {
		case err == nil:
			if cur, err = s.open(k, sealed); err != nil {
				return err
			}
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		next, err := fn(cur)
		if err != nil {
			return err
		}
		out = next
		if next == nil || next == cur {
			return nil
		}
		if sealed, err = s.seal(next); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO signins (server, resource, subject, sealed, updated) VALUES ($1, $2, $3, $4, now())
			ON CONFLICT (server, resource, subject) DO UPDATE SET sealed = $4, updated = now()`, k.Server, k.Resource, k.Subject, sealed); err != nil {
			return err
		}
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", changesChannel, k.Server)
		return err
	})
	return out, s.unreachable(err)
}

func (s *sharedSignins) remove(ctx context.Context, server, subject string, all bool) (int, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.db.Pool(), func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, "DELETE FROM signins WHERE server = $1 AND ($3 OR subject = $2)", server, subject, all)
		if err != nil {
			return err
		}
		n = tag.RowsAffected()
		_, err = tx.Exec(ctx, "SELECT pg_notify($1, $2)", changesChannel, server)
		return err
	})
	return int(n), s.unreachable(err)
}
