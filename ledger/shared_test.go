package ledger

import (
	"context"
	"errors"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/store"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// Two replicas on one PostgreSQL store, 16 clients between them: a
// budget of N requests lets exactly N through; settled entries read back
// as settled, and a held one (its replica killed before it settled)
// stays counted once, at its most.
func TestSharedBudgetIsExactAcrossReplicas(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	var dbs [2]*store.DB
	for i := range dbs {
		db, err := store.Open(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		dbs[i] = db
	}
	budgets := []Budget{{For: "profile:ci", Requests: 40, Per: "hour"}, {For: "group:sre", ToolCalls: 5, Per: "day"}}
	replicas := [2]*Ledger{New(OnStore(dbs[0], nil, nil), &Options{Budgets: budgets}), New(OnStore(dbs[1], nil, nil), &Options{Budgets: budgets})}
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Go(func() {
			l := replicas[i%2]
			for range 5 {
				e := &Entry{Kind: KindRound, Who: Who{Profile: "ci"}, Model: "claude-sonnet-4-5", Tokens: Tokens{Input: 1000, Output: 1000}}
				_, err := l.Admit(ctx, e)
				var over *OverError
				switch {
				case errors.As(err, &over):
					refused.Add(1)
					continue
				case err != nil:
					t.Error(err)
					return
				}
				admitted.Add(1)
				e.Tokens = Tokens{Input: 100, Output: 10}
				if err := l.Settle(ctx, e); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	if admitted.Load() != 40 || refused.Load() != 40 {
		t.Fatalf("admitted %d and refused %d across two replicas; want exactly 40 and 40", admitted.Load(), refused.Load())
	}
	// A held entry, never settled: counted once, at its most.
	held := &Entry{Kind: KindCall, Who: Who{Person: "erin", Groups: []string{"sre"}}, Server: "github", Tool: "create_issue"}
	if _, err := replicas[0].Admit(ctx, held); err != nil {
		t.Fatal(err)
	}
	entries, err := replicas[1].Entries(ctx, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	rows, _ := Group(entries, "profile")
	var ci, sre Usage
	for _, r := range rows {
		switch r.Key {
		case "ci":
			ci = r
		case "-":
			sre = r
		}
	}
	if ci.Requests != 40 || ci.Input != 4000 || ci.Output != 400 || ci.Held != 0 {
		t.Errorf("ci's row %+v: want 40 requests, 4,000 input and 400 output tokens, none held", ci)
	}
	if sre.ToolCalls != 1 || sre.Held != 1 {
		t.Errorf("the held call's row %+v", sre)
	}
	// Tool calls of a group hold across replicas too.
	for i := range 4 {
		if _, err := replicas[i%2].Admit(ctx, &Entry{Kind: KindCall, Who: Who{Person: "f", Groups: []string{"sre"}}, Tool: "t"}); err != nil {
			t.Fatalf("call %d: %v", i+2, err)
		}
	}
	var over *OverError
	if _, err := replicas[1].Admit(ctx, &Entry{Kind: KindCall, Who: Who{Person: "g", Groups: []string{"ops", "sre"}}, Tool: "t"}); !errors.As(err, &over) {
		t.Fatalf("a sixth call of group sre: %v", err)
	}
}

// flakyStore is a store whose writes of what needs no decision fail
// while down is set: a store restarting.
type flakyStore struct {
	*store.DB
	down atomic.Bool
}

func (f *flakyStore) PutLedger(ctx context.Context, rows []store.LedgerRow) error {
	if f.down.Load() {
		return errors.New("the store is away")
	}
	return f.DB.PutLedger(ctx, rows)
}

// With a journal, what needs no decision costs no call while the store is
// away: it waits in the journal and lands once the store is back; a
// process that stops before landing leaves it for the next run; a held
// entry landed late never replaces its settlement.
func TestSharedBookWaitsInTheJournal(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	st := &flakyStore{DB: db}
	dir := t.TempDir()
	j, err := journal.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.down.Store(true)
	book := OnStore(st, j, nil)
	l := New(book, nil)
	e := &Entry{Kind: KindCall, Who: Who{Person: "p"}, Server: "s", Tool: "t"}
	if _, err := l.Admit(ctx, e); err != nil {
		t.Fatalf("a call while the store is away: %v", err)
	}
	e.Outcome = "ok"
	if err := l.Settle(ctx, e); err != nil {
		t.Fatal(err)
	}
	// Stopped before the store came back: the entries stay in the
	// journal.
	book.Close()
	if n := j.Undone(); n != 2 {
		t.Fatalf("%d entries wait in the journal, want 2", n)
	}
	j.Close()

	// The next run lands them.
	st.down.Store(false)
	j2, err := journal.Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer j2.Close()
	book2 := OnStore(st, j2, nil)
	defer book2.Close()
	testenv.Eventually(t, 30*time.Second, "the journal's entries to land", func() bool {
		es, err := book2.Entries(ctx, time.Time{})
		return err == nil && len(es) == 1 && !es[0].Held && es[0].Outcome == "ok"
	})
	// A held row landed after its settlement leaves the settlement.
	held := e
	held.Held, held.Outcome = true, ""
	row, _ := rowOf(held)
	if err := db.PutLedger(ctx, []store.LedgerRow{row}); err != nil {
		t.Fatal(err)
	}
	if es, _ := book2.Entries(ctx, time.Time{}); len(es) != 1 || es[0].Held {
		t.Errorf("a held row replaced its settlement: %+v", es)
	}
}
