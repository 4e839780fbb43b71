// Package ledger keeps one account of what agents cost: every model round
// the proxy sends upstream (tokens by kind, and their price) and every
// tool call the gateway makes (server, tool, outcome, time), each under
// the person and profile it was made for. Budgets read the same account:
// a request that would go past one is refused before it is sent.
//
// An entry is written before its work starts, held at the most it could
// cost (a model round's max_tokens), and settled with what it truly cost
// once that is known. A process killed in between leaves the held entry:
// the work is counted once, at its most, never as nothing. The admission
// (sum the budgets' windows, refuse or write the held entry) is one step
// under one lock, so that concurrent requests cannot all slip under a
// budget: a file lock for the ledger file in the state folder, an
// advisory lock in PostgreSQL for a fleet (package store). In a fleet,
// what needs no decision waits in the replica's journal and lands behind
// the answer (SharedBook), so that a store away refuses only what a
// budget must decide.
package ledger

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Kinds of entry.
const (
	KindRound = "round" // one request to the model API
	KindCall  = "call"  // one tool call through the gateway
)

// Entry is one line of the ledger.
type Entry struct {
	// ID names the entry for good: a settlement replaces the held entry
	// of the same ID.
	ID   string    `json:"id"`
	Time time.Time `json:"time"`
	Kind string    `json:"kind"`
	Who
	// Model is a round's model, as the request named it.
	Model string `json:"model,omitempty"`
	// Server, Tool and Outcome are a call's.
	Server  string `json:"server,omitempty"`
	Tool    string `json:"tool,omitempty"`
	Outcome string `json:"outcome,omitempty"`
	Tokens
	// Nanos is the cost in billionths of a US dollar.
	Nanos int64 `json:"nanos,omitempty"`
	// Unpriced is a round of a model the price table lacks: its cost is
	// unknown, not zero.
	Unpriced   bool    `json:"unpriced,omitempty"`
	DurationMS float64 `json:"durationMs,omitempty"`
	// Own marks a round the proxy made by itself (a search round): it
	// costs, but is not one of the client's requests.
	Own bool `json:"own,omitempty"`
	// Held is an entry not settled yet: counted at its most.
	Held bool `json:"held,omitempty"`
	// Void is an admitted request that never reached the API (the proxy
	// refused it, or the upstream could not be reached): it counts for
	// nothing.
	Void bool `json:"void,omitempty"`
}

// Who is whom an entry is for: the person of a verified token (and the
// groups it carries), the profile it opened.
type Who struct {
	Person  string   `json:"person,omitempty"`
	Groups  []string `json:"groups,omitempty"`
	Profile string   `json:"profile,omitempty"`
}

// Tokens are a round's tokens by kind, as the API bills them: Input
// excludes the cache's reads and writes.
type Tokens struct {
	Input      int64 `json:"input,omitempty"`
	Output     int64 `json:"output,omitempty"`
	CacheRead  int64 `json:"cacheRead,omitempty"`
	CacheWrite int64 `json:"cacheWrite,omitempty"`
}

// Total is every token of the round.
func (t Tokens) Total() int64 { return t.Input + t.Output + t.CacheRead + t.CacheWrite }

// NewID returns a fresh entry id.
func NewID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// Sums are what a budget's scope spent in its window.
type Sums struct {
	Requests, Calls, Tokens, Nanos int64
	// Oldest is the time of the oldest entry counted (zero for none).
	Oldest time.Time
}

// add counts e into s when e is in scope and after since.
func (s *Sums) add(e *Entry) {
	if e.Void {
		return
	}
	if s.Oldest.IsZero() || e.Time.Before(s.Oldest) {
		s.Oldest = e.Time
	}
	switch e.Kind {
	case KindRound:
		if !e.Own {
			s.Requests++
		}
		s.Tokens += e.Total()
		s.Nanos += e.Nanos
	case KindCall:
		s.Calls++
	}
}

// sub takes e out of s (see add); Oldest is left as it was.
func (s *Sums) sub(e *Entry) {
	if e.Void {
		return
	}
	switch e.Kind {
	case KindRound:
		if !e.Own {
			s.Requests--
		}
		s.Tokens -= e.Total()
		s.Nanos -= e.Nanos
	case KindCall:
		s.Calls--
	}
}

// Scope is the part of the ledger a budget counts: entries from Since on,
// for one person, profile or group, or everyone.
type Scope struct {
	Kind  string // "person", "profile", "group" or "everyone"
	Name  string
	Since time.Time
	// Key names the window for a book that keeps running sums (its
	// budget's name): the same key's Since only moves forward.
	Key string
}

// Holds reports whether e is in the scope (its time aside).
func (s Scope) Holds(e *Entry) bool {
	switch s.Kind {
	case "person":
		return e.Person == s.Name
	case "profile":
		return e.Profile == s.Name
	case "group":
		for _, g := range e.Groups {
			if g == s.Name {
				return true
			}
		}
		return false
	case "everyone":
		return true
	}
	return false
}

