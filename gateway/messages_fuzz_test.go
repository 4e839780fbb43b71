package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/sandbox"
	"github.com/toolshelf/toolshelf/telemetry"
	"github.com/toolshelf/toolshelf/upstream"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// fuzzMethods are the methods a client sends, and some it should not.
var fuzzMethods = []string{
	"initialize", "ping", "server/discover", "tools/list", "tools/call",
	"prompts/list", "prompts/get", "resources/list", "resources/read",
	"resources/templates/list", "resources/subscribe", "resources/unsubscribe",
	"completion/complete", "logging/setLevel", "subscriptions/listen",
	"notifications/initialized", "notifications/cancelled", "notifications/progress",
	"notifications/roots/list_changed", "roots/list", "sampling/createMessage",
	"elicitation/create", "tasks/get", "no/such/method",
}

// fuzzParams are params a careless or hostile client sends: absent,
// null, empty, of the wrong type, and near-right.
var fuzzParams = []string{
	"", "null", "{}", "[]", `"x"`, "3", "true",
	`{"name": null}`, `{"name": "call_tool"}`, `{"name": "search_tools", "arguments": null}`,
	`{"name": "call_tool", "arguments": {"name": "mcp__fixture__echo", "arguments": {"text": "x"}}}`,
	`{"name": "search_tools", "arguments": {"query": "echo"}}`,
	`{"name": "run_code", "arguments": {"code": "return 1"}}`,
	`{"uri": null}`, `{"uri": 3}`, `{"ref": null}`, `{"ref": {"type": "ref/prompt"}, "argument": null}`,
	`{"level": 7}`, `{"_meta": null}`, `{"_meta": "x"}`, `{"_meta": {"traceparent": 3, "progressToken": {}}}`,
	`{"requestId": null}`, `{"progressToken": null, "progress": "x"}`, `{"requestState": 3, "inputResponses": "x"}`,
	`{"protocolVersion": null, "capabilities": null, "clientInfo": null}`,
}

// stack is every layer that looks at a message, with every option on:
// tracing (with queries), metrics, audit (with arguments), learning,
// code mode, profiles with tokens; one host with shared sessions, one
// with a server per session (Activate).
type stack struct {
	urls  []string
	hosts []*Host
	spans *tracetest.InMemoryExporter
}

const fuzzToken = "fuzz-token-0123456789"

func newStack(tb testing.TB) *stack {
	tb.Helper()
	st := &stack{spans: tracetest.NewInMemoryExporter()}
	tel, err := telemetry.New(context.Background(), &telemetry.Options{Getenv: noEnv, SpanExporter: st.spans, Synchronous: true})
	if err != nil {
		tb.Fatal(err)
	}
	dir := tb.TempDir()
	for i, activate := range []bool{false, true} {
		log, err := audit.Open(filepath.Join(dir, fmt.Sprintf("audit%d.jsonl", i)), nil)
		if err != nil {
			tb.Fatal(err)
		}
		code, err := sandbox.New(&sandbox.Options{Limits: sandbox.Limits{Wall: 30 * time.Second, Calls: 5}})
		if err != nil {
			tb.Fatal(err)
		}
		echo, err := mcptest.NewServer("echo", mcptest.SimpleTools("echo", "read_file"), nil)
		if err != nil {
			tb.Fatal(err)
		}
		pool := upstream.NewPool([]config.ServerConfig{inMemory("fixture", mcptest.Fixture()), inMemory("echo", echo)}, nil)
		h, err := NewHost(pool, &HostOptions{
			Server: Options{
				Telemetry: tel, TraceQueries: true, Audit: log, AuditArgs: true,
				Learn: learn.Open(filepath.Join(dir, fmt.Sprintf("usage%d.db", i)), nil),
				Code:  code, Activate: activate, PendingWait: 1, MaxSessions: 50,
			},
			Profiles: []config.Profile{
				{Name: "alpha", Servers: []string{"fixture", "echo"}, Tokens: []string{fuzzToken}},
				{Name: "beta", Servers: []string{"echo"}, Tokens: []string{fuzzToken + "-beta"}},
			},
			AuthToken: fuzzToken + "-admin",
		})
		if err != nil {
			tb.Fatal(err)
		}
		background(tb, h.Run)
		ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*config.DefaultTimeout))
		err = pool.Wait(ctx)
		cancel()
		if err != nil {
			tb.Fatal(err)
		}
		srv := httptest.NewServer(h.Handler())
		tb.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
		st.urls = append(st.urls, srv.URL)
		st.hosts = append(st.hosts, h)
	}
	return st
}

// message is one JSON-RPC message: a request when id is set, else a
// notification; params are left out when empty.
func message(id, method string, params []byte) []byte {
	var b bytes.Buffer
	b.WriteString(`{"jsonrpc":"2.0"`)
	if id != "" {
		fmt.Fprintf(&b, `,"id":%q`, id)
	}
	m, _ := json.Marshal(method)
	fmt.Fprintf(&b, `,"method":%s`, m)
	if len(params) > 0 {
		b.WriteString(`,"params":`)
		b.Write(params)
	}
	b.WriteString("}")
	return b.Bytes()
}

