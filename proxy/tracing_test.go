package proxy

import (
	"context"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/telemetry"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// One trace holds a client's request, the hidden search round, the search
// the proxy answered and the answering round, each round with its token
// counts, plainly and streaming; the trace is the one the client's
// traceparent names, and each round's request upstream carries its own
// span in a traceparent header.
func TestTraceOfRounds(t *testing.T) {
	for _, streaming := range []bool{false, true} {
		name := map[bool]string{false: "plain", true: "streaming"}[streaming]
		t.Run(name, func(t *testing.T) {
			spans := tracetest.NewInMemoryExporter()
			tel, err := telemetry.New(context.Background(), &telemetry.Options{SpanExporter: spans, Synchronous: true, Getenv: func(string) string { return "" }})
			if err != nil {
				t.Fatal(err)
			}
			defer tel.Shutdown(context.Background())
			api := newFakeAPI(t,
				func(req messages.Request) (int, string) {
					return 200, reply("tool_use", 1000, 20, toolUse("s1", messages.DefaultSearchTool, `{"query":"create a github issue"}`))
				},
				func(req messages.Request) (int, string) {
					return 200, reply("tool_use", 1500, 30, toolUse("c1", createIssue, `{"title":"crash"}`))
				},
			)
			url := startProxy(t, api, &Options{Telemetry: tel})
			const traceHex = "4bf92f3577b34da6a3ce929d0e0e4736"
			extra := ""
			if streaming {
				extra = `,"stream":true`
			}
			status, _, body := post(t, url+"/v1/messages", request(t, builtinTools(), `[{"role":"user","content":"Open an issue about the crash."}]`, extra),
				map[string]string{"Traceparent": "00-" + traceHex + "-00f067aa0ba902b7-01"})
			if status != 200 || !strings.Contains(string(body), createIssue) {
				t.Fatalf("%d %s", status, body)
			}

			got := spans.GetSpans()
			find := func(name string) []tracetest.SpanStub {
				var out []tracetest.SpanStub
				for _, s := range got {
					if s.Name == name {
						out = append(out, s)
					}
				}
				return out
			}
			req := find("POST /v1/messages")
			rounds := find("chat claude-sonnet-4-5")
			search := find("execute_tool " + messages.DefaultSearchTool)
			if len(req) != 1 || len(rounds) != 2 || len(search) != 1 {
				t.Fatalf("spans: %d requests, %d rounds, %d searches (%v)", len(req), len(rounds), len(search), spanNames(got))
			}
			for _, s := range got {
				if s.SpanContext.TraceID().String() != traceHex {
					t.Errorf("%s is in trace %s, not the client's", s.Name, s.SpanContext.TraceID())
				}
			}
			if req[0].Parent.SpanID().String() != "00f067aa0ba902b7" {
				t.Errorf("the request's span is not a child of the client's")
			}
			for i, want := range []struct {
				in, out int64
				hidden  bool
			}{{1000, 20, true}, {1500, 30, false}} {
				r := rounds[i]
				attrs := attrMap(r.Attributes)
				if attrs["gen_ai.usage.input_tokens"].AsInt64() != want.in || attrs["gen_ai.usage.output_tokens"].AsInt64() != want.out ||
					attrs["toolshelf.proxy.hidden"].AsBool() != want.hidden || attrs["gen_ai.operation.name"].AsString() != "chat" {
					t.Errorf("round %d: %v", i+1, attrs)
				}
				if r.Parent.SpanID() != req[0].SpanContext.SpanID() {
					t.Errorf("round %d is not a child of the request", i+1)
				}
				if tp := api.traceparents[i]; !strings.Contains(tp, r.SpanContext.SpanID().String()) {
					t.Errorf("round %d went upstream with traceparent %q, not its span %s", i+1, tp, r.SpanContext.SpanID())
				}
			}
			if a := attrMap(search[0].Attributes); a["gen_ai.tool.name"].AsString() != messages.DefaultSearchTool {
				t.Errorf("search span: %v", a)
			}
		})
	}
}

func attrMap(kvs []attribute.KeyValue) map[string]attribute.Value {
	m := map[string]attribute.Value{}
	for _, kv := range kvs {
		m[string(kv.Key)] = kv.Value
	}
	return m
}

func spanNames(spans []tracetest.SpanStub) []string {
	var out []string
	for _, s := range spans {
		out = append(out, s.Name)
	}
	return out
}
