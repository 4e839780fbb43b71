package search

import (
	"context"
	"slices"
	"testing"
)

// The built-in word vectors find tools by meaning where no word is
// shared, and the hybrid engine adds those finds to the lexical ones.
func TestWordVectors(t *testing.T) {
	c := tinyCatalog(t,
		[3]string{"weather", "get_forecast", "Get the forecast for a city"},
		[3]string{"mail", "send_email", "Send an email message to an address"},
		[3]string{"billing", "create_invoice", "Create an invoice for a customer"},
		[3]string{"fs", "read_file", "Read the contents of a file"},
	)
	sem := newWordSemantic(c)
	hyb := NewHybrid(c)
	lex := NewBM25(c)
	for _, tc := range []struct{ query, want string }{
		{"is it going to rain in Paris tomorrow", "get_forecast"},
		{"contact my colleague", "send_email"},
	} {
		if hits, _ := lex.Search(context.Background(), tc.query, 1); len(hits) > 0 && hits[0].Entry.Tool == tc.want {
			t.Errorf("bm25 found %s for %q: the case tests nothing", tc.want, tc.query)
		}
		for name, e := range map[string]Engine{"semantic": sem, "hybrid": hyb} {
			hits, err := e.Search(context.Background(), tc.query, 1)
			if err != nil || len(hits) != 1 || hits[0].Entry.Tool != tc.want {
				t.Errorf("%s %q = %v %v, want %s", name, tc.query, hits, err, tc.want)
			}
		}
	}
	// Words the vectors do not know match nothing, rather than anything.
	if hits, err := sem.Search(context.Background(), "zzyzx qwfp", 3); err != nil || len(hits) != 0 {
		t.Errorf("unknown words: %v %v, want no hits", hits, err)
	}
}

// A large batch is embedded on every core, to the same vectors.
func TestWordVectorsParallel(t *testing.T) {
	c := realCatalog(t)
	var texts []string
	for len(texts) < minParallel+1 {
		for e := range c.All() {
			texts = append(texts, EmbedText(e))
		}
	}
	all, _ := WordVectors{}.Embed(context.Background(), texts)
	for i, text := range texts {
		one, _ := WordVectors{}.Embed(context.Background(), []string{text})
		if !slices.Equal(one[0], all[i]) {
			t.Fatalf("text %d embeds differently alone and in a batch", i)
		}
	}
}
