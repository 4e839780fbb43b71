package ledger

import (
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func openTemp(t *testing.T) (*File, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "state", FileName)
	b, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { b.Close() })
	return b, path
}

// A budget of N requests lets exactly N through, however many ask at
// once, and two processes' handles on one file (two opens here) share
// it: the file's lock decides.
func TestRequestBudgetIsExactUnderConcurrency(t *testing.T) {
	b1, path := openTemp(t)
	b2, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	budgets := []Budget{{For: "person:alice", Requests: 25, Per: "day"}}
	l1, l2 := New(b1, &Options{Budgets: budgets}), New(b2, &Options{Budgets: budgets})
	var admitted, refused atomic.Int64
	var wg sync.WaitGroup
	for i := range 16 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := l1
			if i%2 == 1 {
				l = l2
			}
			for range 4 {
				e := &Entry{Kind: KindRound, Who: Who{Person: "alice"}, Model: "claude-opus-4-8", Tokens: Tokens{Input: 10, Output: 100}}
				_, err := l.Admit(context.Background(), e)
				var over *OverError
				switch {
				case errors.As(err, &over):
					refused.Add(1)
				case err != nil:
					t.Error(err)
				default:
					admitted.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if admitted.Load() != 25 || refused.Load() != 39 {
		t.Fatalf("admitted %d, refused %d; want exactly 25 and 39", admitted.Load(), refused.Load())
	}
	// Another person is not held to alice's budget.
	if _, err := l1.Admit(context.Background(), &Entry{Kind: KindRound, Who: Who{Person: "bob"}, Model: "claude-opus-4-8"}); err != nil {
		t.Fatalf("bob: %v", err)
	}
	entries, err := ReadFile(path, time.Time{})
	if err != nil || len(entries) != 26 {
		t.Fatalf("the file has %d entries (%v), want 26", len(entries), err)
	}
}

// Dollars are counted at the most while held, and at what was spent once
// settled; a budget is refused once spent, says what and when it frees.
func TestDollarBudgetSettlesAndRefuses(t *testing.T) {
	b, _ := openTemp(t)
	now := time.Date(2026, 11, 28, 10, 0, 0, 0, time.UTC)
	l := New(b, &Options{Budgets: []Budget{{For: "group:sre", USD: 1, Per: "day", Calendar: true}}, Now: func() time.Time { return now }})
	ctx := context.Background()
	who := Who{Person: "carol", Groups: []string{"sre"}}
	// Held at its most: 1,000,000 output tokens of Opus 4.8 is $25.
	e := &Entry{Kind: KindRound, Who: who, Model: "claude-opus-4-8", Tokens: Tokens{Output: 1_000_000}}
	warnings, err := l.Admit(ctx, e)
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) != 1 || !strings.Contains(warnings[0], "group:sre/day") {
		t.Errorf("warnings %q, want one for group:sre/day", warnings)
	}
	if e.Nanos != 25e9 {
		t.Errorf("held at %d nanos, want $25", e.Nanos)
	}
	_, err = l.Admit(ctx, &Entry{Kind: KindRound, Who: who, Model: "claude-opus-4-8"})
	var over *OverError
	if !errors.As(err, &over) {
		t.Fatalf("a request while $25 is held under a $1 budget: %v, want refused", err)
	}
	// Settled at what it cost: 10,000 input ($0.05) and 1,000 output
	// ($0.025) tokens.
	e.Tokens = Tokens{Input: 10_000, Output: 1_000}
	if err := l.Settle(ctx, e); err != nil {
		t.Fatal(err)
	}
	if e.Nanos != 75_000_000 {
		t.Errorf("settled at %d nanos, want $0.075", e.Nanos)
	}
	if _, err := l.Admit(ctx, &Entry{Kind: KindRound, Who: who, Model: "claude-opus-4-8", Tokens: Tokens{Output: 100}}); err != nil {
		t.Fatalf("$0.075 of $1 spent: %v", err)
	}
	// A calendar day frees at midnight UTC.
	e2 := &Entry{Kind: KindRound, Who: who, Model: "claude-opus-4-8", Tokens: Tokens{Output: 100_000}}
	if _, err := l.Admit(ctx, e2); err != nil {
		t.Fatal(err)
	}
	e2.Tokens = Tokens{Output: 40_000} // $1
	l.Settle(ctx, e2)
	_, err = l.Admit(ctx, &Entry{Kind: KindRound, Who: Who{Person: "dan", Groups: []string{"sre", "ops"}}, Model: "claude-opus-4-8"})
	if !errors.As(err, &over) {
		t.Fatalf("the group's $1 is spent; dan of sre was let through: %v", err)
	}
	if want := time.Date(2026, 11, 29, 0, 0, 0, 0, time.UTC); !over.Frees.Equal(want) || over.RetryAfter(now) != 14*3600 {
		t.Errorf("frees at %v (retry after %d s), want %v", over.Frees, over.RetryAfter(now), want)
	}
	if msg := over.Error(); !strings.Contains(msg, "group:sre/day") || !strings.Contains(msg, "$1.0") {
		t.Errorf("refusal %q does not name the budget and what was spent", msg)
	}
	// The next day, it is free again.
	now = now.Add(15 * time.Hour)
	if _, err := l.Admit(ctx, &Entry{Kind: KindRound, Who: who, Model: "claude-opus-4-8"}); err != nil {
		t.Fatalf("the next day: %v", err)
	}
}

// A model without a price under a dollar budget cannot be counted, so it
// is refused; without a dollar budget it is counted, marked unpriced.
func TestUnpricedModelFailsClosedUnderDollars(t *testing.T) {
	b, _ := openTemp(t)
	l := New(b, &Options{Budgets: []Budget{{For: "everyone", USD: 100, Per: "month"}, {For: "profile:ci", Requests: 10, Per: "hour"}}})
	_, err := l.Admit(context.Background(), &Entry{Kind: KindRound, Who: Who{Person: "x"}, Model: "some-model-9"})
	var over *OverError
	if !errors.As(err, &over) || !strings.Contains(over.Error(), "has no price") {
		t.Fatalf("an unpriced model under a dollar budget: %v, want refused for its price", err)
	}
	l = New(b, &Options{Budgets: []Budget{{For: "profile:ci", Requests: 10, Per: "hour"}}})
	e := &Entry{Kind: KindRound, Who: Who{Profile: "ci"}, Model: "some-model-9"}
	if _, err := l.Admit(context.Background(), e); err != nil || !e.Unpriced {
		t.Fatalf("unpriced without a dollar budget: %v, unpriced=%v", err, e.Unpriced)
	}
}

// Tool calls count against toolCalls only; rounds against the rest; own
// rounds are never refused and are not the client's requests.
func TestKindsAndOwnRounds(t *testing.T) {
	b, _ := openTemp(t)
	l := New(b, &Options{Budgets: []Budget{{For: "person:p", ToolCalls: 2, Requests: 1, Per: "hour"}}})
	ctx := context.Background()
	who := Who{Person: "p"}
	for i := range 2 {
		if _, err := l.Admit(ctx, &Entry{Kind: KindCall, Who: who, Server: "s", Tool: "t"}); err != nil {
			t.Fatalf("call %d: %v", i+1, err)
		}
	}
	_, err := l.Admit(ctx, &Entry{Kind: KindCall, Who: who, Tool: "t"})
	var over *OverError
	if !errors.As(err, &over) || !strings.Contains(err.Error(), "2 tool calls") {
		t.Fatalf("a third call: %v", err)
	}
	if _, err := l.Admit(ctx, &Entry{Kind: KindRound, Who: who, Model: "claude-haiku-4-5"}); err != nil {
		t.Fatalf("calls do not spend requests: %v", err)
	}
	if _, err := l.Admit(ctx, &Entry{Kind: KindRound, Who: who, Model: "claude-haiku-4-5", Own: true}); err != nil {
		t.Fatalf("an own round: %v", err)
	}
	if _, err := l.Admit(ctx, &Entry{Kind: KindRound, Who: who, Model: "claude-haiku-4-5"}); !errors.As(err, &over) {
		t.Fatalf("a second request under a budget of 1: %v", err)
	}
	entries, _ := l.Entries(ctx, time.Time{})
	rows, err := Group(entries, "person")
	if err != nil || len(rows) != 1 || rows[0].Requests != 1 || rows[0].OwnRounds != 1 || rows[0].ToolCalls != 2 || rows[0].Held != 4 {
		t.Fatalf("rows %+v (%v)", rows, err)
	}
	if _, err := Group(entries, "colour"); err == nil {
		t.Error("grouping by an unknown key is no error")
	}
}

// A line a killed writer left unfinished is skipped, and the next entry
// starts a line of its own; a void entry counts for nothing.
func TestFileSurvivesACutLine(t *testing.T) {
	b, path := openTemp(t)
	l := New(b, &Options{Budgets: []Budget{{For: "everyone", Requests: 2, Per: "day"}}})
	ctx := context.Background()
	if _, err := l.Admit(ctx, &Entry{Kind: KindRound, Model: "gpt-5.5"}); err != nil {
		t.Fatal(err)
	}
	f, _ := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	f.WriteString(`{"id":"cut","time":"2026-11-28T10:00:00Z","kind":"rou`)
	f.Close()
	e := &Entry{Kind: KindRound, Model: "gpt-5.5"}
	if _, err := l.Admit(ctx, e); err != nil {
		t.Fatal(err)
	}
	e.Void = true
	l.Settle(ctx, e)
	if _, err := l.Admit(ctx, &Entry{Kind: KindRound, Model: "gpt-5.5"}); err != nil {
		t.Fatalf("a void request counted: %v", err)
	}
	entries, err := ReadFile(path, time.Time{})
	if err != nil || len(entries) != 3 {
		t.Fatalf("%d entries (%v), want 3: the cut line skipped, the ones after it read", len(entries), err)
	}
}

func TestPrices(t *testing.T) {
	ps := BuiltinPrices()
	for model, want := range map[string]float64{
		"claude-opus-4-8":            5,
		"claude-opus-4-8-20261015":   5,
		"claude-opus-4-1":            15,
		"claude-sonnet-4-5-20250929": 3,
		"claude-haiku-4-5-latest":    1,
		"gpt-5.4-mini-2026-03-17":    0.75,
		"gpt-5.4":                    2.5,
	} {
		p, ok := ps.Of(model)
		if !ok || p.Input != want {
			t.Errorf("%s: %v %v, want input $%v", model, p, ok, want)
		}
	}
	for _, model := range []string{"claude-opus-4-9", "claude-opus-45", "gpt-5.45", "", "llama"} {
		if p, ok := ps.Of(model); ok {
			t.Errorf("%q priced as %v: a version the table lacks must not take another's price", model, p)
		}
	}
	if c := (Price{Input: 3, Output: 15, CacheRead: 0.3, CacheWrite: 3.75}).Cost(Tokens{Input: 1000, Output: 100, CacheRead: 10000, CacheWrite: 2000}); c != 3_000_000+1_500_000+3_000_000+7_500_000 {
		t.Errorf("cost %d nanos", c)
	}
}

func TestBudgetCheck(t *testing.T) {
	for _, b := range []Budget{
		{For: "alice", USD: 1, Per: "day"},
		{For: "person:", USD: 1, Per: "day"},
		{For: "everyone", Per: "day"},
		{For: "everyone", USD: -1, Per: "day"},
		{For: "everyone", USD: 1, Per: "fortnight"},
	} {
		if b.Check() == nil {
			t.Errorf("%+v passes its check", b)
		}
	}
	b := Budget{For: "everyone", Requests: 1, Per: "week", Calendar: true}
	if err := b.Check(); err != nil {
		t.Fatal(err)
	}
	// A calendar week starts on Monday (UTC).
	start, end := b.window(time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)) // a Sunday
	if start != time.Date(2026, 11, 23, 0, 0, 0, 0, time.UTC) || end != time.Date(2026, 11, 30, 0, 0, 0, 0, time.UTC) {
		t.Errorf("week %v – %v", start, end)
	}
}

