package gateway

import (
	"fmt"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"
)

// metrics are the gateway's Prometheus metrics, written in the text
// exposition format by hand: a few counters and histograms do not justify
// the client library and its dependencies.
type metrics struct {
	mu      sync.Mutex
	calls   map[[2]string]uint64 // server, outcome
	latency map[string]*histogram
	search  histogram
	// refused counts sessions refused at MaxSessions.
	refused uint64
	// catalog reports the catalog's size and token cost when metrics are
	// read; counting tokens is too costly to do on every catalog change.
	catalog func() (tools, tokens, deferred int)
}

// buckets are the histogram bounds in seconds: tool calls run from
// microseconds (in-memory) to minutes (a build).
var buckets = []float64{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60}

type histogram struct {
	counts []uint64 // per bucket, not cumulative
	sum    float64
	n      uint64
}

func (h *histogram) observe(d time.Duration) {
	if h.counts == nil {
		h.counts = make([]uint64, len(buckets))
	}
	v := d.Seconds()
	if i, _ := slices.BinarySearch(buckets, v); i < len(buckets) {
		h.counts[i]++
	}
	h.sum += v
	h.n++
}

func (h *histogram) write(w http.ResponseWriter, name, labels string) {
	var cum uint64
	sep := ""
	if labels != "" {
		sep = ","
	}
	for i, b := range buckets {
		if h.counts != nil {
			cum += h.counts[i]
		}
		fmt.Fprintf(w, "%s_bucket{%s%sle=\"%g\"} %d\n", name, labels, sep, b, cum)
	}
	fmt.Fprintf(w, "%s_bucket{%s%sle=\"+Inf\"} %d\n", name, labels, sep, h.n)
	if labels != "" {
		labels = "{" + labels + "}"
	}
	fmt.Fprintf(w, "%s_sum%s %g\n%s_count%s %d\n", name, labels, h.sum, name, labels, h.n)
}

func newMetrics(catalog func() (tools, tokens, deferred int)) *metrics {
	return &metrics{calls: map[[2]string]uint64{}, latency: map[string]*histogram{}, catalog: catalog}
}

func (m *metrics) observeCall(server, outcome string, d time.Duration) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.calls[[2]string{server, outcome}]++
	h := m.latency[server]
	if h == nil {
		h = &histogram{}
		m.latency[server] = h
	}
	h.observe(d)
}

func (m *metrics) observeSearch(d time.Duration) {
	m.mu.Lock()
	m.search.observe(d)
	m.mu.Unlock()
}

func (m *metrics) refusedSession() {
	m.mu.Lock()
	m.refused++
	m.mu.Unlock()
}

func (m *metrics) serve(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	tools, tokens, deferred := m.catalog()
	m.mu.Lock()
	defer m.mu.Unlock()
	fmt.Fprintln(w, "# HELP toolshelf_calls_total Tool calls forwarded upstream, by server and outcome (ok, tool_error, error, cancelled).")
	fmt.Fprintln(w, "# TYPE toolshelf_calls_total counter")
	keys := slices.SortedFunc(maps.Keys(m.calls), func(a, b [2]string) int {
		if a[0] != b[0] {
			return strings.Compare(a[0], b[0])
		}
		return strings.Compare(a[1], b[1])
	})
	for _, k := range keys {
		fmt.Fprintf(w, "toolshelf_calls_total{server=%q,outcome=%q} %d\n", k[0], k[1], m.calls[k])
	}
	fmt.Fprintln(w, "# HELP toolshelf_call_duration_seconds Time of forwarded tool calls, by server.")
	fmt.Fprintln(w, "# TYPE toolshelf_call_duration_seconds histogram")
	for _, server := range slices.Sorted(maps.Keys(m.latency)) {
		m.latency[server].write(w, "toolshelf_call_duration_seconds", fmt.Sprintf("server=%q", server))
	}
	fmt.Fprintln(w, "# HELP toolshelf_search_duration_seconds Time of search_tools searches.")
	fmt.Fprintln(w, "# TYPE toolshelf_search_duration_seconds histogram")
	m.search.write(w, "toolshelf_search_duration_seconds", "")
	fmt.Fprintln(w, "# HELP toolshelf_catalog_tools Tools in the catalog.")
	fmt.Fprintln(w, "# TYPE toolshelf_catalog_tools gauge")
	fmt.Fprintf(w, "toolshelf_catalog_tools %d\n", tools)
	fmt.Fprintln(w, "# HELP toolshelf_catalog_tokens Estimated tokens of every tool definition in the catalog.")
	fmt.Fprintln(w, "# TYPE toolshelf_catalog_tokens gauge")
	fmt.Fprintf(w, "toolshelf_catalog_tokens %d\n", tokens)
	fmt.Fprintln(w, "# HELP toolshelf_tokens_deferred Estimated tokens of tool definitions kept out of clients' tool lists.")
	fmt.Fprintln(w, "# TYPE toolshelf_tokens_deferred gauge")
	fmt.Fprintf(w, "toolshelf_tokens_deferred %d\n", deferred)
	fmt.Fprintln(w, "# HELP toolshelf_sessions_refused_total New sessions refused because --max-sessions were open.")
	fmt.Fprintln(w, "# TYPE toolshelf_sessions_refused_total counter")
	fmt.Fprintf(w, "toolshelf_sessions_refused_total %d\n", m.refused)
}
