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
	profile string // every line's profile label
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

func newMetrics(profile string, catalog func() (tools, tokens, deferred int)) *metrics {
	return &metrics{profile: profile, calls: map[[2]string]uint64{}, latency: map[string]*histogram{}, catalog: catalog}
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

// writeMetrics writes the metrics of the gateways of every profile, each
// family once, each line labelled with its profile.
func writeMetrics(w http.ResponseWriter, ms []*metrics) {
	w.Header().Set("Content-Type", "text/plain; version=0.0.4")
	type sizes struct{ tools, tokens, deferred int }
	cat := make([]sizes, len(ms))
	for i, m := range ms {
		cat[i].tools, cat[i].tokens, cat[i].deferred = m.catalog()
		m.mu.Lock()
		defer m.mu.Unlock()
	}
	family := func(name, kind, help string) {
		fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, kind)
	}
	family("toolshelf_calls_total", "counter", "Tool calls forwarded upstream, by profile, server and outcome (ok, tool_error, error, cancelled).")
	for _, m := range ms {
		keys := slices.SortedFunc(maps.Keys(m.calls), func(a, b [2]string) int {
			if a[0] != b[0] {
				return strings.Compare(a[0], b[0])
			}
			return strings.Compare(a[1], b[1])
		})
		for _, k := range keys {
			fmt.Fprintf(w, "toolshelf_calls_total{profile=%q,server=%q,outcome=%q} %d\n", m.profile, k[0], k[1], m.calls[k])
		}
	}
	family("toolshelf_call_duration_seconds", "histogram", "Time of forwarded tool calls, by profile and server.")
	for _, m := range ms {
		for _, server := range slices.Sorted(maps.Keys(m.latency)) {
			m.latency[server].write(w, "toolshelf_call_duration_seconds", fmt.Sprintf("profile=%q,server=%q", m.profile, server))
		}
	}
	family("toolshelf_search_duration_seconds", "histogram", "Time of search_tools searches, by profile.")
	for _, m := range ms {
		m.search.write(w, "toolshelf_search_duration_seconds", fmt.Sprintf("profile=%q", m.profile))
	}
	gauge := func(name, help string, value func(i int) int) {
		family(name, "gauge", help)
		for i, m := range ms {
			fmt.Fprintf(w, "%s{profile=%q} %d\n", name, m.profile, value(i))
		}
	}
	gauge("toolshelf_catalog_tools", "Tools in the profile's catalog.", func(i int) int { return cat[i].tools })
	gauge("toolshelf_catalog_tokens", "Estimated tokens of every tool definition in the profile's catalog.", func(i int) int { return cat[i].tokens })
	gauge("toolshelf_tokens_deferred", "Estimated tokens of tool definitions kept out of clients' tool lists.", func(i int) int { return cat[i].deferred })
	family("toolshelf_sessions_refused_total", "counter", "New sessions refused because --max-sessions were open, by profile.")
	for _, m := range ms {
		fmt.Fprintf(w, "toolshelf_sessions_refused_total{profile=%q} %d\n", m.profile, m.refused)
	}
}
