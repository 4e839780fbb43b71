package search

import (
	"context"
	"errors"
	"strings"
	"unicode/utf8"

	"github.com/toolshelf/toolshelf/catalog"
)

// Request is one search as a face (the gateway's search_tools, the
// Messages library's search tool) receives it. Both faces answer through
// [Find], so that a query gives the same tools, in the same order, with
// the same notes, whichever face it came through.
type Request struct {
	Query string
	// Limit bounds ranked results; 0 means the engine's default. A
	// select: query returns every tool it names, up to MaxSelect.
	Limit int
	// Loaded is every tool of the conversation, of which the searched
	// catalog may be a part (the Messages library's deferred pool): a
	// select: of a tool found only there is already loaded.
	Loaded *catalog.Catalog
	// Exclude names tools left out of ranked results: they are loaded
	// already.
	Exclude map[string]bool
	// Pending names the servers still connecting: their tools may match
	// later.
	Pending []string
	// Depth, when set, keeps as many of the ranked hits (up to Limit) as
	// it judges worth reading; without it, Limit hits are kept.
	Depth *Depth
}

// Result is what a search found, for a face to present.
type Result struct {
	Hits []Hit
	// Weak reports that no tool fits the query well: the hits are only
	// the closest.
	Weak bool
	// WeakReason says why the result is weak (Hit.WeakReason).
	WeakReason string
	// Select is set for a select: query. AlreadyLoaded names the tools it
	// found in Request.Loaded only; Missing the names found nowhere.
	Select        bool
	AlreadyLoaded []string
	Missing       []string
	// Pending is Request.Pending when fewer than three tools were found.
	Pending []string
	// Searched is the number of tools searched.
	Searched int
	// Note tells the model what the result means, when it needs telling.
	Note string
	// Cut reports that the query was longer than MaxQuery and was cut.
	Cut bool
}

// MaxSelect bounds the tools one select: query returns.
const MaxSelect = 50

// MaxQuery bounds the bytes of a query that are searched: a model can
// send megabytes, and no request for a tool needs more than a few
// sentences. A longer query is cut, and the result says so.
const MaxQuery = 2000

// The weak note's two halves, between which its reason goes.
const (
	noteWeakHead   = "No tool fits this request well"
	noteWeakAdvice = "these are only the closest matches. Check that one fits before using it, " +
		"or search again naming the action and its object (\"send an email\"), a server (mcp__server lists its tools), or +word for a word a tool must have."
)

// The notes of a Result.
const (
	NoteWeak    = noteWeakHead + "; " + noteWeakAdvice
	NotePending = "No match yet; some servers are still connecting. Search again shortly."
	NoteNone    = "No match. Try other words, or mcp__<server> to list a server's tools."
	NoteCut     = "The query was cut to its first 2,000 bytes."
)

// NotConnectedNote is a search's note when servers whose tools it could
// not see (down, each as "name (failed: why)") may hold what was asked
// for: a model that reads only "no match" rewords its search again and
// again. none says the search found nothing; note is its own note.
func NotConnectedNote(down []string, none bool, note string) string {
	said := "Not searched, as their servers are not connected now: " + strings.Join(down, "; ") +
		". The tool asked for may be one of theirs: a starting server's tools come shortly; for a failed one, tell the person instead of searching again."
	if none {
		return "No match among the connected servers' tools. " + said
	}
	return note + " " + said
}

// Errors a face words for the model.
var (
	// ErrLimit is returned for a limit below zero.
	ErrLimit = errors.New("limit must be a positive integer")
)

// Find answers r over the catalog c with eng, an engine built from c.
// Query errors (empty, no letters, a bad select:) are returned as they
// are; they are the model's to correct.
func Find(ctx context.Context, eng Engine, c *catalog.Catalog, r Request) (Result, error) {
	res := Result{Searched: c.Len()}
	if r.Limit < 0 {
		return res, ErrLimit
	}
	if len(r.Query) > MaxQuery {
		n := MaxQuery
		for n > 0 && !utf8.RuneStart(r.Query[n]) {
			n--
		}
		r.Query, res.Cut = r.Query[:n], true
	}
	q, err := ParseQuery(r.Query)
	if err != nil {
		return res, err
	}
	if q.Select != nil {
		res.Select = true
		for _, n := range q.Select {
			if e, ok := c.Find(n); ok {
				if !containsEntry(res.Hits, e) && len(res.Hits) < MaxSelect {
					res.Hits = append(res.Hits, Hit{Entry: e, Score: 1, Matches: []Match{{Term: n, Fields: []string{FieldSelect}, Score: 1}}})
				}
				continue
			}
			if r.Loaded != nil {
				if e, ok := r.Loaded.Find(n); ok {
					res.AlreadyLoaded = append(res.AlreadyLoaded, e.Name)
					continue
				}
			}
			res.Missing = append(res.Missing, n)
		}
		return res, nil
	}
	limit := r.Limit
	hits, err := eng.Search(ctx, r.Query, limit)
	if limit == 0 {
		limit = len(hits) // the engine's default
	}
	if err == nil && len(r.Exclude) > 0 && len(hits) == limit {
		// Excluded tools are dropped below: ask for enough to fill the limit.
		hits, err = eng.Search(ctx, r.Query, limit+len(r.Exclude))
	}
	if err != nil {
		return res, err
	}
	for _, h := range hits {
		if r.Exclude[h.Entry.Name] {
			continue
		}
		res.Hits = append(res.Hits, h)
		if len(res.Hits) == limit {
			break
		}
	}
	if r.Depth != nil {
		res.Hits = res.Hits[:r.Depth.Keep(res.Hits)]
	}
	res.Weak = len(res.Hits) > 0 && res.Hits[0].Weak
	if res.Weak {
		res.WeakReason = res.Hits[0].WeakReason
	}
	if len(res.Hits) < 3 {
		res.Pending = r.Pending
	}
	switch {
	case res.Weak:
		res.Note = NoteWeak
		if res.WeakReason != "" {
			res.Note = noteWeakHead + " (" + res.WeakReason + "); " + noteWeakAdvice
		}
	case len(res.Hits) == 0 && len(res.Pending) > 0:
		res.Note = NotePending
	case len(res.Hits) == 0:
		res.Note = NoteNone
	}
	if res.Cut {
		res.Note = strings.TrimSpace(res.Note + " " + NoteCut)
	}
	return res, nil
}

func containsEntry(hits []Hit, e *catalog.Entry) bool {
	for _, h := range hits {
		if h.Entry == e {
			return true
		}
	}
	return false
}
