package search

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
)

// An Embedder turns texts into vectors: a model behind an embeddings
// endpoint (package embedding), usually with a disk cache in front.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Semantic ranks tools by the cosine similarity of their embedding to the
// query's. Tool embeddings are computed once, when the engine is built.
type Semantic struct {
	cat  *catalog.Catalog
	emb  Embedder
	dims int
	vecs []float32 // unit vectors, dims per entry, by entry index
}

// EmbedText is the text of a tool that is embedded: its qualified name,
// title, description, search hint and parameters.
func EmbedText(e *catalog.Entry) string {
	var b strings.Builder
	for i, w := range Tokenize(e.Name) {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(w)
	}
	if e.Title != "" {
		b.WriteString(". ")
		b.WriteString(e.Title)
	}
	if e.Description != "" {
		b.WriteString(". ")
		b.WriteString(e.Description)
	}
	if e.SearchHint != "" {
		b.WriteString(". ")
		b.WriteString(e.SearchHint)
	}
	for _, p := range e.Params {
		b.WriteByte('\n')
		b.WriteString(p.Name)
		if p.Description != "" {
			b.WriteString(": ")
			b.WriteString(p.Description)
		}
	}
	return b.String()
}

// NewSemantic embeds every tool of c.
func NewSemantic(ctx context.Context, c *catalog.Catalog, emb Embedder) (*Semantic, error) {
	texts := make([]string, c.Len())
	for i := range texts {
		texts[i] = EmbedText(c.Entry(i))
	}
	vecs, err := emb.Embed(ctx, texts)
	if err != nil {
		return nil, fmt.Errorf("embedding %d tools: %w", len(texts), err)
	}
	if len(vecs) != len(texts) {
		return nil, fmt.Errorf("embedding %d tools: got %d vectors", len(texts), len(vecs))
	}
	s := &Semantic{cat: c, emb: emb}
	if len(vecs) == 0 {
		return s, nil
	}
	s.dims = len(vecs[0])
	s.vecs = make([]float32, 0, len(vecs)*s.dims)
	for _, v := range vecs {
		if len(v) != s.dims {
			return nil, fmt.Errorf("embedding %d tools: vectors of %d and %d dimensions", len(vecs), s.dims, len(v))
		}
		s.vecs = append(s.vecs, unit(v)...)
	}
	return s, nil
}

func isZero(v []float32) bool {
	for _, x := range v {
		if x != 0 {
			return false
		}
	}
	return true
}

func unit(v []float32) []float32 {
	var n float64
	for _, x := range v {
		n += float64(x) * float64(x)
	}
	if n == 0 {
		return v
	}
	out := make([]float32, len(v))
	f := float32(1 / math.Sqrt(n))
	for i, x := range v {
		out[i] = x * f
	}
	return out
}

// Search implements Engine. select: and mcp__ prefixes work as in the
// lexical engines; other queries are embedded and compared.
func (s *Semantic) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	q, limit, hits, done, err := begin(ctx, s.cat, query, limit, DefaultBM25Limit)
	if done {
		return hits, err
	}
	vs, err := s.embed(ctx, []string{q.Text})
	if err != nil {
		return nil, err
	}
	return s.rank(vs[0], limit), nil
}

// embed embeds texts, as unit vectors; in a catalog with no tools, as
// nothing.
func (s *Semantic) embed(ctx context.Context, texts []string) ([][]float32, error) {
	if s.dims == 0 {
		return make([][]float32, len(texts)), nil
	}
	vs, err := s.emb.Embed(ctx, texts)
	if err != nil {
		return nil, err
	}
	if len(vs) != len(texts) {
		return nil, fmt.Errorf("the embedder returned %d vectors for %d texts", len(vs), len(texts))
	}
	for i, v := range vs {
		if len(v) != s.dims {
			return nil, fmt.Errorf("the embedder returned a vector of %d dimensions, want %d", len(v), s.dims)
		}
		vs[i] = unit(v)
	}
	return vs, nil
}

