package search

import (
	"context"
	"runtime"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/wordvec"
)

// WordVectors is the built-in Embedder: a text's vector is the mean of
// its words' vectors (package wordvec), weighted by how rare each word is
// in English. It runs in process, needs no model server, and knows the
// 40,000 most frequent English words; words it does not know (most
// product names) it leaves to the lexical side of a hybrid engine.
type WordVectors struct{}

// Embed implements Embedder. It never fails. Large batches are embedded
// on every core.
func (WordVectors) Embed(_ context.Context, texts []string) ([][]float32, error) {
	m := wordvec.Builtin()
	out := make([][]float32, len(texts))
	shards := 1
	if len(texts) >= minParallel {
		shards = runtime.GOMAXPROCS(0)
	}
	parallel(shards, func(s int) {
		var words []string
		for i := s * len(texts) / shards; i < (s+1)*len(texts)/shards; i++ {
			words = appendTokens(words[:0], texts[i])
			out[i] = m.Embed(words)
		}
	})
	return out, nil
}

// NewHybrid builds a hybrid engine over c that embeds with the built-in
// word vectors. The two indexes are built side by side.
func NewHybrid(c *catalog.Catalog) *Hybrid {
	sem := make(chan *Semantic)
	go func() { sem <- newWordSemantic(c) }()
	lex := NewBM25(c)
	return &Hybrid{Lexical: lex, Semantic: <-sem, Weight: wordVectorsWeight}
}

// wordVectorsWeight is the built-in vectors' weight in a hybrid engine:
// at 0.3 they add 0.03 recall@5 on real users' requests (bfcl_live) and
// cost at most 0.01 anywhere else; at 0.5 they add 0.04 and cost up to
// 0.02 (docs/search-quality.md).
const wordVectorsWeight = 0.3

// newWordSemantic builds the semantic engine of the built-in word vectors.
func newWordSemantic(c *catalog.Catalog) *Semantic {
	s, err := NewSemantic(context.Background(), c, WordVectors{})
	if err != nil {
		panic("search: built-in word vectors: " + err.Error()) // WordVectors never fails
	}
	return s
}
