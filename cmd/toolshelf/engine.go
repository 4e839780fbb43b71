package main

import (
	"context"
	"flag"
	"fmt"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/embed"
	"github.com/toolshelf/toolshelf/search"
)

// engineKinds are the engines the CLI offers: the lexical ones, and the
// two that need an embeddings endpoint.
var engineKinds = append(append([]string{}, search.Kinds...), "semantic", "hybrid")

const engineHelp = `Engines: bm25 (default), keyword and regex are lexical; semantic ranks by
embeddings and hybrid fuses bm25 with them. Those two need an
OpenAI-compatible embeddings endpoint: --embed-url (the API base, such as
http://localhost:11434/v1 for Ollama) and --embed-model, or
$TOOLSHELF_EMBED_URL and $TOOLSHELF_EMBED_MODEL ($TOOLSHELF_EMBED_API_KEY
for a key). Tool embeddings are cached on disk by content.`

// engineFlags are the flags that choose and configure an engine.
type engineFlags struct {
	kind, url, model string
}

func (f *engineFlags) register(fs *flag.FlagSet) {
	fs.StringVar(&f.kind, "engine", "bm25", "search `ENGINE`: "+strings.Join(engineKinds, ", "))
	fs.StringVar(&f.url, "embed-url", "", "embeddings endpoint `URL`, for the semantic and hybrid engines")
	fs.StringVar(&f.model, "embed-model", "", "embedding `MODEL`, for the semantic and hybrid engines")
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
		if f.url == "" || f.model == "" {
			return usagef("--engine %s needs --embed-url and --embed-model (or $TOOLSHELF_EMBED_URL and $TOOLSHELF_EMBED_MODEL)", f.kind)
		}
		return nil
	}
	if _, err := search.New(f.kind, catalog.New(nil, nil)); err != nil {
		return usagef("unknown engine %q (want one of %s)", f.kind, strings.Join(engineKinds, ", "))
	}
	return nil
}

// embedder returns the cached embedder, or nil for a lexical engine.
func (f *engineFlags) embedder(e *env) search.Embedder {
	if f.kind != "semantic" && f.kind != "hybrid" {
		return nil
	}
	client := embed.NewClient(f.url, f.model, &embed.Options{APIKey: e.getenv("TOOLSHELF_EMBED_API_KEY")})
	return embed.NewCache(embed.DefaultDir(), f.model, client)
}

// lexicalKind is the lexical engine under f.kind.
func (f *engineFlags) lexicalKind() string {
	if f.kind == "semantic" || f.kind == "hybrid" {
		return "bm25"
	}
	return f.kind
}

// build makes the engine over c. A hybrid engine whose endpoint fails
// later falls back to bm25 and says so once on stderr.
func (f *engineFlags) build(ctx context.Context, e *env, c *catalog.Catalog) (search.Engine, error) {
	lex, err := search.New(f.lexicalKind(), c)
	if err != nil {
		return nil, badInput(err)
	}
	emb := f.embedder(e)
	if emb == nil {
		return lex, nil
	}
	sem, err := search.NewSemantic(ctx, c, emb)
	if err != nil {
		return nil, err
	}
	if f.kind == "semantic" {
		return sem, nil
	}
	return &search.Hybrid{Lexical: lex, Semantic: sem, OnFallback: func(err error) {
		fmt.Fprintf(e.stderr, "toolshelf: the embeddings endpoint failed (%v); searching with bm25 alone\n", err)
	}}, nil
}