// rank returns the limit tools nearest to the unit vector qv; none when
// qv is zero, the vector of a text the embedder knew nothing of.
func (s *Semantic) rank(qv []float32, limit int) []Hit {
	if isZero(qv) {
		return nil
	}
	top := topK{limit: limit}
	for i := range s.cat.Len() {
		v := s.vecs[i*s.dims : (i+1)*s.dims]
		var dot float32
		for d, x := range qv {
			dot += x * v[d]
		}
		h := Hit{Entry: s.cat.Entry(i), Score: float64(dot)}
		if top.accepts(&h) {
			h.Matches = []Match{{Term: "embedding", Fields: []string{"semantic"}, Score: h.Score}}
			top.push(h)
		}
	}
	return top.sorted()
}

// Hybrid fuses a lexical and a semantic ranking by reciprocal rank: each
// hit scores w/(k + rank) in each list it is in. Lexical search is exact
// on names and rare words, embeddings on paraphrase; fusing ranks rather
// than scores needs no calibration between them.
//
// A multi-step request is fused step by step: the whole request and each
// of its clauses (see clauses) is searched both ways and fused, and those
// rankings are fused as the BM25 engine fuses its clauses. One embedding
// of a whole multi-step request averages its steps into none of them.
//
// When the semantic side fails (the endpoint is down), results are the
// lexical ones, and OnFallback is told, once.
type Hybrid struct {
	Lexical  Engine
	Semantic *Semantic
	// Weight is the semantic ranking's weight in the fusion, the lexical
	// one's being 1; 0 means DefaultSemanticWeight. A weaker model should
	// count for less.
	Weight float64
	// OnFallback, if set, is called the first time the semantic side
	// fails.
	OnFallback func(error)

	once sync.Once
}

// Hybrid fusion's constants, measured with toolshelf eval
// (docs/search-quality.md): the top of each list counts most (k = 5), and
// each list is read 20 deep.
const (
	hybridK     = 5
	hybridDepth = 20
)

// DefaultSemanticWeight is a hybrid engine's default semantic weight,
// measured with a small sentence encoder (docs/search-quality.md): higher,
// it pulls look-alike tools above exact name matches.
const DefaultSemanticWeight = 0.5

// Search implements Engine.
func (h *Hybrid) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	if h.Semantic == nil {
		return h.Lexical.Search(ctx, query, limit)
	}
	q, limit, hits, done, err := begin(ctx, h.Semantic.cat, query, limit, DefaultBM25Limit)
	if done {
		return hits, err
	}
	if len(q.required()) > 0 {
		// +words are for exact matching, which embeddings know nothing of.
		return h.Lexical.Search(ctx, query, limit)
	}
	parts := append([]string{query}, clauses(q.Text)...)
	vecs, err := h.Semantic.embed(ctx, parts)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		h.once.Do(func() {
			if h.OnFallback != nil {
				h.OnFallback(err)
			}
		})
		return h.Lexical.Search(ctx, query, limit)
	}
	lex := make([][]Hit, len(parts))
	fused := make([][]Hit, len(parts))
	weights := make([]float64, len(parts))
	for i, p := range parts {
		if lex[i], err = h.lexical(ctx, p); err != nil {
			return nil, err
		}
		sem := h.Semantic.rank(vecs[i], hybridDepth)
		fused[i] = fuse([][]Hit{lex[i], sem}, []string{"lexical", "semantic"}, []float64{1, cmp.Or(h.Weight, DefaultSemanticWeight)}, hybridK, hybridDepth)
		weights[i] = 1
	}
	weights[0] = defaultBM25.fuseWhole
	hits = fuse(fused, partLabels(parts[1:]), weights, defaultBM25.fuseK, limit)
	markWeak(hits, allWeak(lex))
	return hits, nil
}

// lexical ranks one part of a request lexically. A BM25 engine ranks it
// without splitting it into clauses: Search has done that already.
func (h *Hybrid) lexical(ctx context.Context, text string) ([]Hit, error) {
	b, ok := h.Lexical.(*BM25)
	if !ok {
		return h.Lexical.Search(ctx, text, hybridDepth)
	}
	q, err := ParseQuery(text)
	if err != nil {
		return nil, nil // a clause that is no query on its own
	}
	return b.part(q, q.required(), hybridDepth), nil
}
