// Package embedding computes text embeddings with any OpenAI-compatible
// /v1/embeddings endpoint (Ollama, vLLM, llama.cpp's server, OpenAI), and
// caches them on disk by content, so that a restart embeds nothing it has
// embedded before. It gives package search's semantic and hybrid engines
// their vectors.
//
// It is public because gateway.Options.Embedder takes a search.Embedder:
// a program that embeds the gateway gives it a model's embeddings with a
// [Client] (and a [Cache]), as toolshelf serve --embed-url does.
package embedding

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// Client calls an embeddings endpoint.
type Client struct {
	url    string
	model  string
	apiKey string
	http   *http.Client
	batch  int
	// progress is told after every batch
	progress func(done, total int)
}

// Options configures a Client. Nil means defaults.
type Options struct {
	// APIKey is sent as a bearer token when set.
	APIKey string
	// BatchSize is how many texts go in one request (default 64).
	BatchSize int
	// HTTPClient defaults to one with a one-minute timeout.
	HTTPClient *http.Client
	// Progress, if set, is called after each batch of an Embed call with
	// the number of its texts embedded so far: the first embedding of a
	// large catalog can take minutes.
	Progress func(done, total int)
}

// NewClient returns a client for the endpoint at url, which is either the
// API's base ("http://localhost:11434/v1") or the embeddings URL itself.
func NewClient(url, model string, opts *Options) *Client {
	url = strings.TrimRight(url, "/")
	if !strings.HasSuffix(url, "/embeddings") {
		url += "/embeddings"
	}
	c := &Client{url: url, model: model, http: &http.Client{Timeout: time.Minute}, batch: 64}
	if opts != nil {
		c.apiKey = opts.APIKey
		if opts.BatchSize > 0 {
			c.batch = opts.BatchSize
		}
		if opts.HTTPClient != nil {
			c.http = opts.HTTPClient
		}
		c.progress = opts.Progress
	}
	return c
}

// Model returns the model name, which cache keys include.
func (c *Client) Model() string { return c.model }

// Embed returns one vector per text, in order.
func (c *Client) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	out := make([][]float32, 0, len(texts))
	for start := 0; start < len(texts); start += c.batch {
		vs, err := c.embedBatch(ctx, texts[start:min(start+c.batch, len(texts))])
		if err != nil {
			return nil, err
		}
		out = append(out, vs...)
		if c.progress != nil {
			c.progress(len(out), len(texts))
		}
	}
	return out, nil
}

func (c *Client) embedBatch(ctx context.Context, texts []string) ([][]float32, error) {
	body, _ := json.Marshal(map[string]any{"model": c.model, "input": texts})
	req, err := http.NewRequestWithContext(ctx, "POST", c.url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint: %w", err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, 256<<20))
	if err != nil {
		return nil, fmt.Errorf("embeddings endpoint: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("embeddings endpoint: %s: %s", resp.Status, strings.TrimSpace(string(data[:min(len(data), 200)])))
	}
	var r struct {
		Data []struct {
			Index     int       `json:"index"`
			Embedding []float32 `json:"embedding"`
		} `json:"data"`
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("embeddings endpoint: the answer is not an embeddings response: %v", err)
	}
	if len(r.Data) != len(texts) {
		return nil, fmt.Errorf("embeddings endpoint: %d vectors for %d texts", len(r.Data), len(texts))
	}
	out := make([][]float32, len(texts))
	for _, d := range r.Data {
		if d.Index < 0 || d.Index >= len(texts) || out[d.Index] != nil {
			return nil, errors.New("embeddings endpoint: the answer's indexes do not match the texts")
		}
		out[d.Index] = d.Embedding
	}
	return out, nil
}
