package ledger

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/toolshelf/toolshelf/internal/folders"
)

// FileName is the ledger's file in the state folder.
const FileName = "ledger.jsonl"

// keepInMemory is how far back a file book keeps entries in memory for
// budgets: the longest window (a calendar month) and a day.
const keepInMemory = 32 * 24 * time.Hour

// File is a book in one file of JSON lines, which several processes on
// one machine (a gateway and a proxy) may share: each writes a line with
// one append, and admission holds the file's lock (flock) while it reads
// what the others wrote and decides. A settlement is a later line with
// the same id. A line cut short by a killed process is skipped; the next
// writer starts a new line after it. Lines outlive a killed process at
// once (the page cache), and a power cut loses what the disk had not
// flushed.
type File struct {
	path string

	mu      sync.Mutex
	f       *os.File
	off     int64               // how far the file has been read
	partial bool                // the file ends inside a line
	entries map[string]*Entry   // recent entries by id
	rolls   map[string]*rolling // budgets' windows, by Scope.Key
	pruned  time.Time
}

// OpenFile opens (or creates) the ledger file at path.
func OpenFile(path string) (*File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return &File{path: path, f: f, entries: map[string]*Entry{}, rolls: map[string]*rolling{}}, nil
}

// DefaultPath is toolshelf/ledger.jsonl in the user's state folder
// ($XDG_STATE_HOME, else ~/.local/state; package folders), or "" when
// getenv (os.Getenv when nil) places none.
func DefaultPath(getenv func(string) string) string {
	dir := folders.State(getenv)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, FileName)
}

// Where is the file's path.
func (b *File) Where() string { return b.path }

// Close closes the file.
func (b *File) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.f == nil {
		return nil
	}
	err := b.f.Close()
	b.f = nil
	return err
}

// locked runs fn with the process's mutex and the file's lock held, once
// what other processes wrote has been read.
func (b *File) locked(fn func() error) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.f == nil {
		return ErrClosed
	}
	if err := lockFile(b.f); err != nil {
		return fmt.Errorf("ledger %s: lock: %w", b.path, err)
	}
	defer unlockFile(b.f)
	if err := b.catchUp(); err != nil {
		return err
	}
	return fn()
}

// catchUp reads the lines written since the last read.
func (b *File) catchUp() error {
	info, err := b.f.Stat()
	if err != nil {
		return fmt.Errorf("ledger %s: %w", b.path, err)
	}
	if info.Size() < b.off {
		// Cut short by hand: read it again from the start.
		b.off, b.entries, b.rolls = 0, map[string]*Entry{}, map[string]*rolling{}
	}
	if info.Size() == b.off {
		return nil
	}
	r := io.NewSectionReader(b.f, b.off, info.Size()-b.off)
	n, partial, err := eachLine(r, b.keep)
	if err != nil {
		return fmt.Errorf("ledger %s: %w", b.path, err)
	}
	b.off += n
	b.partial = partial
	if now := time.Now(); now.Sub(b.pruned) > time.Hour {
		// Past every window: the running sums let go of them first.
		cutoff := now.Add(-keepInMemory)
		for _, r := range b.rolls {
			if r.scope.Since.Before(cutoff) {
				r.advance(cutoff, b.entries)
			}
		}
		for id, e := range b.entries {
			if e.Time.Before(cutoff) {
				delete(b.entries, id)
			}
		}
		b.pruned = now
	}
	return nil
}

// keep takes e (a new entry, or a settlement of one) into memory and the
// running sums.
func (b *File) keep(e *Entry) {
	old := b.entries[e.ID]
	if old != nil && e.Held && !old.Held {
		return // a held line after its settlement (two writers' order)
	}
	b.entries[e.ID] = e
	for _, r := range b.rolls {
		r.change(old, e)
	}
}

// skew is how far an admission's window start may lag the running
// window's before the window is summed again.
const skew = time.Minute

// maxLine bounds a line: an entry is a few hundred bytes.
const maxLine = 64 << 10

// eachLine calls fn with each whole line's entry (damaged lines skipped)
// and returns how many bytes it read, and whether the data ends inside a
// line (a writer killed mid-line, or one still writing).
func eachLine(r io.Reader, fn func(*Entry)) (n int64, partial bool, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, err := br.ReadSlice('\n')
		n += int64(len(line))
		switch {
		case errors.Is(err, bufio.ErrBufferFull):
			// A line longer than any entry: damage. Skip to its end.
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				n += int64(len(line))
			}
			if err == io.EOF {
				return n, true, nil
			}
			continue
		case err == io.EOF:
			return n, len(line) > 0, nil
		case err != nil:
			return n, false, err
		}
		if len(line) > maxLine {
			continue
		}
		var e Entry
		if json.Unmarshal(bytes.TrimSpace(line), &e) == nil && e.ID != "" {
			fn(&e)
		}
	}
}

// write appends e as one line.
func (b *File) write(e *Entry) error {
	line, err := json.Marshal(e)
	if err != nil {
		return fmt.Errorf("ledger: %w", err)
	}
	if b.partial {
		// The line a killed writer left unfinished ends here.
		line = append([]byte{'\n'}, line...)
	}
	line = append(line, '\n')
	if _, err := b.f.Write(line); err != nil {
		return fmt.Errorf("ledger %s: %w", b.path, err)
	}
	b.off += int64(len(line))
	b.partial = false
	c := *e
	b.keep(&c)
	return nil
}

// Admit implements Book.
func (b *File) Admit(ctx context.Context, e *Entry, scopes []Scope, decide func([]Sums) error) error {
	return b.locked(func() error {
		sums := make([]Sums, len(scopes))
		for i, s := range scopes {
			r := b.rolls[s.Key]
			switch {
			case r == nil || s.Key == "" || s.Since.Before(r.scope.Since.Add(-skew)) || r.scope.Kind != s.Kind || r.scope.Name != s.Name:
				// New, or a clock set back: summed again. Concurrent
				// admissions reach the lock out of the order of their
				// clocks: a start up to skew earlier than the window's
				// keeps the window (what it leaves out is the window's
				// oldest instant).
				r = newRolling(s, b.entries)
				if s.Key != "" {
					b.rolls[s.Key] = r
				}
			default:
				r.advance(s.Since, b.entries)
			}
			sums[i] = r.current(b.entries)
		}
		if err := decide(sums); err != nil {
			return err
		}
		return b.write(e)
	})
}

// Settle implements Book.
func (b *File) Settle(ctx context.Context, e *Entry) error {
	return b.locked(func() error { return b.write(e) })
}

// Entries implements Book: it reads the whole file.
func (b *File) Entries(ctx context.Context, since time.Time) ([]Entry, error) {
	f, err := os.Open(b.path)
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	return readEntries(f, since)
}

// ReadFile returns the entries of the ledger file at path from since on
// (none when there is no file).
func ReadFile(path string, since time.Time) ([]Entry, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	defer f.Close()
	return readEntries(f, since)
}

func readEntries(r io.Reader, since time.Time) ([]Entry, error) {
	byID := map[string]*Entry{}
	if _, _, err := eachLine(r, func(e *Entry) {
		if old, ok := byID[e.ID]; ok && e.Held && !old.Held {
			return
		}
		byID[e.ID] = e
	}); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	out := make([]Entry, 0, len(byID))
	for _, e := range byID {
		if !e.Time.Before(since) {
			out = append(out, *e)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Time.Before(out[j].Time) })
	return out, nil
}
