// Package learn keeps what toolshelf learns from use: which tools were
// called after which searches, so that a later search in similar words
// can rank them higher (search.Learned).
//
// The pairs live in an embedded database (bbolt) in the user's state
// folder. Only the query and the tool's name are kept, never argument
// values; the store is bounded (MaxPairs) and forgets pairs unused for
// MaxAge. The database is opened only to read or to write a batch, so that
// the CLI (toolshelf learned show) can read it while a gateway runs.
package learn

import (
	"bytes"
	"cmp"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/toolshelf/toolshelf/internal/folders"
	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/search"
	bolt "go.etcd.io/bbolt"
	bolterrors "go.etcd.io/bbolt/errors"
)

// Bounds of the store.
const (
	// MaxPairs bounds the pairs kept; past it, the least recently used
	// go first.
	MaxPairs = 20_000
	// MaxAge is how long a pair unused is kept.
	MaxAge = 180 * 24 * time.Hour
	// MaxQuery bounds the bytes of a query kept: a model can write a
	// query of any length.
	MaxQuery = 500
	// MinSessions is how many sessions must have shown a pair before it
	// moves a shared gateway's ranking: one client alone, whatever it
	// repeats, cannot steer what the others find.
	MinSessions = 2
)

// FileName is the database's name in the state folder; oldFileName is
// its earlier name, used while a database of that name exists and none
// of the new one does, so an upgrade keeps what was learned.
const (
	FileName    = "learned.db"
	oldFileName = "usage.db"
)

// DefaultPath is toolshelf/learned.db in the user's state folder
// ($XDG_STATE_HOME, else ~/.local/state; package folders), or "" when
// getenv (os.Getenv when nil) places none.
func DefaultPath(getenv func(string) string) string {
	dir := folders.State(getenv)
	if dir == "" {
		return ""
	}
	path := filepath.Join(dir, FileName)
	old := filepath.Join(dir, oldFileName)
	if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Stat(old); err == nil {
			return old
		}
	}
	return path
}

// Pair is a search followed by a call of one of the tools it found, in
// one profile's sessions. Count is how many times it was recorded: the
// gateway records a pair once per session, so there it counts sessions.
type Pair struct {
	Profile string    `json:"profile,omitempty"` // "" for the default profile
	Query   string    `json:"query"`
	Tool    string    `json:"tool"` // qualified name
	Count   int       `json:"count"`
	Last    time.Time `json:"last"`

	// origin is the pair's place in the journal, until the store has it.
	origin string
}

var bucket = []byte("pairs")

// Store is the database of what was learned, at one path. Record queues pairs in memory;
// Flush (or Run, every FlushEvery) writes them. It is safe for concurrent
// use.
type Store struct {
	b      backend
	logger *slog.Logger

	// journal holds each pair on disk from Record until the store has
	// it (a shared store's; see OpenShared).
	journal *journal.Journal

	mu      sync.Mutex
	pending []Pair
	gen     int // counts writes, for caches of Pairs
	dropped int // pairs dropped while the store was away
}

// backend is where the pairs are kept: a bbolt file of one machine
// (boltFile), or the store that replicas share (shared).
type backend interface {
	// write adds a batch of pairs (counts add up) and ages out old ones
	// and those past MaxPairs.
	write(ctx context.Context, batch []Pair) error
	read(ctx context.Context) ([]Pair, error)
	forget(ctx context.Context, match func(Pair) bool) (int, error)
	// stamp changes when another process wrote.
	stamp() string
	// where names it in messages: a path, or a URL without password.
	where() string
}

// boltFile keeps the pairs in a bbolt file.
type boltFile struct {
	path string
	// mu serialises opening the database: bbolt's file lock is per open
	// file, so a second open in this process would wait for the first.
	mu sync.Mutex
}

// FlushEvery is how often Run writes queued pairs.
const FlushEvery = 2 * time.Second

// Open returns the store at path; the database is created on the first
// write. logger gets write failures (nil is silent).
func Open(path string, logger *slog.Logger) *Store {
	return newStore(&boltFile{path: path}, logger)
}

func newStore(b backend, logger *slog.Logger) *Store {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &Store{b: b, logger: logger}
}

// Path returns where the pairs are kept: the database's path, or the
// shared store's URL without its password; "" when there is nowhere.
func (s *Store) Path() string { return s.b.where() }