// The file book's running sums equal the window summed afresh, through
// admissions, settlements, voids, another process's entries (some older
// than this one's), a clock that moves on, and windows rolling and of the
// calendar.
func TestRunningSumsMatchTheWindow(t *testing.T) {
	b1, path := openTemp(t)
	b2, err := OpenFile(path)
	if err != nil {
		t.Fatal(err)
	}
	defer b2.Close()
	rng := rand.New(rand.NewPCG(1, 2))
	budgets := []Budget{
		{For: "person:a", Requests: 1 << 40, Per: "hour"},
		{For: "group:g", USD: 1e9, Per: "day", Calendar: true},
		{For: "everyone", ToolCalls: 1 << 40, Per: "hour", Calendar: true},
		{For: "profile:p", Tokens: 1 << 50, Per: "hour"},
	}
	now := time.Date(2026, 11, 28, 22, 0, 0, 0, time.UTC)
	people := []Who{{Person: "a", Groups: []string{"g"}, Profile: "p"}, {Person: "b", Profile: "p"}, {Person: "c", Groups: []string{"g", "h"}}}
	var open []*Entry
	ctx := context.Background()
	checked := 0
	for step := range 1500 {
		now = now.Add(time.Duration(rng.IntN(90)) * time.Second)
		book := b1
		at := now
		if rng.IntN(4) == 0 {
			book = b2
			at = now.Add(-time.Duration(rng.IntN(600)) * time.Second) // another process's clock, behind
		}
		switch op := rng.IntN(10); {
		case op < 6:
			b := budgets[rng.IntN(len(budgets))]
			who := people[rng.IntN(len(people))]
			e := &Entry{ID: NewID(), Time: at, Kind: KindRound, Who: who, Model: "m", Tokens: Tokens{Input: int64(rng.IntN(1000)), Output: 50}, Nanos: int64(rng.IntN(1e6)), Held: true, Own: rng.IntN(5) == 0}
			if b.ToolCalls > 0 {
				e.Kind = KindCall
			}
			scope := b.Scope(now)
			var got Sums
			if err := book.Admit(ctx, e, []Scope{scope}, func(s []Sums) error { got = s[0]; return nil }); err != nil {
				t.Fatal(err)
			}
			if book != b1 || step%5 != 0 {
				open = append(open, e)
				continue
			}
			checked++
			// What the window holds, read afresh (before e).
			all, _ := ReadFile(path, time.Time{})
			var want Sums
			for i := range all {
				if x := &all[i]; x.ID != e.ID && !x.Time.Before(scope.Since) && scope.Holds(x) {
					want.add(x)
				}
			}
			if got != want {
				t.Fatalf("step %d, %s: running sums %+v, the window afresh %+v", step, b.Name(), got, want)
			}
			open = append(open, e)
		case len(open) > 0:
			i := rng.IntN(len(open))
			e := open[i]
			open = append(open[:i], open[i+1:]...)
			s := *e
			s.Held, s.Tokens, s.Nanos = false, Tokens{Input: s.Input / 2, Output: 7}, s.Nanos/3
			s.Void = rng.IntN(6) == 0
			if err := book.Settle(ctx, &s); err != nil {
				t.Fatal(err)
			}
		}
	}
	if checked < 100 {
		t.Fatalf("only %d admissions checked", checked)
	}
}

