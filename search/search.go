// Package search finds tools in a catalog snapshot.
//
// An [Engine] is built once from a [catalog.Catalog] and is immutable, so
// one engine serves any number of concurrent searches; a new catalog
// snapshot gets a new engine. Three engines share the query grammar of
// [ParseQuery]:
//
//   - [Keyword], the name-part scorer Claude Code's tool search uses
//     (select:, +required terms, the mcp__ prefix fast path);
//   - [BM25], BM25+ over weighted fields, as oh-my-pi's search_tool_bm25;
//   - [Regex], a case-insensitive regular expression over names,
//     descriptions and parameters, as the Messages API's regex tool search.
//
// [Semantic] ranks by embeddings, from any [Embedder]: the built-in
// [WordVectors], or a model behind an endpoint (package embedding). [Hybrid]
// fuses BM25 with it.
//
// Every hit carries its score and the fields each query term matched, so
// that a ranking can be explained.
//
// The package is pure: it does no network or process I/O.
package search

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
)

// Engine searches one catalog snapshot. Implementations are immutable and
// safe for concurrent use.
type Engine interface {
	// Search returns at most limit hits for query, best first. A limit of
	// zero means the engine's default; a negative limit is an error.
	Search(ctx context.Context, query string, limit int) ([]Hit, error)
}

// Hit is one search result.
type Hit struct {
	Entry *catalog.Entry
	// Score is the engine's relevance score; only its order is meaningful.
	Score float64
	// Matches explains the score: what each query term matched.
	Matches []Match
	// Weak marks the hits of a search whose best match is weak: probably
	// no tool fits the query, and these are only the closest. WeakReason
	// says why, in words a person or a model reads (one of the Weak…
	// reasons).
	Weak       bool
	WeakReason string
	// Companions are the tools that produce what this one needs (see
	// Companions), when the searcher names them (package shelf does).
	Companions []*catalog.Entry
}

// Match records where one query term matched and what it contributed.
type Match struct {
	Term   string   `json:"term"`
	Fields []string `json:"fields"`
	Score  float64  `json:"score"`
}

// Field names used in matches.
const (
	FieldName        = "name"        // the qualified name
	FieldTitle       = "title"       // the tool's display title
	FieldTool        = "tool"        // the tool's own name
	FieldServer      = "server"      // the server's name
	FieldDescription = "description" // the tool's description
	FieldHint        = "hint"        // _meta["anthropic/searchHint"]
	FieldParams      = "params"      // input schema property names
	FieldParamDescs  = "param_descriptions"
	FieldSelect      = "select"      // named by a select: query
	FieldServerInfo  = "server_info" // the server's description and instructions
	FieldGloss       = "translation" // the English meanings of a Chinese description's words
)

// Default result counts.
const (
	DefaultKeywordLimit = 5
	DefaultBM25Limit    = 8
	DefaultRegexLimit   = 5
)

// DefaultEngine is the engine every face uses unless told otherwise.
const DefaultEngine = "bm25"

// An EngineKind is one engine that [New] can build: the one table of
// engines, so that adding one is one entry here.
type EngineKind struct {
	Name string
	// Embeds reports that the engine ranks by embeddings. [New] builds it
	// with the built-in word vectors; [NewEmbedded] with a model.
	Embeds bool
	build  func(*catalog.Catalog) Engine
	// embedded builds the engine with a model's embedder.
	embedded func(context.Context, *catalog.Catalog, Embedder) (Engine, error)
}

// Engines lists every engine kind, the default first.
var Engines = []EngineKind{
	{Name: "bm25", build: func(c *catalog.Catalog) Engine { return NewBM25(c) }},
	{Name: "keyword", build: func(c *catalog.Catalog) Engine { return NewKeyword(c) }},
	{Name: "regex", build: func(c *catalog.Catalog) Engine { return NewRegex(c) }},
	{Name: "semantic", Embeds: true,
		build: func(c *catalog.Catalog) Engine { return newWordSemantic(c) },
		embedded: func(ctx context.Context, c *catalog.Catalog, emb Embedder) (Engine, error) {
			return NewSemantic(ctx, c, emb)
		}},
	{Name: "hybrid", Embeds: true,
		build: func(c *catalog.Catalog) Engine { return NewHybrid(c) },
		embedded: func(ctx context.Context, c *catalog.Catalog, emb Embedder) (Engine, error) {
			sem, err := NewSemantic(ctx, c, emb)
			if err != nil {
				return nil, err
			}
			return &Hybrid{Lexical: NewBM25(c), Semantic: sem}, nil
		}},
}

// Kinds lists the names of the engines, the default first.
var Kinds = func() []string {
	var names []string
	for _, k := range Engines {
		names = append(names, k.Name)
	}
	return names
}()

// Kind returns the engine kind of a name ("" is the default).
func Kind(name string) (EngineKind, error) {
	if name == "" {
		name = DefaultEngine
	}
	for _, k := range Engines {
		if k.Name == name {
			return k, nil
		}
	}
	return EngineKind{}, fmt.Errorf("unknown engine %q (want one of %s)", name, strings.Join(Kinds, ", "))
}

