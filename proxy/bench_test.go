package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// BenchmarkCachedRequest measures what the proxy adds to a Messages API
// request carrying the built-in catalog's 519 tools (877 KB, as Claude
// Code sends them) once the catalog's plan is cached: a request is read,
// its tools deferred behind the search tool, and a small request sent to
// a model API on loopback, whose short answer is passed back.
func BenchmarkCachedRequest(b *testing.B) {
	answer := reply("end_turn", 10, 5, text("done"))
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer api.Close()
	p, err := New(&Options{Upstream: api.URL})
	if err != nil {
		b.Fatal(err)
	}
	tb, err := json.Marshal(builtinTools())
	if err != nil {
		b.Fatal(err)
	}
	body := []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are helpful.","tools":%s,"messages":[{"role":"user","content":"list the files"}]}`, tb))
	send := func() {
		req := httptest.NewRequest("POST", "/v1/messages", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Api-Key", "sk-client-key")
		rec := httptest.NewRecorder()
		p.ServeHTTP(rec, req)
		if rec.Code != 200 {
			b.Fatalf("status %d: %s", rec.Code, rec.Body)
		}
	}
	send() // the plan is made once, then cached
	b.SetBytes(int64(len(body)))
	b.ReportAllocs()
	for b.Loop() {
		send()
	}
}
