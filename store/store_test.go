package store

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// Replicas opening a new store together migrate it once, to this
// toolshelf's version; a store migrated by a newer toolshelf is refused.
func TestOpenMigratesOnce(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := Open(ctx, url, nil)
			if err == nil {
				db.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("opening together: %v", err)
		}
	}
	db, err := Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version, rows int
	if err := db.Pool().QueryRow(ctx, "SELECT max(version), count(*) FROM toolshelf_migrations").Scan(&version, &rows); err != nil {
		t.Fatal(err)
	}
	if version != Migrations() || rows != Migrations() {
		t.Errorf("schema version %d in %d rows, want %d", version, rows, Migrations())
	}
	if _, err := db.Pool().Exec(ctx, "INSERT INTO toolshelf_migrations (version) VALUES ($1)", Migrations()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, url, nil); err == nil || !strings.Contains(err.Error(), "newer than this toolshelf's") {
		t.Errorf("a store of a newer toolshelf: %v", err)
	}
}

// Listen hears each notification of its channel (and says when it starts
// listening), and returns when its context ends or the store closes.
func TestListen(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	db, err := Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	heard := make(chan string, 16)
	lctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); db.Listen(lctx, "toolshelf_test", func(p string) { heard <- p }) }()
	if p := <-heard; p != "" {
		t.Fatalf("the first call is the start of listening, with no payload: %q", p)
	}
	if _, err := db.Pool().Exec(ctx, "SELECT pg_notify('toolshelf_test', 'changed')"); err != nil {
		t.Fatal(err)
	}
	if p := <-heard; p != "changed" {
		t.Errorf("heard %q", p)
	}
	stop()
	<-done

	// Closing the store ends a listener too.
	done = make(chan struct{})
	go func() { defer close(done); db.Listen(ctx, "toolshelf_test", func(string) {}) }()
	db.Close()
	<-done
}

// The store's URL is shown without its password.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://toolshelf:s3cret@db:5432/toolshelf":   "postgres://toolshelf:xxxxx@db:5432/toolshelf",
		"postgresql://toolshelf@db/toolshelf?sslmode=off": "postgresql://toolshelf@db/toolshelf?sslmode=off",
	} {
		if got := Redact(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}
