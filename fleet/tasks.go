package fleet

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"time"

	"github.com/toolshelf/toolshelf/store"
)

// SealedTasks keeps a fleet's tasks in the store sealed with the fleet
// key (AES-GCM, bound to the task's id): someone who can write to the
// store but has not the key can neither read a task (its call's
// arguments, its result) nor change one (its result, whose it is), nor
// move one task's record to another's id. A record that fails its check
// is refused, never served.
type SealedTasks struct {
	store store.Tasks
	keys  *keys
}

// SealTasks returns the fleet's tasks, kept in st.
func (m *Member) SealTasks(st store.Tasks) *SealedTasks { return &SealedTasks{store: st, keys: m.keys} }

// ErrTaskForged is a task's record in the store that the fleet key did
// not seal (written, or changed, by someone without it).
var ErrTaskForged = errors.New("fleet: a task's record in the store fails its check against the fleet key (written or changed without it); refused")

// PutTask seals record and keeps it until expires.
func (s *SealedTasks) PutTask(ctx context.Context, id string, record []byte, expires time.Time) error {
	nonce := make([]byte, s.keys.seal.NonceSize(), s.keys.seal.NonceSize()+len(record)+s.keys.seal.Overhead())
	rand.Read(nonce)
	return s.store.PutTask(ctx, id, s.keys.seal.Seal(nonce, nonce, record, []byte("task\x00"+id)), expires)
}

// GetTask returns a task's record, opened; nil when there is none. A
// record that does not open is ErrTaskForged.
func (s *SealedTasks) GetTask(ctx context.Context, id string) ([]byte, error) {
	sealed, err := s.store.GetTask(ctx, id)
	if err != nil || sealed == nil {
		return nil, err
	}
	n := s.keys.seal.NonceSize()
	if len(sealed) < n {
		return nil, fmt.Errorf("task %s: %w", id, ErrTaskForged)
	}
	plain, err := s.keys.seal.Open(nil, sealed[:n], sealed[n:], []byte("task\x00"+id))
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", id, ErrTaskForged)
	}
	return plain, nil
}