// Record queues a pair: the query of a search in a profile's session
// ("" for the default profile), and a tool it found that was then called.
func (s *Store) Record(profile, query, tool string) {
	s.record(profile, CutQuery(query), tool)
}

// together marks the query of a pair that says two tools were used
// together: "\x01" and the tool used first. No search's query has it
// (CutQuery drops it).
const together = "\x01"

// RecordTogether queues the pair of two tools a session called one after
// the other, first before, then after: before may have produced what
// after needed, and is a companion of after (see Together). The pair's
// tool is before; its query the mark and after.
func (s *Store) RecordTogether(profile, before, after string) {
	if after == "" || before == after || len(after) > MaxQuery || strings.ContainsAny(after, "\x00\x01") {
		return
	}
	s.record(profile, together+after, before)
}

func (s *Store) record(profile, query, tool string) {
	if query == "" || tool == "" || strings.ContainsRune(profile+tool, 0) {
		return
	}
	p := Pair{Profile: profile, Query: query, Tool: tool, Count: 1, Last: time.Now().UTC()}
	if s.journal != nil {
		// In the journal before the answer the pair was learned from
		// leaves (its Sync puts it on disk).
		if origin, err := s.journal.Add("learn", p); err == nil {
			p.origin = origin
		} else {
			s.logger.Warn("a learned pair is not in the journal; it waits in memory only", "error", err)
		}
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.pending) < MaxPairs {
		s.pending = append(s.pending, p)
		return
	}
	if s.dropped++; s.dropped&(s.dropped-1) == 0 { // log at 1, 2, 4, 8, ...
		s.logger.Warn("what was learned is dropped: too much waits to be saved", "where", s.b.where(), "dropped", s.dropped)
	}
}

// CutQuery is a query as the store keeps it: spaces collapsed, NUL bytes
// (the key's separator) and \x01 (the mark of a pair used together)
// dropped, at most MaxQuery bytes.
func CutQuery(query string) string {
	if len(query) > 4*MaxQuery {
		query = query[:4*MaxQuery] // Fields need not see the rest
	}
	query = strings.Join(strings.Fields(strings.NewReplacer("\x00", "", "\x01", "").Replace(query)), " ")
	if len(query) > MaxQuery {
		query = query[:MaxQuery]
	}
	return strings.ToValidUTF8(query, "")
}

// Run writes queued pairs every FlushEvery until ctx is done, then once
// more.
func (s *Store) Run(ctx context.Context) {
	if s.journal != nil {
		// What replicas gone (or this one's last run) left unlanded.
		var left []Pair
		if journal.Take(s.journal, "learn", func(p Pair, origin string) {
			p.origin = origin
			left = append(left, p)
		}) > 0 {
			s.logger.Info("landing the learned pairs a journal left", "pairs", len(left))
			s.requeue(left)
		}
	}
	t := time.NewTicker(FlushEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if err := s.Flush(); err != nil {
				s.logger.Warn("cannot save what was learned from use", "where", s.b.where(), "error", err)
			}
			return
		case <-t.C:
			if err := s.Flush(); err != nil {
				s.logger.Warn("cannot save what was learned from use", "where", s.b.where(), "error", err)
			}
		}
	}
}

// key is a pair's key: the profile, the tool, then the query. Keys
// written before profiles were kept apart (tool and query only) do not
// decode, and the next write deletes them: they may have come from any
// profile, one session each.
func key(p Pair) []byte { return []byte(p.Profile + "\x00" + p.Tool + "\x00" + p.Query) }

func encode(p Pair) []byte {
	b := make([]byte, 16)
	binary.BigEndian.PutUint64(b, uint64(p.Count))
	binary.BigEndian.PutUint64(b[8:], uint64(p.Last.UnixNano()))
	return b
}

func decode(k, v []byte) (Pair, bool) {
	parts := bytes.SplitN(k, []byte{0}, 3)
	if len(parts) != 3 || len(v) != 16 {
		return Pair{}, false
	}
	return Pair{Profile: string(parts[0]), Tool: string(parts[1]), Query: string(parts[2]),
		Count: int(binary.BigEndian.Uint64(v)), Last: time.Unix(0, int64(binary.BigEndian.Uint64(v[8:]))).UTC()}, true
}

