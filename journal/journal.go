// Package journal is a replica's local write-ahead file: what an answer
// promises (the call's audit record, the pair search learned from it) is
// in the file, fsynced, before the answer leaves, and stays there until
// the shared store has taken it. A replica killed before the store had it
// leaves its file behind; the next replica to open a journal in the same
// folder takes the file's entries over and lands them.
//
// An entry is written into the file as it is added (so that it outlives
// the process at once), and Sync waits for it to be on disk. Syncs are
// served in groups: while one fsync runs, the syncs that arrive wait for
// the next, which serves them all, so that durability costs a disk flush
// per group of answers, not per call.
package journal

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
)

// MaxBytes bounds a journal file: past it, appends fail (their callers
// keep what they have in memory, as without a journal) until the store
// takes what waits.
const MaxBytes = 256 << 20

// Entry is one thing promised, of a kind ("audit", "learn").
type Entry struct {
	// Origin names the entry for good: the journal's id and the entry's
	// number. A store that keeps origins takes an entry landed twice
	// (after a crash between the store's commit and the "done") once.
	Origin string          `json:"o"`
	Kind   string          `json:"k"`
	Data   json.RawMessage `json:"d"`
}

// line is one line of the file: an entry, or the origins landed.
type line struct {
	Entry
	Done []string `json:"done,omitempty"`
}

// Journal is this process's journal file. It is safe for concurrent use.
type Journal struct {
	dir, path, id string
	logger        *slog.Logger

	mu      sync.Mutex
	f       *os.File
	size    int64
	next    uint64
	written uint64 // entries written
	durable uint64 // entries fsynced
	syncing bool
	synced  *sync.Cond // broadcast when an fsync ends
	undone  map[string]bool
	pending map[string][]Entry // entries of an earlier run, by kind, until taken
}

