package proxy

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/ledger"
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

// BenchmarkLedger measures what the ledger adds to a proxied request: a
// small Messages API request that passes untouched to a model API on
// loopback, without a ledger, with the ledger file (admitted, then
// settled from the answer's usage), and with a budget that applies (its
// window's running sums read at each admission). clients=16 sends from 16
// goroutines at once: throughput with budgets on against off. p50-ns is
// the median request.
func BenchmarkLedger(b *testing.B) {
	answer := reply("end_turn", 10, 5, text("done"))
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	defer api.Close()
	body := []byte(`{"model":"claude-sonnet-4-5","max_tokens":1024,"messages":[{"role":"user","content":"list the files"}]}`)
	for _, c := range []struct {
		name    string
		ledger  bool
		budgets []ledger.Budget
	}{{"ledger=none", false, nil}, {"ledger=file", true, nil}, {"ledger=file+budget", true, []ledger.Budget{{For: "everyone", Requests: 1 << 40, USD: 1e9, Per: "day"}}}} {
		opts := &Options{Upstream: api.URL}
		if c.ledger {
			book, err := ledger.OpenFile(filepath.Join(b.TempDir(), ledger.FileName))
			if err != nil {
				b.Fatal(err)
			}
			opts.Ledger = ledger.New(book, &ledger.Options{Budgets: c.budgets})
			defer opts.Ledger.Close()
		}
		p, err := New(opts)
		if err != nil {
			b.Fatal(err)
		}
		send := func() {
			req := httptest.NewRequest("POST", "/v1/messages", bytes.NewReader(body))
			req.Header.Set("X-Api-Key", "sk-client-key")
			rec := httptest.NewRecorder()
			p.ServeHTTP(rec, req)
			if rec.Code != 200 {
				b.Fatalf("status %d: %s", rec.Code, rec.Body)
			}
		}
		b.Run(c.name+"/clients=1", func(b *testing.B) {
			b.ReportAllocs()
			var took []time.Duration
			for b.Loop() {
				start := time.Now()
				send()
				took = append(took, time.Since(start))
			}
			slices.Sort(took)
			b.ReportMetric(float64(took[len(took)/2].Nanoseconds()), "p50-ns")
		})
		b.Run(c.name+"/clients=16", func(b *testing.B) {
			b.ReportAllocs()
			b.SetParallelism(max(1, 16/runtime.GOMAXPROCS(0)))
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					send()
				}
			})
		})
	}
}
