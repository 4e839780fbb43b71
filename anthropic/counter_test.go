package anthropic

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// countServer answers count_tokens as the real endpoint does: it checks
// the headers and the body's shape and returns {"input_tokens": N}, here
// 10 for the messages, plus 500 and the characters of the tools / 4 when
// there are tools.
func countServer(t *testing.T, calls *atomic.Int32) *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.URL.Path != "/v1/messages/count_tokens" || r.Method != "POST" {
			http.Error(w, `{"type":"error","error":{"type":"not_found_error","message":"no such endpoint"}}`, 404)
			return
		}
		if r.Header.Get("x-api-key") != "sk-test" || r.Header.Get("anthropic-version") != APIVersion {
			w.WriteHeader(401)
			io.WriteString(w, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`)
			return
		}
		var body struct {
			Model    string            `json:"model"`
			Messages []json.RawMessage `json:"messages"`
			Tools    []json.RawMessage `json:"tools"`
		}
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil || body.Model == "" || len(body.Messages) == 0 {
			w.WriteHeader(400)
			io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"model and messages are required"}}`)
			return
		}
		n := 10
		if len(body.Tools) > 0 {
			n += 500
			for _, tl := range body.Tools {
				n += len(tl) / 4
			}
		}
		json.NewEncoder(w).Encode(map[string]int{"input_tokens": n})
	}))
}

func TestTokenCounter(t *testing.T) {
	var calls atomic.Int32
	srv := countServer(t, &calls)
	defer srv.Close()
	c := &TokenCounter{Client: NewClient("sk-test", &Options{BaseURL: srv.URL}), Model: "claude-sonnet-4-5"}
	defs := []json.RawMessage{
		json.RawMessage(`{"name":"b","description":"` + string(make([]byte, 0)) + `xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx","input_schema":{"type":"object"}}`),
		json.RawMessage(`{"name":"a","input_schema":{"type":"object"}}`),
	}
	want := len(defs[0])/4 + len(defs[1])/4
	n, err := c.CountTokens(context.Background(), defs)
	if err != nil || n != want {
		t.Fatalf("CountTokens = %d, %v; want %d", n, err, want)
	}
	if calls.Load() != 2 {
		t.Errorf("%d requests, want 2 (baseline and tools)", calls.Load())
	}
	// The same set in another order is cached.
	if n, _ := c.CountTokens(context.Background(), []json.RawMessage{defs[1], defs[0]}); n != want || calls.Load() != 2 {
		t.Errorf("cached count = %d after %d requests", n, calls.Load())
	}
	// A changed set is counted again; the baseline is not.
	if n, _ := c.CountTokens(context.Background(), defs[:1]); n != len(defs[0])/4 || calls.Load() != 3 {
		t.Errorf("new set: %d after %d requests", n, calls.Load())
	}
}

func TestTokenCounterErrors(t *testing.T) {
	var calls atomic.Int32
	srv := countServer(t, &calls)
	defer srv.Close()
	c := &TokenCounter{Client: NewClient("wrong", &Options{BaseURL: srv.URL}), Model: "m"}
	_, err := c.CountTokens(context.Background(), []json.RawMessage{json.RawMessage(`{"name":"a"}`)})
	var apiErr *Error
	if !errors.As(err, &apiErr) || apiErr.Status != 401 || apiErr.Type != "authentication_error" {
		t.Errorf("err = %v", err)
	}
	srv.Close()
	if _, err := c.CountTokens(context.Background(), nil); err == nil {
		t.Error("a closed server gave no error")
	}
}