const initialize = `{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{},"sampling":{},"roots":{}},"clientInfo":{"name":"fuzz","version":"1"}}`

// exchange sends a session's first messages, the fuzzed one, and a ping,
// over HTTP; it fails when the ping is not answered.
func (st *stack) exchange(t *testing.T, host int, path, token string, msg []byte) {
	url := st.urls[host] + path
	ctx := context.Background()
	code, body, session, err := testenv.PostMCP(ctx, url, token, "", message("init", "initialize", []byte(initialize)))
	if err != nil || code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s %v", code, body, err)
	}
	defer func() {
		req, _ := http.NewRequest(http.MethodDelete, url, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Mcp-Session-Id", session)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
	}()
	if code, body, _, err := testenv.PostMCP(ctx, url, token, session, message("", "notifications/initialized", nil)); err != nil || code >= 300 {
		t.Fatalf("initialized: %d %s %v", code, body, err)
	}
	held, cancel := context.WithTimeout(ctx, testenv.Timeout(2*time.Second))
	_, _, _, _ = testenv.PostMCP(held, url, token, session, msg)
	cancel()
	code, body, _, err = testenv.PostMCP(ctx, url, token, session, message("check", "ping", nil))
	if err != nil || code != http.StatusOK || !strings.Contains(body, `"result"`) {
		t.Fatalf("after %.200s the gateway does not answer a ping: %d %.300s %v", msg, code, body, err)
	}
}

// exchangeStdio does the same over the stdio transport.
func (st *stack) exchangeStdio(t *testing.T, host int, msg []byte) {
	cr, cw := io.Pipe()
	sr, sw := io.Pipe()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- st.hosts[host].Main().ServeStdio(ctx, StdioTransport(cr, sw)) }()
	defer func() { cancel(); cw.Close(); sr.Close(); <-done }()
	out := make(chan []byte, 16)
	go func() {
		defer close(out)
		sc := bufio.NewScanner(sr)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			out <- bytes.Clone(sc.Bytes())
		}
	}()
	go func() {
		for _, m := range [][]byte{message("init", "initialize", []byte(initialize)), message("", "notifications/initialized", nil), msg, message("check", "ping", nil)} {
			if _, err := cw.Write(append(m, '\n')); err != nil {
				return
			}
		}
	}()
	wait := time.NewTimer(testenv.Timeout(30 * time.Second))
	defer wait.Stop()
	for {
		select {
		case line, ok := <-out:
			if !ok {
				t.Fatalf("after %.200s the stdio session ended: %v", msg, <-done)
			}
			if bytes.Contains(line, []byte(`"id":"check"`)) {
				if !bytes.Contains(line, []byte(`"result"`)) {
					t.Fatalf("after %.200s a ping got %.300s", msg, line)
				}
				return
			}
		case <-wait.C:
			t.Fatalf("timed out waiting for a ping's answer after %.200s", msg)
		}
	}
}

// FuzzMessages sends any message of any method, with params absent,
// null, {}, of the wrong type or any bytes, through the whole stack with
// every option on, over HTTP (each profile's path, shared sessions and a
// server per session) and stdio: the gateway answers the next ping, and
// what it exported stays bounded.
func FuzzMessages(f *testing.F) {
	for i, m := range fuzzMethods {
		for j, p := range fuzzParams {
			if (i+j)%3 == 0 || p == "" || p == "null" || p == "{}" {
				f.Add(m, []byte(p), i%2 == 0, uint8(i+j))
			}
		}
	}
	st := newStack(f)
	f.Fuzz(func(t *testing.T, method string, params []byte, notify bool, where uint8) {
		if !json.Valid(params) {
			params = nil
		}
		id := "fuzzed"
		if notify {
			id = ""
		}
		msg := message(id, method, params)
		host := int(where % 2)
		switch where / 2 % 4 {
		case 0:
			st.exchange(t, host, "/mcp", fuzzToken+"-admin", msg)
		case 1:
			st.exchange(t, host, "/mcp/alpha", fuzzToken, msg)
		case 2:
			st.exchange(t, host, "/mcp/beta", fuzzToken+"-beta", msg)
		default:
			st.exchangeStdio(t, host, msg)
		}
		st.checkSpans(t, msg)
	})
}

// checkSpans fails when an exported span's name or attributes are
// larger than a client should be able to make them.
func (st *stack) checkSpans(t *testing.T, msg []byte) {
	defer st.spans.Reset()
	for _, s := range st.spans.GetSpans() {
		size := len(s.Name)
		for _, a := range s.Attributes {
			size += len(a.Key) + len(a.Value.String())
		}
		if size > 4096 {
			t.Fatalf("after %.200s a span of %d bytes was exported: %.300s", msg, size, s.Name)
		}
	}
}
