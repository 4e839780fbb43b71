package ledger

import (
	"context"
	"fmt"
	"net/url"
	"time"
)

// Report is what GET /usage answers and the console shows: rows of usage
// and the budgets with how full each is.
type Report struct {
	By      string        `json:"by"`
	Since   time.Time     `json:"since,omitzero"`
	Person  string        `json:"person,omitempty"`
	Profile string        `json:"profile,omitempty"`
	Rows    []Usage       `json:"rows"`
	Budgets []BudgetState `json:"budgets,omitempty"`
}

// BudgetState is a budget and what its window holds now.
type BudgetState struct {
	Name      string  `json:"name"`
	USD       float64 `json:"usd,omitempty"`
	Tokens    int64   `json:"tokens,omitempty"`
	Requests  int64   `json:"requests,omitempty"`
	ToolCalls int64   `json:"toolCalls,omitempty"`
	Spent     struct {
		USD       float64 `json:"usd"`
		Tokens    int64   `json:"tokens"`
		Requests  int64   `json:"requests"`
		ToolCalls int64   `json:"toolCalls"`
	} `json:"spent"`
	// Share is the largest share of a limit spent (1 is spent).
	Share float64 `json:"share"`
}

// Report reads the ledger for a caller: with all, everyone's entries and
// every budget; else the person's (or, for a profile's token, the
// profile's own) and the budgets that apply to them. q may carry "by"
// (default person, or model for one caller) and "since" (a duration).
func (l *Ledger) Report(ctx context.Context, q url.Values, who Who, all bool) (*Report, error) {
	r := &Report{By: q.Get("by")}
	if r.By == "" {
		r.By = "person"
		if !all {
			r.By = "model"
		}
	}
	if _, ok := groupKeys[r.By]; !ok {
		return nil, fmt.Errorf("by=%q: want %s", cut(r.By, 40), GroupNames())
	}
	now := l.now()
	if s := q.Get("since"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return nil, fmt.Errorf("since=%q: want a duration such as 24h", cut(s, 40))
		}
		r.Since = now.Add(-d).UTC()
	}
	var budgets []Budget
	for _, b := range l.budgets {
		if all || b.Applies(&who) {
			budgets = append(budgets, b)
		}
	}
	from := r.Since
	for _, b := range budgets {
		if s := b.Scope(now).Since; s.Before(from) {
			from = s
		}
	}
	entries, err := l.book.Entries(ctx, from)
	if err != nil {
		return nil, err
	}
	for _, b := range budgets {
		r.Budgets = append(r.Budgets, b.state(entries, now))
	}
	if !all {
		r.Person, r.Profile = who.Person, who.Profile
		entries = Mine(entries, who.Person, who.Profile)
	}
	var shown []Entry
	for _, e := range entries {
		if !e.Time.Before(r.Since) {
			shown = append(shown, e)
		}
	}
	if r.Rows, err = Group(shown, r.By); err != nil {
		return nil, err
	}
	return r, nil
}

// state sums what b's window holds of entries at now.
func (b *Budget) state(entries []Entry, now time.Time) BudgetState {
	s := BudgetState{Name: b.Name(), USD: b.USD, Tokens: b.Tokens, Requests: b.Requests, ToolCalls: b.ToolCalls}
	scope := b.Scope(now)
	var sums Sums
	for i := range entries {
		if e := &entries[i]; !e.Time.Before(scope.Since) && scope.Holds(e) {
			sums.add(e)
		}
	}
	s.Spent.USD, s.Spent.Tokens, s.Spent.Requests, s.Spent.ToolCalls = float64(sums.Nanos)/1e9, sums.Tokens, sums.Requests, sums.Calls
	share := func(spent, limit float64) {
		if limit > 0 {
			s.Share = max(s.Share, spent/limit)
		}
	}
	share(s.Spent.USD, b.USD)
	share(float64(sums.Tokens), float64(b.Tokens))
	share(float64(sums.Requests), float64(b.Requests))
	share(float64(sums.Calls), float64(b.ToolCalls))
	return s
}