// open opens the database, waiting a little for another toolshelf that
// has it open.
func (f *boltFile) open(readOnly bool) (*bolt.DB, error) {
	f.mu.Lock()
	db, err := f.openLocked(readOnly)
	if err != nil {
		f.mu.Unlock()
	}
	return db, err
}

// closeDB closes a database open returned.
func (f *boltFile) closeDB(db *bolt.DB) {
	db.Close()
	f.mu.Unlock()
}

func (f *boltFile) openLocked(readOnly bool) (*bolt.DB, error) {
	if !readOnly {
		if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
			return nil, err
		}
	}
	db, err := bolt.Open(f.path, 0o600, &bolt.Options{Timeout: 5 * time.Second, ReadOnly: readOnly})
	if errors.Is(err, bolterrors.ErrTimeout) {
		return nil, fmt.Errorf("%s is in use by another toolshelf; try again", f.path)
	}
	return db, err
}

func (f *boltFile) where() string { return f.path }

// stamp is the file's size and time: another process's write changes it.
func (f *boltFile) stamp() string {
	if fi, err := os.Stat(f.path); err == nil {
		return fmt.Sprintf("%d.%d", fi.Size(), fi.ModTime().UnixNano())
	}
	return ""
}

// Flush writes the queued pairs, and ages out old ones and those past
// MaxPairs.
func (s *Store) Flush() error {
	s.mu.Lock()
	batch := s.pending
	s.pending = nil
	s.mu.Unlock()
	if len(batch) == 0 {
		return nil
	}
	if err := s.b.write(context.Background(), batch); err != nil {
		s.requeue(batch)
		return err
	}
	if s.journal != nil {
		var landed []string
		for _, p := range batch {
			if p.origin != "" {
				landed = append(landed, p.origin)
			}
		}
		s.journal.Done(landed...)
	}
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
	return nil
}

func (f *boltFile) write(_ context.Context, batch []Pair) error {
	db, err := f.open(false)
	if err != nil {
		return err
	}
	defer f.closeDB(db)
	return db.Update(func(tx *bolt.Tx) error {
		b, err := tx.CreateBucketIfNotExists(bucket)
		if err != nil {
			return err
		}
		for _, p := range batch {
			k := key(p)
			if old, ok := decode(k, b.Get(k)); ok {
				p.Count += old.Count
			}
			if err := b.Put(k, encode(p)); err != nil {
				return err
			}
		}
		return prune(b, time.Now())
	})
}

// requeue puts back a batch that could not be written, within bounds.
func (s *Store) requeue(batch []Pair) {
	s.mu.Lock()
	defer s.mu.Unlock()
	all := append(batch, s.pending...)
	if over := len(all) - MaxPairs; over > 0 {
		s.dropped += over
		s.logger.Warn("what was learned is dropped: too much waits to be saved", "where", s.b.where(), "dropped", s.dropped)
		all = all[:MaxPairs]
	}
	s.pending = all
}

