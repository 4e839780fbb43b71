package telemetry

import (
	"context"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

func env(kv ...string) func(string) string {
	m := map[string]string{}
	for i := 0; i+1 < len(kv); i += 2 {
		m[kv[i]] = kv[i+1]
	}
	return func(k string) string { return m[k] }
}

// Tracing is on only when the variables ask for it; a wrong exporter or
// protocol is an error that names the variable.
func TestNewReadsTheStandardVariables(t *testing.T) {
	for _, tc := range []struct {
		name    string
		getenv  func(string) string
		tracing bool
		err     string
	}{
		{"nothing set", env(), false, ""},
		{"an endpoint", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), true, ""},
		{"a traces endpoint over grpc", env("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"), true, ""},
		{"otlp without an endpoint", env("OTEL_TRACES_EXPORTER", "otlp"), true, ""},
		{"none", env("OTEL_TRACES_EXPORTER", "none", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), false, ""},
		{"disabled", env("OTEL_SDK_DISABLED", "true", "OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), false, ""},
		{"an exporter toolshelf lacks", env("OTEL_TRACES_EXPORTER", "zipkin"), false, "OTEL_TRACES_EXPORTER"},
		{"a protocol that does not exist", env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"), false, "http/json"},
		{"metrics to an exporter toolshelf lacks", env("OTEL_METRICS_EXPORTER", "prometheus"), false, "OTEL_METRICS_EXPORTER"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tel, err := New(context.Background(), &Options{Getenv: tc.getenv})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("err %v, want one naming %s", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			if tel.Tracing() != tc.tracing {
				t.Errorf("tracing %v, want %v", tel.Tracing(), tc.tracing)
			}
		})
	}
}

// Trace context goes into a request's _meta and comes out of it; the
// caller's map is left as it was; without tracing nothing is added.
func TestMetaCarriesTraceContext(t *testing.T) {
	spans := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), &Options{Getenv: env(), SpanExporter: spans, Synchronous: true})
	if err != nil {
		t.Fatal(err)
	}
	ctx, span := tel.Start(context.Background(), trace.SpanKindClient, &Operation{Method: "tools/call", Target: "create_issue"})
	theirs := map[string]any{"progressToken": 7}
	meta := tel.Inject(ctx, theirs)
	if _, ok := theirs["traceparent"]; ok {
		t.Error("Inject changed the caller's map")
	}
	tp, _ := meta["traceparent"].(string)
	if !strings.Contains(tp, span.SpanContext().TraceID().String()) || meta["progressToken"] != 7 {
		t.Errorf("_meta %v", meta)
	}
	got := trace.SpanContextFromContext(tel.Extract(context.Background(), meta))
	if got.TraceID() != span.SpanContext().TraceID() || got.SpanID() != span.SpanContext().SpanID() || !got.IsRemote() {
		t.Errorf("extracted %v", got)
	}
	End(span, ToolError)
	if s := spans.GetSpans(); len(s) != 1 || s[0].Name != "tools/call create_issue" {
		t.Errorf("spans %v", s)
	}
	// A hostile traceparent is ignored, not trusted.
	if sc := trace.SpanContextFromContext(tel.Extract(context.Background(), map[string]any{"traceparent": strings.Repeat("f", 1<<20)})); sc.IsValid() {
		t.Errorf("a megabyte of f made a span context: %v", sc)
	}

	off := Discard()
	if m := off.Inject(ctx, theirs); len(m) != 1 {
		t.Errorf("without tracing, _meta %v", m)
	}
}

// What a client writes reaches a span cut short, and a session's id,
// which opens the session, reaches it only hashed.
func TestSpansBoundWhatClientsWrite(t *testing.T) {
	exp := tracetest.NewInMemoryExporter()
	tel, err := New(context.Background(), &Options{Getenv: env(), SpanExporter: exp, Synchronous: true})
	if err != nil {
		t.Fatal(err)
	}
	huge := strings.Repeat("é", 500_000)
	const session = "3QXUO5JTLQQZQ6SFHBUFYVHVHM"
	_, span := tel.Start(context.Background(), trace.SpanKindServer, &Operation{Method: "tools/call", Target: huge, Session: session, Protocol: huge})
	End(span, "")
	spans := exp.GetSpans()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	s := spans[0]
	if len(s.Name) > MaxAttr || !strings.HasPrefix(s.Name, "tools/call éé") {
		t.Errorf("span name of %d bytes: %.40q", len(s.Name), s.Name)
	}
	for _, a := range s.Attributes {
		v := a.Value.String()
		if len(v) > MaxAttr || !utf8.ValidString(v) {
			t.Errorf("%s: %d bytes", a.Key, len(v))
		}
		if strings.Contains(v, session) {
			t.Errorf("%s carries the session's id", a.Key)
		}
		if a.Key == "mcp.session.id" && v != SessionHash(session) {
			t.Errorf("mcp.session.id = %q, want %q", v, SessionHash(session))
		}
	}
}

// Params is nil for a request without params, whatever the SDK's
// typed nil pointer: calling its methods would panic.
func TestParamsOfRequestWithout(t *testing.T) {
	for _, req := range []mcp.Request{
		&mcp.InitializedRequest{}, &mcp.CallToolRequest{}, &mcp.ServerRequest[*mcp.PingParams]{},
	} {
		if p := Params(req); p != nil {
			t.Errorf("%T: params %v", req, p)
		}
		if m := Meta(req); m != nil {
			t.Errorf("%T: meta %v", req, m)
		}
	}
	if p := Params(&mcp.CallToolRequest{Params: &mcp.CallToolParamsRaw{Name: "x"}}); p == nil {
		t.Error("params of a request with params: nil")
	}
}

// /metrics has the Go runtime's figures, so that a leak can be seen from
// outside: goroutines, memory in use, the GC's goal, its pauses.
func TestRuntimeMetrics(t *testing.T) {
	tel, err := New(context.Background(), &Options{Getenv: env()})
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	rec := httptest.NewRecorder()
	tel.MetricsHandler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	for _, name := range []string{"go_goroutine_count ", "go_memory_used_bytes{", "go_memory_gc_goal_bytes ", "go_gc_pause_seconds_total ", "go_gc_cycles_total "} {
		if !strings.Contains(rec.Body.String(), "\n"+name) {
			t.Errorf("/metrics has no %s", name)
		}
	}
}
