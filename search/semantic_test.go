package search

import (
	"context"
	"errors"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/toolshelf/toolshelf/internal/fakeembed"
)

// bagEmbedder embeds in-process with fakeembed's deterministic vectors,
// and fails while fail is set.
type bagEmbedder struct {
	calls atomic.Int64
	fail  atomic.Bool
	last  atomic.Pointer[[]string] // the texts of the last call
}

func (b *bagEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	b.calls.Add(1)
	b.last.Store(&texts)
	if b.fail.Load() {
		return nil, errors.New("embeddings endpoint: 503 Service Unavailable")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeembed.Vector(t)
	}
	return out, nil
}

func semanticCatalog(t *testing.T) *BM25 {
	c := tinyCatalog(t,
		[3]string{"github", "create_issue", "Create a new issue in a repository"},
		[3]string{"slack", "post_message", "Post a message to a channel"},
		[3]string{"fs", "read_file", "Read the contents of a file"},
	)
	return NewBM25(c)
}

func TestSemantic(t *testing.T) {
	lex := semanticCatalog(t)
	emb := &bagEmbedder{}
	sem, err := NewSemantic(context.Background(), lex.cat, emb)
	if err != nil {
		t.Fatal(err)
	}
	hits, err := sem.Search(context.Background(), "post a message to the team channel", 1)
	if err != nil || len(hits) != 1 || hits[0].Entry.Name != "mcp__slack__post_message" {
		t.Fatalf("semantic search: %v %v", hits, err)
	}
	if res, _ := Find(context.Background(), sem, lex.cat, Request{Query: "select:mcp__fs__read_file"}); len(res.Hits) != 1 || res.Hits[0].Entry.Tool != "read_file" {
		t.Errorf("select: %v", res.Hits)
	}

	var fallbacks []error
	h := &Hybrid{Lexical: lex, Semantic: sem, OnFallback: func(err error) { fallbacks = append(fallbacks, err) }}
	hits, err = h.Search(context.Background(), "contents of a file", 2)
	if err != nil || len(hits) == 0 || hits[0].Entry.Tool != "read_file" {
		t.Fatalf("hybrid: %v %v", hits, err)
	}
	// A multi-step request: each step's tool is near the top, and the
	// request and its clauses are embedded in one call.
	before := emb.calls.Load()
	hits, err = h.Search(context.Background(), "read the file notes.txt, then post a message to the team channel", 2)
	if err != nil || len(hits) != 2 {
		t.Fatalf("multi-step hybrid: %v %v", hits, err)
	}
	if got := []string{hits[0].Entry.Tool, hits[1].Entry.Tool}; !slices.Contains(got, "read_file") || !slices.Contains(got, "post_message") {
		t.Errorf("multi-step hybrid found %v, want read_file and post_message", got)
	}
	if n := emb.calls.Load() - before; n != 1 {
		t.Errorf("multi-step hybrid made %d embedding calls, want 1", n)
	}
	if texts := *emb.last.Load(); len(texts) != 3 || texts[1] != "read the file notes.txt" || texts[2] != "post a message to the team channel" {
		t.Errorf("multi-step hybrid embedded %q, want the request and its two clauses", texts)
	}

	// The endpoint fails: lexical results, and one notice however many
	// searches fail.
	emb.fail.Store(true)
	for range 3 {
		hits, err = h.Search(context.Background(), "create an issue", 1)
		if err != nil || len(hits) != 1 || hits[0].Entry.Tool != "create_issue" {
			t.Fatalf("fallback search: %v %v", hits, err)
		}
	}
	if len(fallbacks) != 1 || !strings.Contains(fallbacks[0].Error(), "503") {
		t.Errorf("fallback notices: %v", fallbacks)
	}
	if _, err := NewSemantic(context.Background(), lex.cat, emb); err == nil {
		t.Error("building with a failing embedder succeeded")
	}
}
