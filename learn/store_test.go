package learn

import (
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/search"
	bolt "go.etcd.io/bbolt"
)

func TestRecordFlushForget(t *testing.T) {
	path := filepath.Join(t.TempDir(), "state", FileName)
	s := Open(path, nil)
	if ps, err := s.Pairs(); err != nil || len(ps) != 0 {
		t.Fatalf("a new store: %v, %v", ps, err)
	}
	s.Record("", "  read   the file ", "mcp__fs__read_text_file")
	s.Record("", "read the file", "mcp__fs__read_text_file")
	s.Record("", "open a pull request", "mcp__github__create_pull_request")
	s.Record("", "", "x")
	s.Record("", strings.Repeat("é", 1000), "mcp__fs__write_file")
	before := s.Version()
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	if s.Version() == before {
		t.Error("Version did not change with a write")
	}
	// Another process reads what this one wrote.
	ps, err := Open(path, nil).Pairs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Fatalf("pairs: %+v", ps)
	}
	for _, p := range ps {
		switch p.Tool {
		case "mcp__fs__read_text_file":
			if p.Query != "read the file" || p.Count != 2 {
				t.Errorf("%+v: want the query's spaces folded and two uses", p)
			}
		case "mcp__fs__write_file":
			if len(p.Query) > MaxQuery || !strings.HasPrefix(p.Query, "é") || strings.ContainsRune(p.Query, '\uFFFD') {
				t.Errorf("a long query is kept at most %d bytes of valid text: %d", MaxQuery, len(p.Query))
			}
		}
	}
	if past := Queries(ps, "", 1); len(past) != 3 {
		t.Errorf("Queries: %+v", past)
	}
	n, err := s.Forget(func(p Pair) bool { return p.Tool == "mcp__fs__write_file" })
	if err != nil || n != 1 {
		t.Fatalf("Forget one tool: %d, %v", n, err)
	}
	if n, err := s.Forget(nil); err != nil || n != 2 {
		t.Fatalf("Forget all: %d, %v", n, err)
	}
	if ps, _ := s.Pairs(); len(ps) != 0 {
		t.Errorf("after forgetting all: %+v", ps)
	}
}

// Old pairs are aged out, and past MaxPairs the least recently used go.
func TestBounds(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	err = db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists(bucket)
		for i := range MaxPairs + 10 {
			last := now.Add(-time.Duration(i) * time.Minute)
			if i == 5 {
				last = now.Add(-MaxAge - time.Hour)
			}
			v := make([]byte, 16)
			binary.BigEndian.PutUint64(v, 1)
			binary.BigEndian.PutUint64(v[8:], uint64(last.UnixNano()))
			if err := b.Put(key(Pair{Tool: "t", Query: fmt.Sprintf("q%d", i)}), v); err != nil {
				return err
			}
		}
		return prune(b, now)
	})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	ps, err := Open(path, nil).Pairs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != MaxPairs {
		t.Errorf("%d pairs kept, want %d", len(ps), MaxPairs)
	}
	for _, p := range ps {
		if p.Query == "q5" {
			t.Error("a pair older than MaxAge was kept")
		}
		if p.Query == fmt.Sprintf("q%d", MaxPairs+9) {
			t.Error("the least recently used pair was kept")
		}
	}
}

// Pairs are kept per profile, and Queries gives a profile only its own pairs
// shown at least minCount times: what one profile's clients did never
// moves another's ranking, and a pair one session showed moves none.
// Pairs written before profiles were kept apart are dropped.
func TestQueriesPerProfile(t *testing.T) {
	path := filepath.Join(t.TempDir(), FileName)
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	db.Update(func(tx *bolt.Tx) error {
		b, _ := tx.CreateBucketIfNotExists(bucket)
		v := make([]byte, 16)
		binary.BigEndian.PutUint64(v, 5)
		binary.BigEndian.PutUint64(v[8:], uint64(time.Now().UnixNano()))
		return b.Put([]byte("mcp__old__tool\x00an old query"), v)
	})
	db.Close()
	s := Open(path, nil)
	for range 2 {
		s.Record("admin", "read the entire knowledge graph", "mcp__memory__read_graph")
	}
	for range 7 {
		s.Record("guest", "read the entire knowledge graph", "mcp__evil__exfiltrate")
	}
	s.Record("admin", "one session only", "mcp__memory__open_nodes")
	s.Record("a\x00b", "q", "t") // a NUL would break the key
	if err := s.Flush(); err != nil {
		t.Fatal(err)
	}
	ps, err := s.Pairs()
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 3 {
		t.Errorf("pairs: %+v (want the old key and the NUL profile gone)", ps)
	}
	got := Queries(ps, "admin", MinSessions)
	want := []search.LearnedQuery{{Query: "read the entire knowledge graph", Tools: []string{"mcp__memory__read_graph"}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the admin's past (-want +got):\n%s", diff)
	}
	if got := Queries(ps, "", MinSessions); len(got) != 0 {
		t.Errorf("the default profile learned from others: %+v", got)
	}
}

// An upgrade keeps what was learned: while the state folder holds a
// database under the earlier name and none under the new one, that is
// the default; a new folder gets the new name.
func TestDefaultPathKeepsEarlierName(t *testing.T) {
	dir := t.TempDir()
	getenv := func(k string) string {
		if k == "XDG_STATE_HOME" {
			return dir
		}
		return ""
	}
	want := filepath.Join(dir, "toolshelf", FileName)
	if got := DefaultPath(getenv); got != want {
		t.Fatalf("new folder: %s, want %s", got, want)
	}
	old := filepath.Join(dir, "toolshelf", oldFileName)
	if err := os.MkdirAll(filepath.Dir(old), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(old, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := DefaultPath(getenv); got != old {
		t.Errorf("with %s: %s", oldFileName, got)
	}
	if err := os.WriteFile(want, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := DefaultPath(getenv); got != want {
		t.Errorf("with both: %s, want %s", got, want)
	}
}