// prune deletes pairs older than MaxAge, then the least recently used
// past MaxPairs.
func prune(b *bolt.Bucket, now time.Time) error {
	var all []Pair
	var old [][]byte
	err := b.ForEach(func(k, v []byte) error {
		p, ok := decode(k, v)
		if !ok || now.Sub(p.Last) > MaxAge {
			old = append(old, slices.Clone(k))
			return nil
		}
		all = append(all, p)
		return nil
	})
	if err != nil {
		return err
	}
	if len(all) > MaxPairs {
		slices.SortFunc(all, func(a, b Pair) int { return a.Last.Compare(b.Last) })
		for _, p := range all[:len(all)-MaxPairs] {
			old = append(old, key(p))
		}
	}
	for _, k := range old {
		if err := b.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// Pairs returns what was learned, most recently used first, with the
// pairs still queued. A store never written is empty.
func (s *Store) Pairs() ([]Pair, error) {
	out, err := s.b.read(context.Background())
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	out = append(out, s.pending...)
	s.mu.Unlock()
	slices.SortStableFunc(out, func(a, b Pair) int {
		if c := b.Last.Compare(a.Last); c != 0 {
			return c
		}
		return cmp.Compare(a.Tool, b.Tool)
	})
	return out, nil
}

func (f *boltFile) read(context.Context) ([]Pair, error) {
	var out []Pair
	if _, err := os.Stat(f.path); err == nil {
		db, err := f.open(true)
		if err != nil {
			return nil, err
		}
		defer f.closeDB(db)
		err = db.View(func(tx *bolt.Tx) error {
			b := tx.Bucket(bucket)
			if b == nil {
				return nil
			}
			return b.ForEach(func(k, v []byte) error {
				if p, ok := decode(k, v); ok {
					out = append(out, p)
				}
				return nil
			})
		})
		if err != nil {
			return nil, err
		}
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	return out, nil
}

// Forget deletes the pairs match returns true for (all of them when match
// is nil), queued ones included, and returns how many it deleted.
func (s *Store) Forget(match func(Pair) bool) (int, error) {
	n := 0
	s.mu.Lock()
	kept := s.pending[:0]
	for _, p := range s.pending {
		if match == nil || match(p) {
			n++
			continue
		}
		kept = append(kept, p)
	}
	s.pending = kept
	s.mu.Unlock()
	m, err := s.b.forget(context.Background(), match)
	s.mu.Lock()
	s.gen++
	s.mu.Unlock()
	return n + m, err
}

func (f *boltFile) forget(_ context.Context, match func(Pair) bool) (int, error) {
	if _, err := os.Stat(f.path); errors.Is(err, os.ErrNotExist) {
		return 0, nil
	}
	db, err := f.open(false)
	if err != nil {
		return 0, err
	}
	defer f.closeDB(db)
	n := 0
	err = db.Update(func(tx *bolt.Tx) error {
		b := tx.Bucket(bucket)
		if b == nil {
			return nil
		}
		var del [][]byte
		err := b.ForEach(func(k, v []byte) error {
			if p, ok := decode(k, v); !ok || match == nil || match(p) {
				del = append(del, slices.Clone(k))
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, k := range del {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n += len(del)
		return nil
	})
	return n, err
}

// Version changes when the store is written, by this process or another:
// a cache of Pairs is good while it is the same. Pairs only queued do not
// change it: a search ranks by them once they are written (FlushEvery),
// rather than reading the store again after every call.
func (s *Store) Version() string {
	s.mu.Lock()
	gen := s.gen
	s.mu.Unlock()
	return fmt.Sprintf("%d/%s", gen, s.b.stamp())
}

// Queries groups one profile's pairs by query, for search.NewLearned: only
// pairs recorded at least minCount times (MinSessions for a gateway that
// several clients share), so that what one profile's clients do never
// moves another's ranking and one session alone moves none.
func Queries(pairs []Pair, profile string, minCount int) []search.LearnedQuery {
	byQuery := map[string]int{}
	var out []search.LearnedQuery
	for _, p := range pairs {
		if p.Profile != profile || p.Count < minCount || strings.HasPrefix(p.Query, together) {
			continue
		}
		i, ok := byQuery[p.Query]
		if !ok {
			i = len(out)
			byQuery[p.Query] = i
			out = append(out, search.LearnedQuery{Query: p.Query})
		}
		if !slices.Contains(out[i].Tools, p.Tool) {
			out[i].Tools = append(out[i].Tools, p.Tool)
		}
	}
	return out
}

// Before returns the tool a pair says its tool was called before, when
// it is a pair of tools used together (RecordTogether).
func (p Pair) Before() (string, bool) { return strings.CutPrefix(p.Query, together) }

// MaxTogether bounds the companions learned of one tool.
const MaxTogether = 2

// Together returns, for each tool of one profile, the tools its sessions
// called just before it: only those at least minCount sessions showed,
// the most shown first, at most MaxTogether of each, so that one client
// cannot make a tool's companions, and none can make many.
func Together(pairs []Pair, profile string, minCount int) map[string][]string {
	type before struct {
		tool  string
		count int
	}
	by := map[string][]before{}
	for _, p := range pairs {
		after, ok := strings.CutPrefix(p.Query, together)
		if !ok || p.Profile != profile || p.Count < minCount {
			continue
		}
		by[after] = append(by[after], before{p.Tool, p.Count})
	}
	out := make(map[string][]string, len(by))
	for after, bs := range by {
		slices.SortFunc(bs, func(a, b before) int {
			if a.count != b.count {
				return b.count - a.count
			}
			return strings.Compare(a.tool, b.tool)
		})
		for _, b := range bs[:min(len(bs), MaxTogether)] {
			out[after] = append(out[after], b.tool)
		}
	}
	return out
}
