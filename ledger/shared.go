package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/store"
)

// Shared is a store that replicas share (store.DB is one).
type Shared interface {
	store.Ledger
	Where() string
}

// SharedBook is a book in the shared store. An admission that a budget
// counts is decided by the store, in its transaction under its lock, so
// that the budget holds across every replica (and is refused while the
// store is away: it cannot be decided). What needs no decision (an entry
// no budget counts, a settlement) goes, with a journal, into the journal
// first and lands in the store behind the answer: a store away for a
// while costs no call and loses no entry. Without a journal it is
// written at once.
type SharedBook struct {
	st     Shared
	j      *journal.Journal
	logger *slog.Logger

	queue  chan landing
	stop   context.CancelFunc
	done   chan struct{}
	closed sync.Once

	mu      sync.Mutex
	waiting int
}

// landing is an entry on its way to the store, with its journal origin.
type landing struct {
	e      Entry
	origin string
}

// OnStore returns a book kept in st; j (which may be nil) keeps what waits
// for the store. Close stops its landing.
func OnStore(st Shared, j *journal.Journal, logger *slog.Logger) *SharedBook {
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	b := &SharedBook{st: st, j: j, logger: logger}
	if j != nil {
		ctx, cancel := context.WithCancel(context.Background())
		b.queue, b.stop, b.done = make(chan landing, 4096), cancel, make(chan struct{})
		go b.land(ctx)
	}
	return b
}

func (b *SharedBook) Where() string { return b.st.Where() }

// Close lands what waits (for a few seconds at most); what it cannot
// stays in the journal for the next run.
func (b *SharedBook) Close() error {
	b.closed.Do(func() {
		if b.stop != nil {
			b.stop()
			<-b.done
		}
	})
	return nil
}

// Waiting is how many entries wait for the store.
func (b *SharedBook) Waiting() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiting
}

func rowOf(e *Entry) (store.LedgerRow, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return store.LedgerRow{}, fmt.Errorf("ledger: %w", err)
	}
	return store.LedgerRow{
		ID: e.ID, At: e.Time, Kind: e.Kind, Person: e.Person, Groups: e.Groups, Profile: e.Profile,
		Own: e.Own, Void: e.Void, Held: e.Held, Tokens: e.Total(), Nanos: e.Nanos, Entry: raw,
	}, nil
}

func (b *SharedBook) Admit(ctx context.Context, e *Entry, scopes []Scope, decide func([]Sums) error) error {
	if len(scopes) == 0 && b.j != nil {
		if err := decide(nil); err != nil {
			return err
		}
		return b.enqueue(e)
	}
	row, err := rowOf(e)
	if err != nil {
		return err
	}
	ss := make([]store.LedgerScope, len(scopes))
	for i, s := range scopes {
		ss[i] = store.LedgerScope{Kind: s.Kind, Name: s.Name, Since: s.Since}
	}
	return b.st.AdmitLedger(ctx, row, ss, func(sums []store.LedgerSums) error {
		out := make([]Sums, len(sums))
		for i, s := range sums {
			out[i] = Sums{Requests: s.Requests, Calls: s.Calls, Tokens: s.Tokens, Nanos: s.Nanos, Oldest: s.Oldest}
		}
		return decide(out)
	})
}

func (b *SharedBook) Settle(ctx context.Context, e *Entry) error {
	if b.j != nil {
		return b.enqueue(e)
	}
	row, err := rowOf(e)
	if err != nil {
		return err
	}
	return b.st.PutLedger(ctx, []store.LedgerRow{row})
}

// enqueue writes e into the journal (it outlives this process from now
// on) and hands it to the lander.
func (b *SharedBook) enqueue(e *Entry) error {
	origin, err := b.j.Add("ledger", e)
	if err != nil {
		return fmt.Errorf("ledger: the journal cannot keep the entry: %w", err)
	}
	b.mu.Lock()
	b.waiting++
	b.mu.Unlock()
	select {
	case b.queue <- landing{*e, origin}:
	default:
		// The lander is behind; the entry is safe in the journal, and
		// the next run (or replica) lands it.
		b.logger.Warn("ledger: entries wait in the journal; the store is slow or away")
	}
	return nil
}

// land writes queued entries to the store in batches, in order, until
// ctx is done; a failed batch is tried again, with a growing pause.
func (b *SharedBook) land(ctx context.Context) {
	defer close(b.done)
	var pending []landing
	if n := journal.Take(b.j, "ledger", func(e Entry, origin string) { pending = append(pending, landing{e, origin}) }); n > 0 {
		b.logger.Info("ledger: landing the entries a journal left", "entries", n)
		b.mu.Lock()
		b.waiting += n
		b.mu.Unlock()
	}
	retry := time.NewTimer(time.Hour)
	retry.Stop()
	if len(pending) > 0 {
		retry.Reset(0)
	}
	delay, away := 200*time.Millisecond, false
	write := func(ctx context.Context) {
		if len(pending) == 0 {
			return
		}
		rows := make([]store.LedgerRow, 0, len(pending))
		for i := range pending {
			row, err := rowOf(&pending[i].e)
			if err == nil {
				rows = append(rows, row)
			}
		}
		if err := b.st.PutLedger(ctx, rows); err != nil {
			if !away {
				b.logger.Warn("ledger: the store is unreachable; entries wait in the journal", "store", b.st.Where(), "waiting", len(pending), "error", err)
			}
			away = true
			retry.Reset(delay)
			delay = min(2*delay, 5*time.Second)
			return
		}
		if away {
			b.logger.Info("ledger: the store is back; waiting entries written", "entries", len(pending))
		}
		origins := make([]string, len(pending))
		for i, p := range pending {
			origins[i] = p.origin
		}
		b.j.Done(origins...)
		b.mu.Lock()
		b.waiting -= len(pending)
		b.mu.Unlock()
		pending, away, delay = pending[:0], false, 200*time.Millisecond
	}
	drain := func() {
		for {
			select {
			case l := <-b.queue:
				pending = append(pending, l)
			default:
				return
			}
		}
	}
	for {
		select {
		case l := <-b.queue:
			pending = append(pending, l)
			drain()
			if !away {
				write(ctx)
			}
		case <-retry.C:
			write(ctx)
		case <-ctx.Done():
			drain()
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			write(last)
			cancel()
			return
		}
	}
}

func (b *SharedBook) Entries(ctx context.Context, since time.Time) ([]Entry, error) {
	raws, err := b.st.LedgerEntries(ctx, since)
	if err != nil {
		return nil, err
	}
	out := make([]Entry, 0, len(raws))
	for _, raw := range raws {
		var e Entry
		if err := json.Unmarshal(raw, &e); err != nil {
			return nil, fmt.Errorf("ledger: an entry in %s does not read: %w", b.st.Where(), err)
		}
		out = append(out, e)
	}
	return out, nil
}
