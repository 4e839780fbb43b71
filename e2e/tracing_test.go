package e2e

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	coltrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpReceiver is an OTLP/HTTP trace receiver on loopback: it decodes
// what exporters send with the OTLP protobuf packages.
type otlpReceiver struct {
	mu    sync.Mutex
	spans []receivedSpan
}

type receivedSpan struct {
	service string
	span    *tracepb.Span
}

func (r *otlpReceiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.URL.Path != "/v1/traces" {
		http.NotFound(w, req)
		return
	}
	var body io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		zr, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), 400)
			return
		}
		body = zr
	}
	b, err := io.ReadAll(body)
	var msg coltrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(b, &msg)
	}
	if err != nil {
		http.Error(w, err.Error(), 400)
		return
	}
	r.mu.Lock()
	for _, rs := range msg.GetResourceSpans() {
		service := stringAttr(rs.GetResource().GetAttributes(), "service.name")
		for _, ss := range rs.GetScopeSpans() {
			for _, s := range ss.GetSpans() {
				r.spans = append(r.spans, receivedSpan{service, s})
			}
		}
	}
	r.mu.Unlock()
	out, _ := proto.Marshal(&coltrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(out)
}

// find returns the first span of service named name in trace, or nil.
func (r *otlpReceiver) find(service, name string, trace []byte) *tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, s := range r.spans {
		if s.service == service && s.span.GetName() == name && bytes.Equal(s.span.GetTraceId(), trace) {
			return s.span
		}
	}
	return nil
}

func (r *otlpReceiver) names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, s := range r.spans {
		out = append(out, s.service+":"+s.span.GetName())
	}
	return out
}

// stringAttr returns an attribute's value as text ("" when absent, or
// false, or zero).
func stringAttr(kvs []*commonpb.KeyValue, key string) string {
	for _, kv := range kvs {
		if kv.GetKey() != key {
			continue
		}
		switch v := kv.GetValue(); {
		case v.GetStringValue() != "":
			return v.GetStringValue()
		case v.GetIntValue() != 0:
			return strconv.FormatInt(v.GetIntValue(), 10)
		case v.GetBoolValue():
			return "true"
		}
	}
	return ""
}

// One trace from the client through the gateway into the server: a
// client's search and calls carry a traceparent in params._meta; the
// gateway (a process exporting OTLP/HTTP to a receiver on loopback) makes
// its server spans children of it, a search span, and client spans for
// what it asks the server, whose context it puts in the request's _meta;
// the server (a go-sdk server in a subprocess that reads _meta and
// exports its own spans) continues the same trace. Span names and
// attributes follow the MCP semantic conventions, and a tool error has
// error.type tool_error.
func TestTraceThroughGateway(t *testing.T) {
	t.Parallel()
	recv := &otlpReceiver{}
	collector := httptest.NewServer(recv)
	defer collector.Close()

	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "servers.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"tracker": map[string]any{
		"command": exe, "timeout": testenv.Timeout(10 * time.Second).String(),
		"env": map[string]string{mcptest.ModeEnv: "traced", "OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL, "OTEL_SERVICE_NAME": "tracker"},
		// It exports to the collector on the host's loopback, its one
		// port granted.
		"network": map[string]any{"hostPorts": []int{collector.Listener.Addr().(*net.TCPAddr).Port}},
	}}})
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	// A server granted a port of the host's loopback could call /mcp:
	// it needs a token.
	token := "trace-test-token-0123456789abcdef"
	tokenFile := filepath.Join(t.TempDir(), "token")
	os.WriteFile(tokenFile, []byte(token+"\n"), 0o600)
	script := testenv.ServeScript(t, toolshelf, map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": collector.URL,
		"OTEL_BSP_SCHEDULE_DELAY":     "50", // ms: spans leave soon after they end
	}, cfg, "--http", "127.0.0.1:0", "--auth-token-file", tokenFile)
	url := runHTTPScript(t, script)

	// Both eras: a client with a session, and one of 2026-07-28, whose
	// every request carries the trace in its _meta alone.
	for _, era := range []struct{ version, trace string }{
		{withSessions, "4bf92f3577b34da6a3ce929d0e0e4736"},
		{"", "5cf92f3577b34da6a3ce929d0e0e4737"},
	} {
		name := era.version
		if name == "" {
			name = "newest"
		}
		t.Run(name, func(t *testing.T) { traceOneClient(t, recv, url, token, era.version, era.trace) })
	}
}

