// Package journal is a replica's local write-ahead file: what an answer
// promises (the call's audit record, the pair search learned from it) is
// in the file, fsynced, before the answer leaves, and stays there until
// the shared store has taken it. A replica killed before the store had it
// leaves its file behind; the next replica to open a journal in the same
// folder takes the file's entries over and lands them.
//
// Appends are committed in groups: while one fsync runs, the appends that
// arrive wait for the next, which takes them all, so that durability
// costs a disk flush per group, not per call.
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
	"strings"
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
	buf     []byte
	batch   *batch // the appends waiting for the next fsync
	syncing bool
	synced  *sync.Cond // broadcast when an fsync ends
	undone  map[string]bool
	pending map[string][]Entry // entries of an earlier run, by kind, until taken
}

// batch is a group of appends committed by one fsync.
type batch struct {
	done chan struct{}
	err  error
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
	j := &Journal{dir: dir, id: hex.EncodeToString(idb), logger: logger, undone: map[string]bool{}, pending: map[string][]Entry{}, batch: newBatch()}
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

func newBatch() *batch { return &batch{done: make(chan struct{})} }

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

// ErrFull is an append to a journal at MaxBytes.
var ErrFull = errors.New("journal: the file is full; the store has not taken what waits in it")

// Append writes an entry of kind with data (JSON-encoded) and returns
// once it is on disk (fsynced), with its origin. Appends that arrive
// while an fsync runs are committed together by the next. ctx is checked
// before the entry is written: once it is, the append waits for its
// fsync, which a disk bounds.
func (j *Journal) Append(ctx context.Context, kind string, data any) (string, error) {
	if err := ctx.Err(); err != nil {
		return "", err
	}
	raw, err := json.Marshal(data)
	if err != nil {
		return "", err
	}
	j.mu.Lock()
	if j.f == nil {
		j.mu.Unlock()
		return "", errors.New("journal: closed")
	}
	origin := j.id + "." + strconv.FormatUint(j.next, 10)
	b, _ := json.Marshal(line{Entry: Entry{Origin: origin, Kind: kind, Data: raw}})
	if j.size+int64(len(j.buf)+len(b)) >= MaxBytes {
		j.mu.Unlock()
		return "", ErrFull
	}
	j.next++
	j.buf = append(append(j.buf, b...), '\n')
	j.undone[origin] = true
	mine := j.batch
	for {
		select {
		case <-mine.done:
			j.mu.Unlock()
			return origin, mine.err
		default:
		}
		if !j.syncing {
			// Lead: commit everything buffered (this entry's batch, and
			// any other waiting) with one fsync.
			j.syncing = true
			buf, b := j.buf, j.batch
			j.buf, j.batch = nil, newBatch()
			j.mu.Unlock()
			n, err := j.f.Write(buf)
			if err == nil {
				err = j.f.Sync()
			}
			j.mu.Lock()
			j.size += int64(n)
			j.syncing = false
			b.err = err
			close(b.done)
			j.synced.Broadcast()
			continue
		}
		// Wait for the fsync under way; then this batch is done, or
		// leads the next.
		j.synced.Wait()
	}
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
	if len(j.undone) == 0 && !j.syncing && len(j.buf) == 0 {
		if err := j.f.Truncate(0); err == nil {
			if _, err := j.f.Seek(0, io.SeekStart); err == nil {
				j.size = 0
				return
			}
		}
	}
	b, _ := json.Marshal(line{Done: origins})
	b = append(b, '\n')
	j.buf = append(j.buf, b...)
	if !j.syncing {
		// Written now (into the kernel, which outlives a killed process),
		// without waiting for a disk flush.
		n, err := j.f.Write(j.buf)
		j.size += int64(n)
		j.buf = nil
		if err != nil {
			j.logger.Warn("journal: marking entries landed failed; they will be landed again", "error", err)
		}
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
	var err error
	if len(j.buf) > 0 {
		_, err = j.f.Write(j.buf)
		j.buf = nil
	}
	if e := j.f.Sync(); err == nil {
		err = e
	}
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

// String names the journal for logs.
func (j *Journal) String() string { return strings.TrimSuffix(filepath.Base(j.path), ".wal") }
