package learn

import (
	"context"
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
