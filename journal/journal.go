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
//
// Each line carries a checksum of its own (CRC-32C, before the JSON): a
// damaged line is skipped and counted, and the lines after it are read,
// so that one bad record does not lose the ones behind it. A journal that
// cannot be written (a full disk, a read-only folder) says so (Ready):
// the gateway then refuses calls rather than answer what it cannot keep.
package journal

import (
	"bufio"
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"
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
	key           []byte // signs the lines (OpenSigned); nil: checksums

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
	// broken is why the file last failed to take a write or a flush,
	// until a probe succeeds (Ready); probed is when it was last tried.
	broken error
	probed time.Time
}

// Open opens a journal of this process's own in dir (made if need be), and
// takes over the entries that journals of processes gone left there
// unlanded: they are written into the new file, fsynced, and their files
// removed; Pending hands them out by kind.
func Open(dir string, logger *slog.Logger) (*Journal, error) { return OpenSigned(dir, nil, logger) }

// OpenSigned is Open for a journal whose lines are signed with key (an
// HMAC-SHA-256 in place of the checksum): a fleet's replica signs its
// journal with a key derived from the fleet key, so that a line written
// by anyone else (into the folder, or a file left behind) is refused,
// counted as damaged, and never landed. A line without a signature is
// refused too.
func OpenSigned(dir string, key []byte, logger *slog.Logger) (*Journal, error) {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("journal: %w", err)
	}
	idb := make([]byte, 8)
	rand.Read(idb)
	j := &Journal{dir: dir, id: hex.EncodeToString(idb), logger: logger, key: key, undone: map[string]bool{}, pending: map[string][]Entry{}}
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
	var taken, keep []string
	for _, file := range files {
		if file == j.path {
			continue
		}
		f, err := os.OpenFile(file, os.O_RDWR|noFollow, 0)
		if err != nil {
			continue // a link planted as a journal is not followed
		}
		if lock(f) != nil {
			f.Close() // a live process's
			continue
		}
		entries, damaged, err := read(f, j.key)
		if err != nil {
			f.Close()
			j.logger.Warn("journal: a file left behind cannot be read; it stays for the next start", "file", file, "error", err)
			continue
		}
		if damaged > 0 {
			j.logger.Warn("journal: damaged records skipped in a file left behind; the others are landed, and the file is kept beside as .damaged", "file", file, "damaged", damaged, "landed", len(entries))
		}
		for _, e := range entries {
			j.pending[e.Kind] = append(j.pending[e.Kind], e)
			if err := j.write(e); err != nil {
				f.Close()
				return err
			}
		}
		taken = append(taken, file)
		if damaged > 0 {
			keep = append(keep, file)
		}
		defer f.Close() // the lock is held until the entries are in our file
	}
	if len(taken) == 0 {
		return nil
	}
	if err := syncFile(j.f); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	// Only now that their records are on disk in this journal's file do
	// the files go; one with damaged records stays for a person to read,
	// renamed so that no journal takes it again.
	for _, file := range taken {
		if slices.Contains(keep, file) {
			os.Rename(file, file+".damaged")
			continue
		}
		os.Remove(file)
	}
	n := 0
	for _, es := range j.pending {
		n += len(es)
	}
	j.logger.Info("journal: took over what replicas gone left unlanded", "files", len(taken), "entries", n)
	return nil
}

// read returns the entries of a file not marked done, and how many of
// its lines were damaged (a checksum that does not hold, a line that is
// not JSON): those are skipped, and reading goes on. A last line without
// its newline was torn by a kill mid-write (never fsynced, so never
// promised): it is not counted. The error is a file that cannot be read.
func read(f *os.File, key []byte) (entries []Entry, damaged int, err error) {
	var order []string
	byOrigin := map[string]Entry{}
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		raw, err := r.ReadBytes('\n')
		if err == io.EOF {
			break // a torn last line, or none
		}
		if err != nil {
			return nil, damaged, err
		}
		var l line
		// A line ending in CRLF (a file that passed through an editor or
		// a copy on Windows) is the same line.
		if !decodeLine(bytes.TrimSuffix(bytes.TrimSuffix(raw, []byte("\n")), []byte("\r")), key, &l) {
			damaged++
			continue
		}
		for _, o := range l.Done {
			delete(byOrigin, o)
		}
		if l.Origin != "" {
			if _, seen := byOrigin[l.Origin]; !seen {
				order = append(order, l.Origin)
			}
			byOrigin[l.Origin] = l.Entry
		}
	}
	for _, o := range order {
		if e, ok := byOrigin[o]; ok {
			entries = append(entries, e)
		}
	}
	return entries, damaged, nil
}

