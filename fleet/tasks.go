package fleet

import (
	"context"
	"crypto/rand"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/toolshelf/toolshelf/store"
)

// SealedTasks keeps a fleet's tasks in the store sealed with the fleet
// key (AES-GCM, bound to the task's id and the record's version): someone
// who can write to the store but has not the key can neither read a task
// (its call's arguments, its result) nor change one (its result, whose it
// is), nor move one task's record to another's id, nor put back an
// earlier record of the same task (a finished task made "working" again,
// its result gone) once this replica has seen a later one. A record that
// fails its check is refused, never served.
type SealedTasks struct {
	store store.Tasks
	keys  *keys

	mu   sync.Mutex
	seen map[string]uint64 // the highest version of each task read or written
}

// maxSeenTasks bounds the versions remembered; past it the oldest half
// is forgotten (a task outlives a few of its records at most).
const maxSeenTasks = 100_000

// SealTasks returns the fleet's tasks, kept in st.
func (m *Member) SealTasks(st store.Tasks) *SealedTasks {
	return &SealedTasks{store: st, keys: m.keys, seen: map[string]uint64{}}
}

// ErrTaskForged is a task's record in the store that the fleet key did
// not seal (written, or changed, by someone without it), or an earlier
// record of the task put back.
var ErrTaskForged = errors.New("fleet: a task's record in the store fails its check against the fleet key (written or changed without it, or an earlier one put back); refused")

// versioned marks a sealed record with its version: the marker byte, the
// version (8 bytes, big-endian), then the nonce and the sealed record.
const versioned = 0x01

// taskBinding is what a task's record is sealed to: its id and version.
func taskBinding(id string, version uint64) []byte {
	b := []byte("task\x00" + id)
	if version > 0 {
		b = binary.BigEndian.AppendUint64(append(b, 0, 'v'), version)
	}
	return b
}

// PutTask seals record and keeps it until expires, as a version later
// than any this replica has seen of the task (the time, in nanoseconds,
// unless that is not later).
func (s *SealedTasks) PutTask(ctx context.Context, id string, record []byte, expires time.Time) error {
	s.mu.Lock()
	version := max(uint64(time.Now().UnixNano()), s.seen[id]+1)
	s.noteLocked(id, version)
	s.mu.Unlock()
	n := s.keys.seal.NonceSize()
	out := make([]byte, 9+n, 9+n+len(record)+s.keys.seal.Overhead())
	out[0] = versioned
	binary.BigEndian.PutUint64(out[1:9], version)
	rand.Read(out[9 : 9+n])
	return s.store.PutTask(ctx, id, s.keys.seal.Seal(out, out[9:9+n], record, taskBinding(id, version)), expires)
}

// noteLocked records version as seen for id.
func (s *SealedTasks) noteLocked(id string, version uint64) {
	if len(s.seen) >= maxSeenTasks {
		for k := range s.seen {
			delete(s.seen, k)
			if len(s.seen) < maxSeenTasks/2 {
				break
			}
		}
	}
	s.seen[id] = max(s.seen[id], version)
}

// GetTask returns a task's record, opened; nil when there is none. A
// record that does not open, or is older than one this replica has seen,
// is ErrTaskForged.
func (s *SealedTasks) GetTask(ctx context.Context, id string) ([]byte, error) {
	sealed, err := s.store.GetTask(ctx, id)
	if err != nil || sealed == nil {
		return nil, err
	}
	n := s.keys.seal.NonceSize()
	var version uint64
	body := sealed
	if len(sealed) >= 9+n && sealed[0] == versioned {
		version, body = binary.BigEndian.Uint64(sealed[1:9]), sealed[9:]
	}
	plain, err := s.open(id, version, body)
	if err != nil && version > 0 {
		// A record of before versions whose nonce began with the
		// marker byte.
		version = 0
		plain, err = s.open(id, 0, sealed)
	}
	if err != nil {
		return nil, fmt.Errorf("task %s: %w", id, ErrTaskForged)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if version < s.seen[id] {
		return nil, fmt.Errorf("task %s: version %d is older than version %d this replica has seen: %w", id, version, s.seen[id], ErrTaskForged)
	}
	s.noteLocked(id, version)
	return plain, nil
}

// open opens a sealed record (nonce first) bound to id and version.
func (s *SealedTasks) open(id string, version uint64, sealed []byte) ([]byte, error) {
	n := s.keys.seal.NonceSize()
	if len(sealed) < n {
		return nil, ErrTaskForged
	}
	return s.keys.seal.Open(nil, sealed[:n], sealed[n:], taskBinding(id, version))
}
