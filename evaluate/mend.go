package evaluate

import (
	"cmp"
	"context"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
)

// What mending a hard-to-find tool brings is measured, not bounded: the
// words of half 0's requests that needed the tool and missed it, which
// its own text lacks, are written into its search words (as a
// configuration's "describe": {"searchWords"} would), and half 1's
// requests, which chose nothing, say what that gained.

// maxMendWords bounds the words suggested for one tool.
const maxMendWords = 8

// minRarity leaves out of suggestions the words of English's first few
// hundred ("after", "like", "finally"), which say nothing of a tool.
const minRarity = 0.6

// Mending is what writing suggested words into tools' search words did.
type Mending struct {
	// Words are the suggested search words, by tool id: the words of the
	// half-0 requests that needed the tool and missed it, most used
	// first, that the tool's own text lacks.
	Words map[string][]string
	// Gain is, by tool id, the recall@k it added on half 1, over the
	// answerable requests of half 1 (measured with every suggestion
	// written at once).
	Gain map[string]float64
	// Before and After are recall@k on half 1, without and with.
	Before, After float64
}

// Mend suggests words for each tool of ids from half 0 of ds and
// measures them on half 1, searching with engines build makes.
func Mend(ctx context.Context, ds *Dataset, build func(*catalog.Catalog) (search.Engine, error), ids []string, k int) (*Mending, error) {
	eng, err := build(ds.Catalog)
	if err != nil {
		return nil, err
	}
	want := map[string]bool{}
	for _, id := range ids {
		want[id] = true
	}
	counts := map[string]map[string]int{}
	for _, q := range ds.Queries {
		if Half(q) != 0 || len(q.Groups) == 0 {
			continue
		}
		found, err := foundIDs(ctx, eng, q.Text, k)
		if err != nil {
			return nil, err
		}
		for _, g := range q.Groups {
			if slices.ContainsFunc(g, func(id string) bool { return found[id] }) {
				continue
			}
			for _, id := range g {
				if !want[id] {
					continue
				}
				if counts[id] == nil {
					counts[id] = map[string]int{}
				}
				for w := range words(q.Text) {
					counts[id][w]++
				}
			}
		}
	}
	m := &Mending{Words: map[string][]string{}, Gain: map[string]float64{}}
	entries := make([]catalog.Entry, 0, ds.Catalog.Len())
	for e := range ds.Catalog.All() {
		c := *e
		if ws := suggest(counts[e.ID], e); len(ws) > 0 {
			m.Words[e.ID] = ws
			c.SearchHint = strings.TrimSpace(c.SearchHint + " " + strings.Join(ws, " "))
		}
		entries = append(entries, c)
	}
	mended, err := build(catalog.New(entries, ds.Catalog.Servers()))
	if err != nil {
		return nil, err
	}
	answerable := 0
	for _, q := range ds.Queries {
		if Half(q) != 1 || len(q.Groups) == 0 {
			continue
		}
		answerable++
		before, err := foundIDs(ctx, eng, q.Text, k)
		if err != nil {
			return nil, err
		}
		after, err := foundIDs(ctx, mended, q.Text, k)
		if err != nil {
			return nil, err
		}
		for _, g := range q.Groups {
			has := func(found map[string]bool) bool {
				return slices.ContainsFunc(g, func(id string) bool { return found[id] })
			}
			b, a := has(before), has(after)
			share := 1 / float64(len(q.Groups))
			if b {
				m.Before += share
			}
			if a {
				m.After += share
			}
			if a != b {
				// Credited to the group's mended tools (or debited).
				for _, id := range g {
					if _, ok := m.Words[id]; ok {
						if a {
							m.Gain[id] += share
						} else {
							m.Gain[id] -= share
						}
					}
				}
			}
		}
	}
	if answerable > 0 {
		m.Before, m.After = round(m.Before/float64(answerable), 4), round(m.After/float64(answerable), 4)
		for id, g := range m.Gain {
			m.Gain[id] = round(g/float64(answerable), 4)
		}
	}
	return m, nil
}

// foundIDs are the ids of an engine's top k for a request.
func foundIDs(ctx context.Context, eng search.Engine, q string, k int) (map[string]bool, error) {
	hits, err := eng.Search(ctx, q, k)
	if err != nil && ctx.Err() != nil {
		return nil, ctx.Err()
	}
	found := map[string]bool{}
	for _, h := range hits {
		found[h.Entry.ID] = true
	}
	return found, nil
}

// words are a request's words as search words: lower case, stop words
// and numbers left out.
func words(q string) map[string]bool {
	out := map[string]bool{}
	for _, w := range search.Tokenize(q) {
		if len(w) > 2 && !search.IsStopWord(w) && strings.Trim(w, "0123456789") != "" {
			out[w] = true
		}
	}
	return out
}

// suggest picks, of the words requests used for a tool, those its own
// text lacks and that say something (not among English's commonest
// words), most used first (ties by word), at most maxMendWords; when
// several requests missed the tool, only words more than one used.
func suggest(counts map[string]int, e *catalog.Entry) []string {
	if len(counts) == 0 {
		return nil
	}
	least := 1
	for _, n := range counts {
		least = max(least, min(n, 2)) // 2 once any word was used twice
	}
	own := words(e.Name + " " + e.Title + " " + e.Description + " " + e.SearchHint)
	var ws []string
	for w, n := range counts {
		if !own[w] && n >= least && search.Rarity(w) >= minRarity {
			ws = append(ws, w)
		}
	}
	slices.SortFunc(ws, func(a, b string) int {
		if c := cmp.Compare(counts[b], counts[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	if len(ws) > maxMendWords {
		ws = ws[:maxMendWords]
	}
	return ws
}