// New returns an engine of the given kind over c ("" is the default).
// The semantic and hybrid engines embed with the built-in word vectors;
// see NewEmbedded for a model.
func New(kind string, c *catalog.Catalog) (Engine, error) {
	k, err := Kind(kind)
	if err != nil {
		return nil, err
	}
	if err := checkSize(c.Len()); err != nil {
		return nil, err
	}
	return k.build(c), nil
}

// NewEmbedded returns an engine of the given kind over c that embeds with
// emb, a model's embedder. Embedding every tool is the slow part; ctx
// bounds it. Kinds that do not embed ignore emb.
func NewEmbedded(ctx context.Context, kind string, c *catalog.Catalog, emb Embedder) (Engine, error) {
	k, err := Kind(kind)
	if err != nil {
		return nil, err
	}
	if err := checkSize(c.Len()); err != nil {
		return nil, err
	}
	if k.embedded == nil || emb == nil {
		return k.build(c), nil
	}
	return k.embedded(ctx, c, emb)
}

// checkSize refuses a catalog larger than an index holds ([MaxDocs]).
func checkSize(tools int) error {
	if tools > MaxDocs {
		return fmt.Errorf("a catalog of %d tools is more than a search index holds (%d)", tools, MaxDocs)
	}
	return nil
}

// checkLimit applies an engine's default limit and rejects negative ones.
func checkLimit(limit, def int) (int, error) {
	switch {
	case limit < 0:
		return 0, fmt.Errorf("limit must be a positive integer, got %d", limit)
	case limit == 0:
		return def, nil
	}
	return limit, nil
}

// begin does what every engine does first: it applies the default limit,
// parses the query, and answers mcp__ prefixes, which need no ranking.
// select: queries are answered by [Find] before any engine is asked, in
// one place for every face; an engine asked one directly finds nothing.
// done reports that hits is the answer.
func begin(ctx context.Context, c *catalog.Catalog, query string, limit, def int) (q Query, n int, hits []Hit, done bool, err error) {
	if n, err = checkLimit(limit, def); err != nil {
		return q, 0, nil, true, err
	}
	if q, err = ParseQuery(query); err != nil {
		return q, 0, nil, true, err
	}
	if err := ctx.Err(); err != nil {
		return q, 0, nil, true, err
	}
	if q.Select != nil {
		return q, n, nil, true, nil
	}
	if q.Prefix != "" {
		if hits := prefixHits(c, q.Prefix, n); len(hits) > 0 {
			return q, n, hits, true, nil
		}
	}
	return q, n, nil, false, nil
}

// prefixHits returns the entries whose qualified names start with prefix
// (compared without regard to case), in name order.
func prefixHits(c *catalog.Catalog, prefix string, limit int) []Hit {
	var hits []Hit
	for e := range c.All() {
		if len(e.Name) >= len(prefix) && strings.EqualFold(e.Name[:len(prefix)], prefix) {
			hits = append(hits, Hit{Entry: e, Score: 1, Matches: []Match{{Term: prefix, Fields: []string{FieldName}, Score: 1}}})
			if len(hits) == limit {
				break
			}
		}
	}
	return hits
}

// better orders hits by descending score, then by name.
func better(a, b *Hit) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Entry.Name < b.Entry.Name
}

// sortHits sorts hits best first.
func sortHits(hits []Hit) {
	sort.Slice(hits, func(i, j int) bool { return better(&hits[i], &hits[j]) })
}

// topK keeps the best limit hits of a stream, without sorting all of them.
type topK struct {
	limit int
	heap  []Hit // a min-heap by better: heap[0] is the worst kept
}

// accepts reports whether push(h) would keep h, so that costly checks can
// be left for the hits that matter.
func (t *topK) accepts(h *Hit) bool {
	return len(t.heap) < t.limit || better(h, &t.heap[0])
}

func (t *topK) push(h Hit) {
	if len(t.heap) < t.limit {
		t.heap = append(t.heap, h)
		t.up(len(t.heap) - 1)
		return
	}
	if !better(&h, &t.heap[0]) {
		return
	}
	t.heap[0] = h
	t.down(0)
}

func (t *topK) up(i int) {
	for i > 0 {
		p := (i - 1) / 2
		if !better(&t.heap[p], &t.heap[i]) {
			return
		}
		t.heap[p], t.heap[i] = t.heap[i], t.heap[p]
		i = p
	}
}

func (t *topK) down(i int) {
	n := len(t.heap)
	for {
		worst := i
		for _, c := range [2]int{2*i + 1, 2*i + 2} {
			if c < n && better(&t.heap[worst], &t.heap[c]) {
				worst = c
			}
		}
		if worst == i {
			return
		}
		t.heap[i], t.heap[worst] = t.heap[worst], t.heap[i]
		i = worst
	}
}

// sorted returns the kept hits, best first.
func (t *topK) sorted() []Hit {
	sortHits(t.heap)
	return t.heap
}
