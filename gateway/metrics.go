package gateway

import (
	"context"
	"errors"
	"time"

	"github.com/toolshelf/toolshelf/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// metrics are one gateway's instruments. Every profile's gateway records
// into the host's one meter, each measurement labelled with its profile;
// /metrics serves them through the Prometheus exporter, under the names
// toolshelf had before (toolshelf_calls_total, …; README, "Metrics").
type metrics struct {
	profile  attribute.KeyValue
	calls    metric.Int64Counter
	latency  metric.Float64Histogram
	search   metric.Float64Histogram
	refused  metric.Int64Counter
	serverOp metric.Float64Histogram
	rank     metric.Int64Histogram
	unfound  metric.Int64Counter
	unused   metric.Int64Counter
	// attrs are the label sets seen, so that a measurement allocates
	// none (every label is bounded: a server, a tool of the catalog, a
	// known method, an outcome).
	attrs *telemetry.Attrs
}

// maxAttrSets bounds the label sets a gateway caches.
const maxAttrSets = 4096

// buckets are the latency histograms' bounds in seconds: tool calls run
// from microseconds (in-memory) to minutes (a build).
var buckets = []float64{0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60}

// rankBuckets bound the rank a called tool had in the search that found
// it: recall@1, @5 and @10 are the counts at or below 1, 5 and 10.
var rankBuckets = []float64{1, 2, 3, 5, 10, 20, 50}

// newMetrics makes a gateway's instruments; catalog reports the
// catalog's size and token cost when the metrics are read (counting
// tokens is too costly to do on every catalog change).
func newMetrics(tel *telemetry.Telemetry, profile string, catalog func() (tools, tokens, deferred int)) (*metrics, error) {
	mt := tel.Meter()
	m := &metrics{profile: attribute.String("profile", profile), attrs: telemetry.NewAttrs(maxAttrSets)}
	var errs []error
	note := func(err error) { errs = append(errs, err) }
	var err error
	m.calls, err = mt.Int64Counter("toolshelf.calls",
		metric.WithDescription("Tool calls forwarded upstream, by profile, server and outcome (ok, tool_error, error, cancelled)."))
	note(err)
	m.latency, err = mt.Float64Histogram("toolshelf.call.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(buckets...),
		metric.WithDescription("Time of forwarded tool calls, by profile and server."))
	note(err)
	m.search, err = mt.Float64Histogram("toolshelf.search.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(buckets...),
		metric.WithDescription("Time of search_tools searches, by profile."))
	note(err)
	m.refused, err = mt.Int64Counter("toolshelf.sessions.refused",
		metric.WithDescription("New sessions refused because --max-sessions were open, by profile."))
	note(err)
	m.serverOp, err = mt.Float64Histogram("mcp.server.operation.duration", metric.WithUnit("s"), metric.WithExplicitBucketBoundaries(buckets...),
		metric.WithDescription("Time of the MCP requests clients sent the gateway, by method, tool and error type (MCP semantic conventions)."))
	note(err)
	m.rank, err = mt.Int64Histogram("toolshelf.search.rank", metric.WithExplicitBucketBoundaries(rankBuckets...),
		metric.WithDescription("Rank a called tool had in the session's search that found it, by profile and server: online recall@k is the share at or below k."))
	note(err)
	m.unfound, err = mt.Int64Counter("toolshelf.calls.unsearched",
		metric.WithDescription("Calls through call_tool of a tool no search of the session ranked (via=select when a select: search named it, via=none when the model knew or guessed the name), by profile and server."))
	note(err)
	m.unused, err = mt.Int64Counter("toolshelf.searches.unused",
		metric.WithDescription("Searches that found tools of which the session then called none, by profile."))
	note(err)
	tools, err := mt.Int64ObservableGauge("toolshelf.catalog.tools", metric.WithDescription("Tools in the profile's catalog."))
	note(err)
	tokens, err := mt.Int64ObservableGauge("toolshelf.catalog.tokens", metric.WithDescription("Estimated tokens of every tool definition in the profile's catalog."))
	note(err)
	deferred, err := mt.Int64ObservableGauge("toolshelf.tokens.deferred", metric.WithDescription("Estimated tokens of tool definitions kept out of clients' tool lists."))
	note(err)
	_, err = mt.RegisterCallback(func(_ context.Context, o metric.Observer) error {
		n, t, d := catalog()
		set := metric.WithAttributes(m.profile)
		o.ObserveInt64(tools, int64(n), set)
		o.ObserveInt64(tokens, int64(t), set)
		o.ObserveInt64(deferred, int64(d), set)
		return nil
	}, tools, tokens, deferred)
	note(err)
	return m, errors.Join(errs...)
}

func (m *metrics) observeCall(ctx context.Context, server, outcome string, d time.Duration) {
	m.calls.Add(ctx, 1, m.attrs.Get(telemetry.AttrKey{"calls", server, outcome}, func() []attribute.KeyValue {
		return []attribute.KeyValue{m.profile, attribute.String("server", server), attribute.String("outcome", outcome)}
	}))
	m.latency.Record(ctx, d.Seconds(), m.byServer(server))
}

// byServer is the label set of the profile and a server.
func (m *metrics) byServer(server string) metric.MeasurementOption {
	return m.attrs.Get(telemetry.AttrKey{"server", server}, func() []attribute.KeyValue {
		return []attribute.KeyValue{m.profile, attribute.String("server", server)}
	})
}

// byProfile is the label set of the profile alone.
func (m *metrics) byProfile() metric.MeasurementOption {
	return m.attrs.Get(telemetry.AttrKey{"profile"}, func() []attribute.KeyValue { return []attribute.KeyValue{m.profile} })
}

// unsearched is the label set of a call no search ranked, by how its
// tool was named (via).
func (m *metrics) unsearched(server, via string) metric.MeasurementOption {
	return m.attrs.Get(telemetry.AttrKey{"unsearched", server, via}, func() []attribute.KeyValue {
		return []attribute.KeyValue{m.profile, attribute.String("server", server), attribute.String("via", via)}
	})
}

func (m *metrics) observeSearch(ctx context.Context, d time.Duration) {
	m.search.Record(ctx, d.Seconds(), m.byProfile())
}

func (m *metrics) refusedSession(ctx context.Context) {
	m.refused.Add(ctx, 1, m.byProfile())
}

// noEnv reads no variable: a gateway given no telemetry keeps metrics
// and exports nothing, whatever OTEL_* the process has.
func noEnv(string) string { return "" }
