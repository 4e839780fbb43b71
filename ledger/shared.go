package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/toolshelf/toolshelf/store"
)

// Shared is a store that replicas share (store.DB is one).
type Shared interface {
	store.Ledger
	Where() string
}

// sharedBook is a book in the shared store: the store's transaction and
// lock decide admissions, so that a budget holds across every replica.
type sharedBook struct{ st Shared }

// OnStore returns a book kept in st.
func OnStore(st Shared) Book { return sharedBook{st} }

func (b sharedBook) Where() string { return b.st.Where() }

func (b sharedBook) Close() error { return nil }

func rowOf(e *Entry) (store.LedgerRow, error) {
	raw, err := json.Marshal(e)
	if err != nil {
		return store.LedgerRow{}, fmt.Errorf("ledger: %w", err)
	}
	return store.LedgerRow{
		ID: e.ID, At: e.Time, Kind: e.Kind, Person: e.Person, Groups: e.Groups, Profile: e.Profile,
		Own: e.Own, Void: e.Void, Tokens: e.Total(), Nanos: e.Nanos, Entry: raw,
	}, nil
}

func (b sharedBook) Admit(ctx context.Context, e *Entry, scopes []Scope, decide func([]Sums) error) error {
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

func (b sharedBook) Settle(ctx context.Context, e *Entry) error {
	row, err := rowOf(e)
	if err != nil {
		return err
	}
	return b.st.SettleLedger(ctx, row)
}

func (b sharedBook) Entries(ctx context.Context, since time.Time) ([]Entry, error) {
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
