package upstream

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/folders"
)

// DefaultCacheDir is where tool lists are cached unless Options says
// otherwise: toolshelf/tools under the user's cache folder, as getenv
// (the command's environment; os.Getenv when nil) places it.
func DefaultCacheDir(getenv func(string) string) string {
	dir := folders.Cache(getenv)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "tools")
}

// cacheFile is what is cached for one server: its last good tool list
// and what else it offered.
type cacheFile struct {
	Server catalog.Server    `json:"server"`
	Saved  time.Time         `json:"saved"`
	Tools  []json.RawMessage `json:"tools"`
	Offer  *Offer            `json:"offer,omitempty"`
}

// cacheKey identifies a server by how it is reached, not by its name or
// environment: the same command and arguments serve the same tools, and
// the environment holds secrets that must not shape a file name.
func cacheKey(cfg *serverConfig) string {
	h := sha256.New()
	for _, s := range append([]string{cfg.TransportName(), cfg.Command, cfg.URL, cfg.Cwd}, cfg.Args...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:24]
}

// loadCache returns the cached tool list of a server, if there is one.
func loadCache(dir string, cfg *serverConfig) (*cacheFile, bool) {
	if dir == "" || cfg.TransportName() == "in-process" {
		return nil, false
	}
	data, err := os.ReadFile(filepath.Join(dir, cacheKey(cfg)+".json"))
	if err != nil {
		return nil, false
	}
	var f cacheFile
	if json.Unmarshal(data, &f) != nil || f.Tools == nil {
		return nil, false
	}
	return &f, true
}

// saveCache writes a server's tool list atomically: to a temporary file in
// the same folder, then renamed over the old one, so that a reader never
// sees half a file.
func saveCache(dir string, cfg *serverConfig, info catalog.Server, tools []json.RawMessage, offer *Offer) error {
	if dir == "" || cfg.TransportName() == "in-process" {
		return nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	data, err := json.Marshal(cacheFile{Server: info, Saved: time.Now().UTC(), Tools: tools, Offer: offer})
	if err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, ".tools-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if werr == nil {
		werr = cerr
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), filepath.Join(dir, cacheKey(cfg)+".json"))
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}
