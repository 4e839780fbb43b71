package embedding

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"

	"github.com/toolshelf/toolshelf/internal/folders"
	"github.com/toolshelf/toolshelf/search"
)

// Cache keeps embeddings on disk, one small file per text, named by the
// SHA-256 of the model and the text: a tool whose definition has not
// changed is never embedded again, across restarts and catalogs.
type Cache struct {
	dir   string
	model string
	inner search.Embedder
}

// NewCache returns a cache in dir for embeddings of model by inner.
func NewCache(dir, model string, inner search.Embedder) *Cache {
	return &Cache{dir: dir, model: model, inner: inner}
}

// DefaultDir is where embeddings are cached unless configured otherwise:
// toolshelf/embeddings under the user's cache folder.
func DefaultDir() string {
	dir := folders.Cache(nil)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "embeddings")
}

func (c *Cache) path(text string) string {
	h := sha256.Sum256([]byte(c.model + "\x00" + text))
	k := hex.EncodeToString(h[:])
	return filepath.Join(c.dir, k[:2], k[2:])
}

// Embed returns cached vectors and embeds only the texts it has not seen.
func (c *Cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, len(texts))
	var missing []string
	var at []int
	for i, t := range texts {
		if v, ok := c.load(t); ok {
			out[i] = v
			continue
		}
		missing = append(missing, t)
		at = append(at, i)
	}
	if len(missing) == 0 {
		return out, nil
	}
	vs, err := c.inner.Embed(ctx, missing)
	if err != nil {
		return nil, err
	}
	for j, v := range vs {
		out[at[j]] = v
		c.store(missing[j], v) // a cache that cannot write only costs time
	}
	return out, nil
}

func (c *Cache) load(text string) ([]float32, bool) {
	data, err := os.ReadFile(c.path(text))
	if err != nil || len(data)%4 != 0 || len(data) == 0 {
		return nil, false
	}
	v := make([]float32, len(data)/4)
	for i := range v {
		v[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
	}
	return v, true
}

// store writes a vector atomically: a temporary file renamed into place.
func (c *Cache) store(text string, v []float32) {
	p := c.path(text)
	if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
		return
	}
	data := make([]byte, 4*len(v))
	for i, x := range v {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
	}
	tmp, err := os.CreateTemp(filepath.Dir(p), ".vec-*")
	if err != nil {
		return
	}
	_, werr := tmp.Write(data)
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil || os.Rename(tmp.Name(), p) != nil {
		os.Remove(tmp.Name())
	}
}