// traceOneClient runs a client of version ("" for the newest) through a
// traced gateway at url and checks the spans recv got, in the trace
// traceHex.
func traceOneClient(t *testing.T, recv *otlpReceiver, url, token, version, traceHex string) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "traced-client", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()

	traceID, _ := hex.DecodeString(traceHex)
	parent := "00-" + traceHex + "-00f067aa0ba902b7-01"
	call := func(name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		p := &mcp.CallToolParams{Name: name, Arguments: args}
		p.SetMeta(map[string]any{"traceparent": parent})
		res, err := cs.CallTool(ctx, p)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		return res
	}
	if res := call("search_tools", map[string]any{"query": "create an issue in the tracker"}); res.IsError || !strings.Contains(text(res), "mcp__tracker__create_issue") {
		t.Fatalf("search: %s", text(res))
	}
	const argMarker = "arg-marker-7f3a9c"
	res := call("call_tool", map[string]any{"name": "mcp__tracker__create_issue", "arguments": map[string]any{"title": "slow", "body": argMarker}})
	if res.IsError || !strings.Contains(text(res), "traceparent=00-"+traceHex+"-") {
		t.Fatalf("the server did not get the trace in _meta: %s", text(res))
	}
	if res := call("call_tool", map[string]any{"name": "mcp__tracker__fail_build", "arguments": map[string]any{}}); !res.IsError {
		t.Fatalf("fail_build: %s", text(res))
	}

	var gwCall, search, client, server, failed, failedClient *tracepb.Span
	testenv.Eventually(t, 30*time.Second, "the spans to reach the receiver", func() bool {
		gwCall = recv.find("toolshelf", "tools/call call_tool", traceID)
		search = recv.find("toolshelf", "search bm25", traceID)
		client = recv.find("toolshelf", "tools/call create_issue", traceID)
		failedClient = recv.find("toolshelf", "tools/call fail_build", traceID)
		server = recv.find("tracker", "tools/call create_issue", traceID)
		failed = recv.find("tracker", "tools/call fail_build", traceID)
		return gwCall != nil && search != nil && client != nil && server != nil && failed != nil && failedClient != nil
	})
	if t.Failed() {
		t.Fatalf("spans received: %v", recv.names())
	}
	if got := hex.EncodeToString(gwCall.GetParentSpanId()); got != "00f067aa0ba902b7" {
		t.Errorf("the gateway's span is not a child of the client's: parent %s", got)
	}
	if gwCall.GetKind() != tracepb.Span_SPAN_KIND_SERVER || client.GetKind() != tracepb.Span_SPAN_KIND_CLIENT {
		t.Errorf("kinds: gateway %v, upstream %v", gwCall.GetKind(), client.GetKind())
	}
	if !bytes.Equal(server.GetParentSpanId(), client.GetSpanId()) {
		t.Errorf("the server's span is not a child of the gateway's client span")
	}
	for _, want := range []struct {
		span      *tracepb.Span
		key, want string
	}{
		{gwCall, "mcp.method.name", "tools/call"},
		{gwCall, "gen_ai.tool.name", "call_tool"},
		{gwCall, "gen_ai.operation.name", "execute_tool"},
		{gwCall, "mcp.protocol.version", cs.InitializeResult().ProtocolVersion},
		{client, "gen_ai.tool.name", "create_issue"},
		{client, "toolshelf.server", "tracker"},
		{search, "toolshelf.search.engine", "bm25"},
		{search, "toolshelf.search.weak", ""},
		{failed, "error.type", "tool_error"},
		{failedClient, "error.type", "tool_error"},
	} {
		if got := stringAttr(want.span.GetAttributes(), want.key); got != want.want {
			t.Errorf("%s: %s = %q, want %q", want.span.GetName(), want.key, got, want.want)
		}
	}
	if id := stringAttr(gwCall.GetAttributes(), "mcp.session.id"); cs.ID() != "" && (!strings.HasPrefix(id, "sha256:") || strings.Contains(id, cs.ID())) {
		t.Errorf("%s: mcp.session.id %q is not a hash of the session's id", gwCall.GetName(), id)
	}
	// A call's arguments hold what users wrote: no span of the gateway's
	// carries them.
	recv.mu.Lock()
	for _, rs := range recv.spans {
		if rs.service != "toolshelf" {
			continue
		}
		for _, a := range rs.span.GetAttributes() {
			if strings.Contains(a.GetValue().String(), argMarker) {
				t.Errorf("%s: %s carries the call's arguments", rs.span.GetName(), a.GetKey())
			}
		}
	}
	recv.mu.Unlock()
	if n := stringAttr(search.GetAttributes(), "toolshelf.search.results"); n == "" || n == "0" {
		t.Errorf("the search span says %q results", n)
	}
	if stringAttr(search.GetAttributes(), "toolshelf.search.query") != "" {
		t.Errorf("the query's text is on the span without --trace-queries")
	}
}

func text(res *mcp.CallToolResult) string {
	var b strings.Builder
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			b.WriteString(tc.Text)
		}
	}
	return b.String()
}