// castagnoli is CRC-32C, the checksum of a line.
var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// encodeLine is a line as the file holds it: its checksum (8 hex digits)
// or, with a key, its signature ("s" and 64 hex digits), a space, its
// JSON and a newline.
func encodeLine(b []byte, key []byte, json []byte) []byte {
	if key != nil {
		b = append(append(b, 's'), signature(key, json)...)
		b = append(b, ' ')
	} else {
		b = fmt.Appendf(b, "%08x ", crc32.Checksum(json, castagnoli))
	}
	return append(append(b, json...), '\n')
}

// signature is a line's HMAC-SHA-256 under key, in hex.
func signature(key, json []byte) string {
	m := hmac.New(sha256.New, key)
	m.Write(json)
	return hex.EncodeToString(m.Sum(nil))
}

// decodeLine reads a line of the file (without its newline) into l, and
// reports whether it is whole: its checksum (or, with a key, its
// signature) holds and its JSON decodes. Without a key, a line of a
// journal written before lines had checksums (it starts with "{") is
// read as it is.
func decodeLine(raw []byte, key []byte, l *line) bool {
	var body []byte
	switch {
	case key != nil:
		if len(raw) < 66 || raw[0] != 's' || raw[65] != ' ' || !hmac.Equal(raw[1:65], []byte(signature(key, raw[66:]))) {
			return false
		}
		body = raw[66:]
	case len(raw) > 9 && raw[8] == ' ':
		sum, err := strconv.ParseUint(string(raw[:8]), 16, 32)
		if err != nil || uint32(sum) != crc32.Checksum(raw[9:], castagnoli) {
			return false
		}
		body = raw[9:]
	case len(raw) > 0 && raw[0] == '{':
		body = raw
	default:
		return false
	}
	return json.Unmarshal(body, l) == nil
}

// write puts an entry taken over into the file (Open's, before anyone
// appends).
func (j *Journal) write(e Entry) error {
	b, err := json.Marshal(line{Entry: e})
	if err != nil {
		return err
	}
	if err := j.put(encodeLine(nil, j.key, b)); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	j.undone[e.Origin] = true
	return nil
}

// put writes b at the end of the file. A write that fails midway (a full
// disk) is cut off again, so that the next line does not run into its
// remains; the journal is then broken until a probe succeeds (Ready).
func (j *Journal) put(b []byte) error {
	n, err := j.f.Write(b)
	if err == nil {
		j.size += int64(n)
		return nil
	}
	if n > 0 {
		if j.f.Truncate(j.size) == nil {
			j.f.Seek(j.size, io.SeekStart)
		} else {
			j.size += int64(n) // the remains stay: the line is damaged, and skipped when read
		}
	}
	j.broken = err
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
	b = append(b, raw...)
	b = append(b, '}')
	if j.size+int64(len(b))+68 >= MaxBytes {
		j.broken = ErrFull
		return "", ErrFull
	}
	if err := j.put(encodeLine(make([]byte, 0, len(b)+68), j.key, b)); err != nil {
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
			err := syncFile(f)
			j.mu.Lock()
			j.syncing = false
			if err == nil {
				j.durable = max(j.durable, upto)
			} else {
				j.broken = err
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
	if err := j.put(encodeLine(nil, j.key, b)); err != nil {
		j.logger.Warn("journal: marking entries landed failed; they will be landed again", "error", err)
	}
}

// probeEvery is how often a broken journal is tried again (Ready).
const probeEvery = 250 * time.Millisecond

// Ready reports whether the journal can take what an answer promises:
// nil, or why the file last failed to take a write or a flush (a full
// disk, a read-only folder, ErrFull). A broken journal is tried again,
// at most every probeEvery, with a line that marks nothing, flushed: once
// that succeeds, it is ready again.
func (j *Journal) Ready() error {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.f == nil {
		return errors.New("journal: closed")
	}
	if j.broken == nil || time.Since(j.probed) < probeEvery {
		return j.broken
	}
	j.probed = time.Now()
	if j.size+64 >= MaxBytes {
		j.broken = ErrFull
		return j.broken
	}
	if err := j.put(encodeLine(nil, j.key, []byte(`{}`))); err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	if err := syncFile(j.f); err != nil {
		j.broken = err
		return fmt.Errorf("journal: %w", err)
	}
	j.broken = nil
	return nil
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
	err := syncFile(j.f)
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

// syncFile flushes a journal file to disk; a test counts the flushes
// through it (fsync's effect cannot be seen short of pulling the power).
var syncFile = (*os.File).Sync
