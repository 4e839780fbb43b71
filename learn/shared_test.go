package learn

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/store"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// Replicas share what was learned: three open one PostgreSQL store at
// once (the schema is migrated once); a pair one records is seen by the
// others, and their caches' Version changes, within FlushEvery of its
// write; Forget through one forgets it for all.
func TestSharedAcrossReplicas(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	dbs := make([]*store.DB, 3)
	var wg sync.WaitGroup
	errs := make([]error, 3)
	for i := range dbs {
		wg.Go(func() { dbs[i], errs[i] = store.Open(ctx, url) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
		defer dbs[i].Close()
	}
	var migrated int
	if err := testenv.SQL(t, url).QueryRow(ctx, "SELECT count(*) FROM toolshelf_migrations").Scan(&migrated); err != nil || migrated != store.Migrations() {
		t.Fatalf("migrations recorded: %d (%v)", migrated, err)
	}

	a, b := OpenShared(dbs[0], nil, nil), OpenShared(dbs[1], nil, nil)
	var running sync.WaitGroup
	for i, st := range []*Store{a, b} {
		running.Go(func() { st.Run(ctx) })
		running.Go(func() { dbs[i].Follow(ctx, nil) })
	}
	defer running.Wait()
	defer cancel()
	before := b.Version()
	a.Record("ops", "open an issue in the tracker", "mcp__tracker__create_issue")
	a.Record("ops", "open an issue in the tracker", "mcp__tracker__create_issue")
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 30*time.Second, "the other replica to hear of the pair", func() bool { return b.Version() != before })
	pairs, err := b.Pairs()
	if err != nil || len(pairs) != 1 || pairs[0].Count != 2 || pairs[0].Profile != "ops" || pairs[0].Last.IsZero() {
		t.Fatalf("the other replica reads %+v (%v)", pairs, err)
	}
	if n, err := b.Forget(func(p Pair) bool { return p.Tool == "mcp__tracker__create_issue" }); err != nil || n != 1 {
		t.Fatalf("forget: %d %v", n, err)
	}
	if pairs, _ := a.Pairs(); len(pairs) != 0 {
		t.Errorf("after forget on one replica, the other reads %+v", pairs)
	}
	if want := store.Redact(url); a.Path() != want {
		t.Errorf("Path %q, want %q", a.Path(), want)
	}
}

// A fleet's learned pairs are signed: a pair a store writer without the
// key adds (to steer search toward a tool of its choice), or one whose
// signature belongs to another pair, is refused on read; the replicas'
// own pairs are read.
func TestSignedPairs(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	mac := func(parts ...string) string {
		m := hmac.New(sha256.New, []byte("fleet key 0123456789abcdef012345"))
		for _, p := range parts {
			m.Write([]byte(p + "\x00"))
		}
		return hex.EncodeToString(m.Sum(nil))
	}
	a := OpenShared(db, nil, nil)
	a.SignPairs(mac)
	a.Record("ops", "open an issue", "mcp__tracker__create_issue")
	if err := a.Flush(); err != nil {
		t.Fatal(err)
	}
	sql := testenv.SQL(t, url)
	for _, stmt := range []string{
		`INSERT INTO learned_pairs (profile, tool, query, count, last) VALUES ('ops', 'mcp__evil__exfiltrate', 'open an issue', 1000, now())`,
		`INSERT INTO learned_pairs (profile, tool, query, count, last, sig) SELECT 'ops', 'mcp__evil__steal', 'open an issue', 1000, now(), sig FROM learned_pairs WHERE tool = 'mcp__tracker__create_issue'`,
	} {
		if _, err := sql.Exec(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	b := OpenShared(db, nil, nil)
	b.SignPairs(mac)
	pairs, err := b.Pairs()
	if err != nil {
		t.Fatal(err)
	}
	if len(pairs) != 1 || pairs[0].Tool != "mcp__tracker__create_issue" {
		t.Errorf("pairs read: %+v, want the replica's own only", pairs)
	}
	if all, _ := OpenShared(db, nil, nil).Pairs(); len(all) != 3 {
		t.Errorf("unsigned, the store reads %d pairs", len(all))
	}
}
