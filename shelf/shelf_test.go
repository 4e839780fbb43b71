package shelf

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/search"
)

// gatedEmbedder embeds with the built-in word vectors once released, and
// fails while fail is set.
type gatedEmbedder struct {
	release chan struct{}
	fail    error
	tried   chan struct{} // closed on the first call, when not nil
	once    sync.Once
}

func (g *gatedEmbedder) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if g.tried != nil {
		g.once.Do(func() { close(g.tried) })
	}
	select {
	case <-g.release:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if g.fail != nil {
		return nil, g.fail
	}
	return search.WordVectors{}.Embed(ctx, texts)
}

func TestUpdateBuildsOncePerVersion(t *testing.T) {
	s, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	c := builtin.Catalog()
	a := s.Update(c)
	if b := s.Update(catalog.New(slicesOf(c), nil)); b == a {
		t.Error("a catalog of another version got the old snapshot")
	}
	before := s.Changed()
	d := s.Update(c)
	if again := s.Update(c); again != d {
		t.Error("the same catalog was built twice")
	}
	select {
	case <-before:
	default:
		t.Error("Changed was not closed by a new snapshot")
	}
	if _, ok := d.Engine().(*search.BM25); !ok {
		t.Errorf("default engine %T, want *search.BM25", d.Engine())
	}
	v := d.View(context.Background())
	if v.All.Tokens == 0 || v.All.Tokens != v.Deferrable.Tokens+v.Loaded.Tokens || d.View(context.Background()) != v {
		t.Errorf("view: all %d, deferrable %d, loaded %d", v.All.Tokens, v.Deferrable.Tokens, v.Loaded.Tokens)
	}
}

func slicesOf(c *catalog.Catalog) []catalog.Entry {
	var out []catalog.Entry
	for e := range c.All() {
		out = append(out, *e)
		if len(out) == 10 {
			break
		}
	}
	return out
}

// With a model's embedder, a snapshot searches with bm25 until Run has
// its embeddings, then hybrid; Run returns when its context ends, even
// in the middle of embedding.
func TestRunEmbeds(t *testing.T) {
	emb := &gatedEmbedder{release: make(chan struct{})}
	s, err := New(&Options{Engine: "hybrid", Embedder: emb})
	if err != nil {
		t.Fatal(err)
	}
	snap := s.Update(builtin.Catalog())
	if _, ok := snap.Engine().(*search.BM25); !ok {
		t.Fatalf("before embedding: %T, want *search.BM25", snap.Engine())
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { s.Run(ctx) })
	close(emb.release)
	testenv.Eventually(t, time.Minute, "the hybrid engine", func() bool {
		_, ok := snap.Engine().(*search.Hybrid)
		return ok
	})
	cancel()
	wg.Wait()

	// An embedder that fails leaves the lexical engine.
	failing := &gatedEmbedder{release: make(chan struct{}), fail: errors.New("503"), tried: make(chan struct{})}
	close(failing.release)
	s, _ = New(&Options{Engine: "hybrid", Embedder: failing})
	snap = s.Update(builtin.Catalog())
	ctx, cancel = context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { s.Run(ctx); close(done) }()
	<-failing.tried
	cancel()
	<-done
	if _, ok := snap.Engine().(*search.BM25); !ok {
		t.Errorf("after a failed embedding: %T, want *search.BM25", snap.Engine())
	}
}

func TestUnknownEngine(t *testing.T) {
	if _, err := New(&Options{Engine: "vector"}); err == nil {
		t.Error("an unknown engine was accepted")
	}
}