// A budget's own warnAt, and the default 0.8.
func TestWarnings(t *testing.T) {
	b, _ := openTemp(t)
	l := New(b, &Options{Budgets: []Budget{{For: "everyone", Requests: 10, Per: "day", WarnAt: 0.5}, {For: "profile:p", Requests: 10, Per: "day"}}})
	var first [2]int
	for i := 1; i <= 10; i++ {
		warnings, err := l.Admit(context.Background(), &Entry{Kind: KindRound, Who: Who{Profile: "p"}, Model: "gpt-5.5"})
		if err != nil {
			t.Fatal(err)
		}
		for _, w := range warnings {
			k := 0
			if strings.Contains(w, "profile:p") {
				k = 1
			}
			if first[k] == 0 {
				first[k] = i
			}
		}
	}
	if first != [2]int{5, 8} {
		t.Errorf("first warned at requests %v, want 5 (warnAt 0.5) and 8 (0.8)", first)
	}
}

// A token budget refuses once its window holds the limit; a request
// budget's and a dollar budget's sums do not stand in for it.
func TestTokenBudget(t *testing.T) {
	b, _ := openTemp(t)
	l := New(b, &Options{Budgets: []Budget{{For: "person:t", Tokens: 1000, Per: "hour"}}})
	ctx := context.Background()
	e := &Entry{Kind: KindRound, Who: Who{Person: "t"}, Model: "claude-haiku-4-5", Tokens: Tokens{Input: 10, Output: 10}}
	if _, err := l.Admit(ctx, e); err != nil {
		t.Fatal(err)
	}
	e.Tokens = Tokens{Input: 600, Output: 399} // 999: one short
	l.Settle(ctx, e)
	e2 := &Entry{Kind: KindRound, Who: Who{Person: "t"}, Model: "claude-haiku-4-5", Tokens: Tokens{Output: 1}}
	if _, err := l.Admit(ctx, e2); err != nil {
		t.Fatalf("999 of 1000 tokens spent: %v", err)
	}
	l.Settle(ctx, e2) // held at 1 out: 1000 now
	_, err := l.Admit(ctx, &Entry{Kind: KindRound, Who: Who{Person: "t"}, Model: "claude-haiku-4-5"})
	var over *OverError
	if !errors.As(err, &over) || !strings.Contains(err.Error(), "1000 tokens") {
		t.Fatalf("1000 of 1000 tokens spent: %v", err)
	}
}
