package audit

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/store"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// Records go to the shared store; while it cannot take them (here its
// table is renamed away) they wait in memory, and they land when it can
// again: nothing acknowledged is lost.
func TestSharedLogSurvivesAnOutage(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	l := OpenShared(db, nil)
	done := make(chan error, 1)
	go func() { done <- l.Run(ctx) }()
	count := func() int {
		recs, err := ReadShared(ctx, db, time.Time{})
		if err != nil {
			return -1
		}
		return len(recs)
	}
	l.Add(Record{Time: time.Now().UTC(), Kind: "call", Tool: "mcp__a__b", Outcome: "ok"})
	testenv.Eventually(t, 5*time.Second, "the first record to land", func() bool { return count() == 1 })

	if _, err := testenv.SQL(t, url).Exec(ctx, "ALTER TABLE audit_records RENAME TO audit_records_away"); err != nil {
		t.Fatal(err)
	}
	for range 5 {
		l.Add(Record{Time: time.Now().UTC(), Kind: "search", Tool: "search_tools", Outcome: "ok"})
	}
	testenv.Eventually(t, 5*time.Second, "the records to wait for the store", func() bool { return l.Waiting() == 5 })
	if _, err := testenv.SQL(t, url).Exec(ctx, "ALTER TABLE audit_records_away RENAME TO audit_records"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 15*time.Second, "the waiting records to land", func() bool { return count() == 6 })
	cancel()
	if err := <-done; err != nil {
		t.Errorf("Run: %v", err)
	}
}
