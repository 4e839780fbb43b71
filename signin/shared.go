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
	"strconv"
	"strings"
	"sync"

	"github.com/toolshelf/toolshelf/store"
)

// Shared is a store that keeps the sign-ins of several replicas, and
// counts the changes it hears of (store.DB is one).
type Shared interface {
	store.Signins
	Changes(store.Kind) uint64
	Where() string
}

// OpenShared returns the sign-ins of a fleet's replicas, kept in the
// shared store st, each sealed with key (AES-256-GCM, the server,
// resource, subject and version bound to it) so that the database and its
// backups hold no usable token. old are keys the sign-ins may still be
// sealed with while the key is rotated: they open rows, key seals them.
// The sign-ins, sign-outs and refreshes made through other replicas are
// used by the next request to a server once st's feed has told of them.
func OpenShared(st Shared, key []byte, old ...[]byte) (*Store, error) {
	var aeads []cipher.AEAD
	for _, k := range append([][]byte{key}, old...) {
		block, err := aes.NewCipher(k)
		if err != nil || len(k) != 32 {
			return nil, errors.New("the store key must be 32 bytes")
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, err
		}
		aeads = append(aeads, aead)
	}
	return &Store{where: st.Where(), back: &sharedSignins{st: st, aeads: aeads, seen: map[Key]int64{}}}, nil
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

// sharedSignins seals and opens the sign-ins of a shared store.
type sharedSignins struct {
	st    Shared
	aeads []cipher.AEAD // the first seals; all open

	mu sync.Mutex
	// seen is the highest version of each sign-in this process has read
	// or written: a row older than that was put back, and is refused.
	seen map[Key]int64
}

// boundTo is what a sealed row is bound to: its server, resource,
// subject and version, so that a row moved to another's place, or put
// back after a change, does not open. Rows of before versions (0) keep
// the binding they had.
func boundTo(k Key, version int64) []byte {
	b := k.Server + "\x00" + k.Resource
	if k.Subject != "" {
		b += "\x00" + k.Subject
	}
	if version > 0 {
		b += "\x00v" + strconv.FormatInt(version, 10)
	}
	return []byte(b)
}

func (s *sharedSignins) seal(r *Record, version int64) ([]byte, error) {
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	aead := s.aeads[0]
	nonce := make([]byte, aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, err
	}
	return aead.Seal(nonce, nonce, data, boundTo(r.key(), version)), nil
}

// open reads a row: nil for a tombstone (a sign-out), an unsealError for
// one that does not open with any key or is older than a version seen.
func (s *sharedSignins) open(k Key, version int64, sealed []byte) (*Record, error) {
	s.mu.Lock()
	seen := s.seen[k]
	if version > seen {
		s.seen[k] = version
	}
	s.mu.Unlock()
	if version < seen {
		return nil, unsealError(fmt.Sprintf("the sign-in of %s in the store is version %d, older than version %d this replica has seen: an old row was put back, and is refused", describeKey(k), version, seen))
	}
	if len(sealed) == 0 {
		return nil, nil
	}
	var data []byte
	err := errors.New("too short")
	for _, aead := range s.aeads {
		n := aead.NonceSize()
		if len(sealed) > n {
			if data, err = aead.Open(nil, sealed[:n], sealed[n:], boundTo(k, version)); err == nil {
				break
			}
		}
	}
	if err != nil {
		return nil, unsealError(fmt.Sprintf("the sign-in of %s in the store does not open with this store key: it was sealed with another key, or altered", describeKey(k)))
	}
	var r Record
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, unsealError(fmt.Sprintf("the sign-in of %s in the store: %v", describeKey(k), err))
	}
	return &r, nil
}

func describeKey(k Key) string {
	if k.Subject != "" {
		return k.Server + " for " + k.Subject
	}
	return k.Server
}

// unsealError is a sign-in the store key does not open, or a row put
// back.
type unsealError string

func (e unsealError) Error() string { return string(e) }