// Open opens a journal of this process's own in dir (made if need be), and
// takes over the entries that journals of processes gone left there
// unlanded: they are written into the new file, fsynced, and their files
// removed; Pending hands them out by kind.
func Open(dir string, logger *slog.Logger) (*Journal, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	idb := make([]byte, 8)
	rand.Read(idb)
	j := &Journal{dir: dir, id: hex.EncodeToString(idb), logger: logger, undone: map[string]bool{}, pending: map[string][]Entry{}}
	j.synced = sync.NewCond(&j.mu)
	j.path = filepath.Join(dir, "journal-"+j.id+".wal")
	f, err := os.OpenFile(j.path, os.O_CREATE|os.O_EXCL|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	if err := lock(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("journal: %w", err)
	}
	j.f = f
	if err := j.adopt(); err != nil {
		j.Close()
		return nil, err
	}
	return j, nil
}

// adopt takes over the files of journals whose process is gone (no lock
// held on them).
func (j *Journal) adopt() error {
	files, err := filepath.Glob(filepath.Join(j.dir, "journal-*.wal"))
	if err != nil {
		return err
	}
	var taken []string
	for _, file := range files {
		if file == j.path {
			continue
		}
		f, err := os.OpenFile(file, os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if lock(f) != nil {
			f.Close() // a live process's
			continue
		}
		entries, err := read(f)
		if err != nil {
			j.logger.Warn("journal: a file left behind is damaged past a point; what precedes it is landed", "file", file, "error", err)
		}
		for _, e := range entries {
			j.pending[e.Kind] = append(j.pending[e.Kind], e)
			if err := j.write(e); err != nil {
				f.Close()
				return err
			}
		}
		taken = append(taken, file)
		defer f.Close() // the lock is held until the entries are in our file
	}
	if len(taken) == 0 {
		return nil
	}
	if err := j.f.Sync(); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	for _, file := range taken {
		os.Remove(file)
	}
	n := 0
	for _, es := range j.pending {
		n += len(es)
	}
	j.logger.Info("journal: took over what replicas gone left unlanded", "files", len(taken), "entries", n)
	return nil
}

// read returns the entries of a file not marked done. A torn last line
// (a process killed mid-write; it was never fsynced, so never promised)
// ends the reading.
func read(f *os.File) ([]Entry, error) {
	var order []string
	entries := map[string]Entry{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	var err error
	for sc.Scan() {
		var l line
		if e := json.Unmarshal(sc.Bytes(), &l); e != nil {
			err = e
			break
		}
		for _, o := range l.Done {
			delete(entries, o)
		}
		if l.Origin != "" {
			if _, seen := entries[l.Origin]; !seen {
				order = append(order, l.Origin)
			}
			entries[l.Origin] = l.Entry
		}
	}
	if err == nil {
		err = sc.Err()
	}
	var out []Entry
	for _, o := range order {
		if e, ok := entries[o]; ok {
			out = append(out, e)
		}
	}
	return out, err
}

// write puts an entry taken over into the file (Open's, before anyone
// appends).
func (j *Journal) write(e Entry) error {
	b, err := json.Marshal(line{Entry: e})
	if err != nil {
		return err
	}
	b = append(b, '\n')
	n, err := j.f.Write(b)
	j.size += int64(n)
	j.undone[e.Origin] = true
	return err
}

// Pending returns, once, the entries of a kind that an earlier run left
// unlanded: the caller lands them and says Done.
func (j *Journal) Pending(kind string) []Entry {
	j.mu.Lock()
	defer j.mu.Unlock()
	es := j.pending[kind]
	delete(j.pending, kind)
	return es
}

// Take hands the entries of a kind that an earlier run left unlanded
// (see Pending) to keep, each decoded into a T with its origin; an entry
// that does not decode is skipped. It returns how many it handed.
func Take[T any](j *Journal, kind string, keep func(v T, origin string)) int {
	n := 0
	for _, e := range j.Pending(kind) {
		var v T
		if json.Unmarshal(e.Data, &v) == nil {
			keep(v, e.Origin)
			n++
		}
	}
	return n
}

// ErrFull is an append to a journal at MaxBytes.
var ErrFull = errors.New("journal: the file is full; the store has not taken what waits in it")

// Add writes an entry of kind with data (JSON-encoded) into the file and
// returns its origin without waiting for the disk: written, it outlives
// this process; Sync makes it outlive the machine.
func (j *Journal) Add(kind string, data any) (string, error) {
	raw, err := json.Marshal(data)
	if err != nil {
		return "", err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return "", errors.New("journal: closed")
	}
	origin := j.id + "." + strconv.FormatUint(j.next, 10)
	// The line as line's JSON encoding writes it, without encoding data
	// again (this is on every answer's path): the origin is hex and
	// digits, and raw is JSON already.
	k, _ := json.Marshal(kind)
	b := make([]byte, 0, len(origin)+len(k)+len(raw)+20)
	b = append(append(append(append(append(b, `{"o":"`...), origin...), `","k":`...), k...), `,"d":`...)
	b = append(append(b, raw...), "}\n"...)
	if j.size+int64(len(b)) >= MaxBytes {
		return "", ErrFull
	}
	n, err := j.f.Write(b)
	j.size += int64(n)
	if err != nil {
		return "", fmt.Errorf("journal: %w", err)
	}
	j.next++
	j.written++
	j.undone[origin] = true
	return origin, nil
}

// Sync returns once every entry added before it is on disk (fsynced).
// Syncs that arrive while an fsync runs are served together by the next,
// so that a disk flush serves a group of answers.
func (j *Journal) Sync(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	target := j.written
	for j.durable < target {
		if j.f == nil {
			return errors.New("journal: closed")
		}
		if !j.syncing {
			// Lead: one fsync for everything written so far.
			j.syncing = true
			upto := j.written
			f := j.f
			j.mu.Unlock()
			err := f.Sync()
			j.mu.Lock()
			j.syncing = false
			if err == nil {
				j.durable = max(j.durable, upto)
			}
			j.synced.Broadcast()
			if err != nil {
				return fmt.Errorf("journal: %w", err)
			}
			continue
		}
		j.synced.Wait()
	}
	return nil
}

// Append adds an entry and syncs: it returns once the entry is on disk.
func (j *Journal) Append(ctx context.Context, kind string, data any) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	origin, err := j.Add(kind, data)
	if err != nil {
		return "", err
	}
	return origin, j.Sync(ctx)
}

// Done marks entries as landed in the store. The mark is written but not
// fsynced: lost in a crash, the entries are landed again, and a store
// that keeps origins takes them once. When nothing is left undone, the
// file is emptied.
func (j *Journal) Done(origins ...string) {
	if len(origins) == 0 {
		return
	}
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return
	}
	for _, o := range origins {
		delete(j.undone, o)
	}
	if len(j.undone) == 0 && !j.syncing {
		if err := j.f.Truncate(0); err == nil {
			if _, err := j.f.Seek(0, io.SeekStart); err == nil {
				j.size = 0
				return
			}
		}
	}
	// Written now (into the kernel, which outlives a killed process),
	// without waiting for a disk flush.
	b, _ := json.Marshal(line{Done: origins})
	n, err := j.f.Write(append(b, '\n'))
	j.size += int64(n)
	if err != nil {
		j.logger.Warn("journal: marking entries landed failed; they will be landed again", "error", err)
	}
}

// Undone returns how many entries wait for the store.
func (j *Journal) Undone() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.undone)
}

// Close closes the file; entries not done stay in it for the next run.
// An empty file is removed.
func (j *Journal) Close() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return nil
	}
	err := j.f.Sync()
	empty := len(j.undone) == 0
	if e := j.f.Close(); err == nil {
		err = e
	}
	j.f = nil
	if empty {
		os.Remove(j.path)
	}
	return err
}

// Where is the journal's file.
func (j *Journal) Where() string { return j.path }
