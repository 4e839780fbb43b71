package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/embedding"
	"github.com/toolshelf/toolshelf/search"
)

const engineHelp = `Engines: bm25 (default), keyword and regex are lexical; semantic ranks by
embeddings and hybrid fuses bm25 with them. Those two embed with
toolshelf's built-in word vectors, or with a model behind an
OpenAI-compatible embeddings endpoint: --embed-url (the API base, such as
http://localhost:11434/v1 for Ollama) and --embed-model, or
$TOOLSHELF_EMBED_URL and $TOOLSHELF_EMBED_MODEL ($TOOLSHELF_EMBED_API_KEY
for a key). A model's tool embeddings are cached on disk by content, and
embedding them shows progress on a terminal.`

// engineFlags are the flags that choose and configure an engine.
type engineFlags struct {
	kind, url, model string
}

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.kind, "engine", search.DefaultEngine, "search `ENGINE`: "+strings.Join(search.Kinds, ", "))
	fs.StringVar(&f.url, "embed-url", "", "embeddings endpoint `URL` for the semantic and hybrid engines (default: built-in word vectors)")
	fs.StringVar(&f.model, "embed-model", "", "embedding `MODEL` at --embed-url")
}

// check validates the flags before any work is done.
func (f *engineFlags) check(e *env) error {
	switch f.kind {
	case "semantic", "hybrid":
		if f.url == "" {
			f.url = e.getenv("TOOLSHELF_EMBED_URL")
		}
		if f.model == "" {
			f.model = e.getenv("TOOLSHELF_EMBED_MODEL")
		}
		if (f.url == "") != (f.model == "") {
			return usagef("--engine %s with a model needs both --embed-url and --embed-model (or $TOOLSHELF_EMBED_URL and $TOOLSHELF_EMBED_MODEL)", f.kind)
		}
		return nil
	}
	if _, err := search.Kind(f.kind); err != nil {
		return usagef("%v", err)
	}
	return nil
}

// embedder returns the cached embedder of the model at --embed-url, or
// nil when none is configured.
func (f *engineFlags) embedder(e *env) search.Embedder {
	if (f.kind != "semantic" && f.kind != "hybrid") || f.url == "" {
		return nil
	}
	opts := &embedding.Options{APIKey: e.getenv("TOOLSHELF_EMBED_API_KEY")}
	if isTerminal(e.stderr) {
		drawn := false // searches are sequential in the CLI
		opts.Progress = func(done, total int) {
			switch {
			case done < total:
				fmt.Fprintf(e.stderr, "\r\033[Kembedding with %s: %d/%d", f.model, done, total)
				drawn = true
			case drawn:
				fmt.Fprint(e.stderr, "\r\033[K")
				drawn = false
			}
		}
	}
	return embedding.NewCache(embedding.DefaultDir(), f.model, embedding.NewClient(f.url, f.model, opts))
}

// build makes the engine over c. A hybrid engine whose endpoint fails
// later falls back to bm25 and says so once on stderr.
func (f *engineFlags) build(ctx context.Context, e *env, c *catalog.Catalog) (search.Engine, error) {
	emb := f.embedder(e)
	if emb == nil {
		eng, err := search.New(f.kind, c)
		if err != nil {
			return nil, badInput(err)
		}
		return eng, nil
	}
	eng, err := search.NewEmbedded(ctx, f.kind, c, emb)
	if err != nil {
		return nil, err
	}
	if h, ok := eng.(*search.Hybrid); ok {
		h.OnFallback = func(err error) {
			fmt.Fprintf(e.stderr, "toolshelf: the embeddings endpoint failed (%v); searching with bm25 alone\n", err)
		}
	}
	return eng, nil
}
