// Package fakeembed is an OpenAI-compatible embeddings endpoint for
// tests. Its vectors are deterministic: a hashed bag of the text's words
// (with simple plural folding), so texts that share words are similar, and
// the same text always gets the same vector.
package fakeembed

import (
	"encoding/json"
	"hash/fnv"
	"net/http"
	"strings"
	"sync/atomic"
	"unicode"
)

// Dim is the vectors' dimension.
const Dim = 256

// Vector returns the embedding of text.
func Vector(text string) []float32 {
	v := make([]float32, Dim)
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		w = strings.TrimSuffix(w, "s")
		h := fnv.New32a()
		h.Write([]byte(w))
		v[h.Sum32()%Dim]++
	}
	return v
}

// Server counts the requests and texts it answers, and fails while Fail
// is set.
type Server struct {
	Requests atomic.Int64
	Texts    atomic.Int64
	Fail     atomic.Bool
}

// ServeHTTP answers POST /v1/embeddings.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.Requests.Add(1)
	if s.Fail.Load() {
		http.Error(w, `{"error":{"message":"model is loading"}}`, http.StatusServiceUnavailable)
		return
	}
	if r.Method != "POST" || !strings.HasSuffix(r.URL.Path, "/embeddings") {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	var req struct {
		Model string   `json:"model"`
		Input []string `json:"input"`
	}
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || req.Model == "" {
		http.Error(w, `{"error":{"message":"model and input are required"}}`, http.StatusBadRequest)
		return
	}
	s.Texts.Add(int64(len(req.Input)))
	type item struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float32 `json:"embedding"`
	}
	out := struct {
		Object string `json:"object"`
		Data   []item `json:"data"`
		Model  string `json:"model"`
	}{Object: "list", Model: req.Model}
	// Answer in reverse order: clients must use the indexes.
	for i := len(req.Input) - 1; i >= 0; i-- {
		out.Data = append(out.Data, item{"embedding", i, Vector(req.Input[i])})
	}
	json.NewEncoder(w).Encode(out)
}