// Book is where entries are kept: a file (OpenFile) or a store that
// replicas share (Shared).
type Book interface {
	// Admit sums each scope, then, unless decide refuses them, writes e:
	// both under one lock.
	Admit(ctx context.Context, e *Entry, scopes []Scope, decide func([]Sums) error) error
	// Settle replaces the entry of e.ID (or adds e).
	Settle(ctx context.Context, e *Entry) error
	// Entries returns the entries from since on, settled ones as settled,
	// oldest first.
	Entries(ctx context.Context, since time.Time) ([]Entry, error)
	// Where names the book for messages.
	Where() string
	Close() error
}

// Ledger is a book with the budgets and prices it answers by. It is safe
// for concurrent use.
type Ledger struct {
	book    Book
	budgets []Budget
	prices  Prices
	warnAt  float64
	now     func() time.Time
}

// Options configure a Ledger.
type Options struct {
	Budgets []Budget
	// Prices override and add to the built-in table (BuiltinPrices).
	Prices Prices
	// WarnAt is the share of a budget past which answers carry a warning
	// (default 0.8).
	WarnAt float64
	// Now is the clock (default time.Now), for tests.
	Now func() time.Time
}

// New returns a ledger over book.
func New(book Book, opts *Options) *Ledger {
	l := &Ledger{book: book, warnAt: 0.8, now: time.Now, prices: BuiltinPrices()}
	if opts != nil {
		l.budgets = opts.Budgets
		for m, p := range opts.Prices {
			l.prices[m] = p
		}
		if opts.WarnAt > 0 {
			l.warnAt = opts.WarnAt
		}
		if opts.Now != nil {
			l.now = opts.Now
		}
	}
	return l
}

// Book is the ledger's book.
func (l *Ledger) Book() Book { return l.book }

// Budgets are the budgets the ledger holds to.
func (l *Ledger) Budgets() []Budget { return l.budgets }

// Price is the cost of a round's tokens under model, and false when the
// price table has no such model.
func (l *Ledger) Price(model string, t Tokens) (nanos int64, ok bool) {
	p, ok := l.prices.Of(model)
	if !ok {
		return 0, false
	}
	return p.Cost(t), true
}

// ModelName is the price table's name for model, or "other": a bounded
// set of names, for metrics' labels.
func (l *Ledger) ModelName(model string) string {
	if name, ok := l.prices.Name(model); ok {
		return name
	}
	return "other"
}

// Mine returns the entries of a person (by their name), or else of a
// profile: what a caller may see of the ledger.
func Mine(entries []Entry, person, profile string) []Entry {
	var out []Entry
	for _, e := range entries {
		if (person != "" && e.Person == person) || (person == "" && profile != "" && e.Person == "" && e.Profile == profile) {
			out = append(out, e)
		}
	}
	return out
}

// OverError is a request refused because a budget is spent.
type OverError struct {
	Budget Budget
	// Spent is what the budget counts, in its unit; Limit the budget's.
	Spent, Limit string
	// Frees is when the window lets the next request through.
	Frees time.Time
	// Why is set instead when the ledger cannot decide (a model without
	// a price under a dollar budget).
	Why string
}

func (e *OverError) Error() string {
	if e.Why != "" {
		return fmt.Sprintf("budget %s: %s", e.Budget.Name(), e.Why)
	}
	return fmt.Sprintf("budget %s is spent: %s of %s; it frees at %s", e.Budget.Name(), e.Spent, e.Limit, e.Frees.UTC().Format(time.RFC3339))
}

// RetryAfter is how long until the budget frees, in whole seconds (at
// least one).
func (e *OverError) RetryAfter(now time.Time) int {
	if e.Frees.IsZero() {
		return 60
	}
	return max(1, int(e.Frees.Sub(now).Seconds()+0.999))
}

