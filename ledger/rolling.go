package ledger

import (
	"sort"
	"time"
)

// rolling is a file book's running sums of one budget's window: the
// entries it counts, oldest first, and their sums. An admission moves
// its start forward (taking out what fell out of the window) instead of
// summing the window again, so that its cost does not grow with the
// entries a window holds.
type rolling struct {
	scope Scope
	items []rollItem // counted entries, by time
	sums  Sums       // Oldest unused: items[0] is the oldest
}

type rollItem struct {
	id string
	t  time.Time
}

// newRolling sums the window of s over entries.
func newRolling(s Scope, entries map[string]*Entry) *rolling {
	r := &rolling{scope: s}
	for id, e := range entries {
		if !e.Time.Before(s.Since) && s.Holds(e) {
			r.items = append(r.items, rollItem{id, e.Time})
			r.sums.add(e)
		}
	}
	sort.Slice(r.items, func(i, j int) bool { return r.items[i].t.Before(r.items[j].t) })
	return r
}

// advance moves the window's start to since, taking out what fell out of
// it.
func (r *rolling) advance(since time.Time, entries map[string]*Entry) {
	if since.Before(r.scope.Since) {
		return // an admission that reached the lock late (see skew)
	}
	n := 0
	for n < len(r.items) && r.items[n].t.Before(since) {
		if e, ok := entries[r.items[n].id]; ok {
			r.sums.sub(e)
		}
		n++
	}
	r.items = r.items[n:]
	r.scope.Since = since
}

// change counts e in place of old (nil for a new entry), when the window
// holds it.
func (r *rolling) change(old, e *Entry) {
	if e.Time.Before(r.scope.Since) || !r.scope.Holds(e) {
		return
	}
	if old != nil {
		r.sums.sub(old)
	} else {
		// Mostly the newest; another process's entry may be older.
		i := sort.Search(len(r.items), func(i int) bool { return r.items[i].t.After(e.Time) })
		r.items = append(r.items, rollItem{})
		copy(r.items[i+1:], r.items[i:])
		r.items[i] = rollItem{e.ID, e.Time}
	}
	r.sums.add(e)
}

// current returns the window's sums; Oldest is the oldest entry that
// counts (a void one does not).
func (r *rolling) current(entries map[string]*Entry) Sums {
	s := r.sums
	s.Oldest = time.Time{}
	for _, it := range r.items {
		if e, ok := entries[it.id]; ok && !e.Void {
			s.Oldest = it.t
			break
		}
	}
	return s
}
