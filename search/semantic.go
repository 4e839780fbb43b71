package search

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
)

// An Embedder turns texts into vectors: a model behind an embeddings
// endpoint (package embed), usually with a disk cache in front.
type Embedder interface {
	Embed(ctx context.Context, texts []string) ([][]float32, error)
}

// Semantic ranks tools by the cosine similarity of their embedding to the
// query's. Tool embeddings are computed once, when the engine is built.
type Semantic struct {
	cat  *catalog.Catalog
	emb  Embedder
	vecs [][]float32 // unit vectors, by entry index
}

// EmbedText is the text of a tool that is embedded: its qualified name,
// title, description and parameters.
func EmbedText(e *catalog.Entry) string {
	var b strings.Builder
	b.WriteString(strings.Join(Tokenize(e.Name), " "))
	if e.Title != "" {
		b.WriteString(". " + e.Title)
	}
	if e.Description != "" {
		b.WriteString(". " + e.Description)
	}
	for _, p := range e.Params {
		b.WriteString("\n" + p.Name)
		if p.Description != "" {
			b.WriteString(": " + p.Description)
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
	for i := range vecs {
		vecs[i] = unit(vecs[i])
	}
	return &Semantic{cat: c, emb: emb, vecs: vecs}, nil
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
	s := float32(1 / math.Sqrt(n))
	for i, x := range v {
		out[i] = x * s
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
	vs, err := s.emb.Embed(ctx, []string{q.Text})
	if err != nil {
		return nil, err
	}
	if len(vs) != 1 {
		return nil, errors.New("the embedder returned no vector for the query")
	}
	qv := unit(vs[0])
	top := topK{limit: limit}
	for i, v := range s.vecs {
		if len(v) != len(qv) {
			continue
		}
		var dot float32
		for j := range v {
			dot += v[j] * qv[j]
		}
		top.push(Hit{Entry: s.cat.Entry(i), Score: float64(dot), Matches: []Match{{Term: "embedding", Fields: []string{"semantic"}, Score: float64(dot)}}})
	}
	return top.sorted(), nil
}

// Hybrid fuses a lexical and a semantic ranking by reciprocal rank: each
// hit scores 1/(k + rank) in each list it is in. Lexical search is exact
// on names and rare words, embeddings on paraphrase; fusing ranks rather
// than scores needs no calibration between them. When the semantic side
// fails (the endpoint is down), results are the lexical ones, and
// OnFallback is told, once.
type Hybrid struct {
	Lexical  Engine
	Semantic *Semantic
	// OnFallback, if set, is called the first time the semantic side
	// fails.
	OnFallback func(error)

	once sync.Once
}

// hybridK is the reciprocal rank constant: small, so that the top of
// each list counts most.
const hybridK = 5

// hybridDepth is how deep each list is read.
const hybridDepth = 20

// Search implements Engine.
func (h *Hybrid) Search(ctx context.Context, query string, limit int) ([]Hit, error) {
	limit, err := checkLimit(limit, DefaultBM25Limit)
	if err != nil {
		return nil, err
	}
	lex, err := h.Lexical.Search(ctx, query, max(limit, hybridDepth))
	if err != nil {
		return nil, err
	}
	q, _ := ParseQuery(query)
	if q.Select != nil || h.Semantic == nil {
		return lex[:min(limit, len(lex))], nil
	}
	sem, err := h.Semantic.Search(ctx, query, max(limit, hybridDepth))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		h.once.Do(func() {
			if h.OnFallback != nil {
				h.OnFallback(err)
			}
		})
		return lex[:min(limit, len(lex))], nil
	}
	hits := fuse([][]Hit{lex, sem}, []float64{1, 1}, hybridK, limit)
	if len(lex) > 0 && lex[0].Weak {
		for i := range hits {
			hits[i].Weak = true
		}
	}
	return hits, nil
}