// Admit writes e as held, unless a budget that applies to it is spent;
// then it returns an *OverError and writes nothing. The warnings name
// the budgets past their warning share, after e. A round's e carries the
// most it could cost (the request's max_tokens), which Admit prices. An
// own round is written whatever the budgets say: the client's request
// that caused it was admitted.
func (l *Ledger) Admit(ctx context.Context, e *Entry) (warnings []string, err error) {
	now := l.now()
	if e.ID == "" {
		e.ID = NewID()
	}
	e.Time, e.Held = now.UTC(), true
	nanos, priced := int64(0), true
	if e.Kind == KindRound {
		nanos, priced = l.Price(e.Model, e.Tokens)
		e.Nanos, e.Unpriced = nanos, !priced
	}
	var applied []Budget
	var scopes []Scope
	if !e.Own {
		for _, b := range l.budgets {
			if b.Applies(&e.Who) && b.Counts(e.Kind) {
				if e.Kind == KindRound && b.USD > 0 && !priced {
					return nil, &OverError{Budget: b, Why: fmt.Sprintf("the model %q has no price, so what it costs cannot be counted: add it under \"prices\" in the configuration", cut(e.Model, 80))}
				}
				applied = append(applied, b)
				scopes = append(scopes, b.Scope(now))
			}
		}
	}
	err = l.book.Admit(ctx, e, scopes, func(sums []Sums) error {
		for i, b := range applied {
			if over := b.over(sums[i], e, now); over != nil {
				return over
			}
			warnAt := l.warnAt
			if b.WarnAt > 0 {
				warnAt = b.WarnAt
			}
			if share := b.share(sums[i], e); share >= warnAt {
				warnings = append(warnings, fmt.Sprintf("budget %s is %.0f%% spent", b.Name(), 100*min(share, 1)))
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return warnings, nil
}

// Settle writes what e truly cost, replacing its held entry. A round is
// priced here.
func (l *Ledger) Settle(ctx context.Context, e *Entry) error {
	e.Held = false
	if e.Kind == KindRound && !e.Void {
		nanos, ok := l.Price(e.Model, e.Tokens)
		e.Nanos, e.Unpriced = nanos, !ok
	}
	return l.book.Settle(ctx, e)
}

// Entries are the ledger's entries from since on.
func (l *Ledger) Entries(ctx context.Context, since time.Time) ([]Entry, error) {
	return l.book.Entries(ctx, since)
}

// Close closes the book.
func (l *Ledger) Close() error { return l.book.Close() }

// ErrClosed is a book used after Close.
var ErrClosed = errors.New("ledger: closed")

// cut returns at most n bytes of s for messages.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}

// Usage is one row of a usage report: what one person (or profile,
// model, server, tool) spent.
type Usage struct {
	Key        string `json:"key"`
	Requests   int64  `json:"requests"`
	OwnRounds  int64  `json:"ownRounds"`
	Input      int64  `json:"input"`
	Output     int64  `json:"output"`
	CacheRead  int64  `json:"cacheRead"`
	CacheWrite int64  `json:"cacheWrite"`
	// USD is the cost; Unpriced counts rounds whose cost is unknown.
	USD       float64 `json:"usd"`
	Unpriced  int64   `json:"unpriced,omitempty"`
	ToolCalls int64   `json:"toolCalls"`
	// Held counts entries still at their most (not settled).
	Held int64 `json:"held,omitempty"`
}

// Group sums entries into one row per key ("person", "profile", "model",
// "server" or "tool"), the costliest first. An entry without the key (a
// tool call has no model) goes under "-".
func Group(entries []Entry, by string) ([]Usage, error) {
	key, ok := groupKeys[by]
	if !ok {
		return nil, fmt.Errorf("cannot group by %q: want person, profile, model, server or tool", by)
	}
	rows := map[string]*Usage{}
	var nanos = map[string]int64{}
	for i := range entries {
		e := &entries[i]
		if e.Void {
			continue
		}
		k := key(e)
		if k == "" {
			k = "-"
		}
		u := rows[k]
		if u == nil {
			u = &Usage{Key: k}
			rows[k] = u
		}
		if e.Held {
			u.Held++
		}
		switch e.Kind {
		case KindRound:
			if e.Own {
				u.OwnRounds++
			} else {
				u.Requests++
			}
			u.Input += e.Input
			u.Output += e.Output
			u.CacheRead += e.CacheRead
			u.CacheWrite += e.CacheWrite
			nanos[k] += e.Nanos
			if e.Unpriced {
				u.Unpriced++
			}
		case KindCall:
			u.ToolCalls++
		}
	}
	out := make([]Usage, 0, len(rows))
	for k, u := range rows {
		u.USD = float64(nanos[k]) / 1e9
		out = append(out, *u)
	}
	sort.Slice(out, func(i, j int) bool {
		if nanos[out[i].Key] != nanos[out[j].Key] {
			return nanos[out[i].Key] > nanos[out[j].Key]
		}
		if out[i].ToolCalls != out[j].ToolCalls {
			return out[i].ToolCalls > out[j].ToolCalls
		}
		return out[i].Key < out[j].Key
	})
	return out, nil
}

var groupKeys = map[string]func(*Entry) string{
	"person":  func(e *Entry) string { return e.Person },
	"profile": func(e *Entry) string { return e.Profile },
	"model":   func(e *Entry) string { return e.Model },
	"server":  func(e *Entry) string { return e.Server },
	"tool":    func(e *Entry) string { return e.Tool },
}

// GroupNames are the keys Group takes.
func GroupNames() string {
	return strings.Join([]string{"person", "profile", "model", "server", "tool"}, ", ")
}