// unreachable words an error of the database.
func (s *sharedSignins) unreachable(err error) error {
	var na *NeedsAuthError
	var ue unsealError
	if err == nil || errors.As(err, &na) || errors.As(err, &ue) {
		return err
	}
	return fmt.Errorf("sign-ins are kept in the shared store %s, which cannot be reached or failed: %w", s.st.Where(), err)
}

func (s *sharedSignins) changes() uint64 { return s.st.Changes(store.KindSignins) }

func (s *sharedSignins) list(ctx context.Context) ([]Record, []Unreadable, error) {
	rows, err := s.st.SealedSignins(ctx)
	if err != nil {
		return nil, nil, s.unreachable(err)
	}
	var out []Record
	var bad []Unreadable
	for _, row := range rows {
		// A row that does not open is reported alone: it hides none of
		// the others.
		k := Key(row.SigninKey)
		r, err := s.open(k, row.Version, row.Sealed)
		switch {
		case err != nil:
			bad = append(bad, Unreadable{Key: k, Reason: err.Error()})
		case r != nil:
			out = append(out, *r)
		}
	}
	return out, bad, nil
}

func (s *sharedSignins) get(ctx context.Context, k Key) (*Record, error) {
	row, ok, err := s.st.SealedSignin(ctx, store.SigninKey(k))
	if err != nil || !ok {
		return nil, s.unreachable(err)
	}
	return s.open(k, row.Version, row.Sealed)
}

func (s *sharedSignins) update(ctx context.Context, k Key, fn func(*Record) (*Record, error)) (*Record, error) {
	var out *Record
	err := s.st.UpdateSignin(ctx, store.SigninKey(k), func(row store.SealedSignin, ok bool) (*store.SealedSignin, error) {
		var cur *Record
		if ok {
			// A row that cannot be trusted (another key's, or put back)
			// is as good as none: a new sign-in replaces it.
			var ue unsealError
			var err error
			if cur, err = s.open(k, row.Version, row.Sealed); errors.As(err, &ue) {
				cur = nil
			} else if err != nil {
				return nil, err
			}
		}
		s.mu.Lock()
		version := max(row.Version, s.seen[k])
		s.mu.Unlock()
		next, err := fn(cur)
		if err != nil {
			return nil, err
		}
		out = next
		if next == nil || next == cur {
			return nil, nil
		}
		version++
		sealed, err := s.seal(next, version)
		if err != nil {
			return nil, err
		}
		s.mu.Lock()
		s.seen[k] = max(s.seen[k], version)
		s.mu.Unlock()
		return &store.SealedSignin{SigninKey: row.SigninKey, Version: version, Sealed: sealed}, nil
	})
	return out, s.unreachable(err)
}

// remove leaves a tombstone in each sign-in's place: an empty row with
// the next version, so that the row signed out cannot be put back.
func (s *sharedSignins) remove(ctx context.Context, server, subject string, all bool) (int, error) {
	ended, err := s.st.EndSignins(ctx, server, subject, all)
	if err != nil {
		return 0, s.unreachable(err)
	}
	s.mu.Lock()
	for _, e := range ended {
		k := Key(e.SigninKey)
		s.seen[k] = max(s.seen[k], e.Version)
	}
	s.mu.Unlock()
	return len(ended), nil
}

// reseal seals every sign-in again with the first key, each with the next
// version: the end of a key rotation, after which the old keys can go.
// A row that opens with no key is left as it is, and counted in bad.
func (s *sharedSignins) reseal(ctx context.Context) (resealed int, bad []Unreadable, err error) {
	recs, unreadable, err := s.list(ctx)
	if err != nil {
		return 0, nil, err
	}
	for _, r := range recs {
		if _, err := s.update(ctx, r.key(), func(cur *Record) (*Record, error) {
			if cur == nil {
				return nil, nil
			}
			next := *cur
			return &next, nil
		}); err != nil {
			return resealed, unreadable, err
		}
		resealed++
	}
	return resealed, unreadable, nil
}
