package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"errors"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/fakeembed"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/sandbox"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/telemetry"
	"github.com/toolshelf/toolshelf/upstream"
)

func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	sandbox.Main()
	// testenv.Main stops the PostgreSQL server a benchmark started
	// (BenchmarkDurableCalls): nothing is left running.
	os.Exit(testenv.Main(m))
}

// memServer is an upstream served in memory by a go-sdk server.
func memServer(t *testing.T, name string, tools []json.RawMessage) config.ServerConfig {
	t.Helper()
	srv, err := mcptest.NewServer(name, tools, nil)
	if err != nil {
		t.Fatal(err)
	}
	return config.ServerConfig{Name: name, Dial: func(ctx context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		go srv.Run(context.Background(), st)
		return ct, nil
	}}
}

// rawTool builds one tool object.
func rawTool(name, desc string, extra map[string]any) json.RawMessage {
	m := map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object", "properties": map[string]any{"text": map[string]any{"type": "string"}}}}
	for k, v := range extra {
		m[k] = v
	}
	b, _ := json.Marshal(m)
	return b
}

// gatewayFor runs a pool of the given upstreams and a gateway over it
// until the test ends.
func gatewayFor(t *testing.T, opts *Options, cfgs ...config.ServerConfig) (*Server, *upstream.Pool) {
	t.Helper()
	pool := upstream.NewPool(cfgs, &upstream.Options{RestartDelay: 20 * time.Millisecond})
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*config.DefaultTimeout))
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatalf("servers did not start: %v", err)
	}
	return newGateway(t, pool.Scope(nil), opts), pool
}

// newGateway runs a gateway over up until the test ends.
func newGateway(t testing.TB, up *upstream.Scope, opts *Options) *Server {
	t.Helper()
	g, err := New(up, opts)
	if err != nil {
		t.Fatal(err)
	}
	background(t, g.Run)
	return g
}

// background runs run until the test ends, and waits for it to return.
func background(t testing.TB, run func(context.Context) error) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := run(ctx); err != nil {
			t.Error(err)
		}
	}()
	t.Cleanup(func() { cancel(); <-done })
}

// connect opens a client session to the gateway's shared server.
func connect(t testing.TB, g *Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	go g.MCPServer().Run(ctx, st)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

func call(t testing.TB, cs *mcp.ClientSession, name string, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return res
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

func standardUpstreams(t *testing.T) []config.ServerConfig {
	return []config.ServerConfig{
		memServer(t, "github", []json.RawMessage{
			rawTool("create_issue", "Create a new issue in a GitHub repository", nil),
			rawTool("create_pull_request", "Create a new pull request in a GitHub repository", nil),
			rawTool("search_code", "Search code across repositories", map[string]any{"_meta": map[string]any{"anthropic/alwaysLoad": true}}),
			rawTool("fail", "Fails as asked", nil),
		}),
		memServer(t, "slack", []json.RawMessage{
			rawTool("post_message", "Post a message to a Slack channel", map[string]any{"outputSchema": map[string]any{"type": "object"}}),
			rawTool("list_channels", "List the channels of a workspace", nil),
		}),
	}
}

func TestSearchMode(t *testing.T) {
	g, _ := gatewayFor(t, nil, standardUpstreams(t)...)
	cs := connect(t, g, nil)

	// The list: the two meta tools and the alwaysLoad tool, nothing else.
	if diff := cmp.Diff([]string{"call_tool", "mcp__github__search_code", "search_tools"}, listNames(t, cs)); diff != "" {
		t.Errorf("tools/list (-want +got):\n%s", diff)
	}
	for tool, _ := range cs.Tools(context.Background(), nil) {
		if (tool.Name == toolSearch || tool.Name == toolCall) && tool.Meta[catalog.MetaAlwaysLoad] != true {
			t.Errorf("%s lacks _meta[anthropic/alwaysLoad]", tool.Name)
		}
	}

	res := call(t, cs, toolSearch, map[string]any{"query": "create a pull request", "limit": 2})
	var sr searchResult
	if err := json.Unmarshal([]byte(text(res)), &sr); err != nil {
		t.Fatal(err)
	}
	if sr.ToolsSearched != 6 || len(sr.Matches) != 2 || sr.Matches[0].Name != "mcp__github__create_pull_request" || sr.Matches[0].Server != "github" {
		t.Fatalf("search result: %+v", sr)
	}
	// A compact match: its purpose and signature, not its schema; the
	// answer is text alone (the model reads it once).
	if m := sr.Matches[0]; !strings.Contains(m.Signature, "text") || m.Purpose == "" || m.InputSchema != nil {
		t.Errorf("compact match: %+v", m)
	}
	if res.StructuredContent != nil {
		t.Error("the matches are carried twice, as text and as structured content")
	}

	// call_tool forwards and returns the upstream result as it is.
	res = call(t, cs, toolCall, map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{"text": "hi"}})
	if res.IsError || text(res) != `{"tool":"post_message","arguments":{"text":"hi"}}` {
		t.Errorf("call_tool: %+v %s", res, text(res))
	}
	if sc, _ := json.Marshal(res.StructuredContent); !strings.Contains(string(sc), `"tool":"post_message"`) {
		t.Errorf("structured content lost: %s", sc)
	}
	// An upstream tool error stays a tool error.
	res = call(t, cs, toolCall, map[string]any{"name": "mcp__github__fail"})
	if !res.IsError || text(res) != "failed as asked" {
		t.Errorf("upstream tool error: %+v", res)
	}
	// The alwaysLoad tool is callable as itself.
	res = call(t, cs, "mcp__github__search_code", map[string]any{"text": "x"})
	if res.IsError || !strings.Contains(text(res), `"tool":"search_code"`) {
		t.Errorf("direct call: %s", text(res))
	}
}

func TestCallToolFaults(t *testing.T) {
	g, _ := gatewayFor(t, nil, standardUpstreams(t)...)
	cs := connect(t, g, nil)
	tests := []struct {
		name string
		args any
		want string // substring of the text
		err  bool
		// schema: the input schema rejects the arguments, so a JSON-RPC
		// error naming the field is a right answer too.
		schema string
	}{
		{"unknown name", map[string]any{"name": "mcp__github__create_isue"}, `no tool "mcp__github__create_isue". Closest: mcp__github__create_issue`, true, ""},
		{"own name", map[string]any{"name": "post_message", "arguments": map[string]any{"text": "a"}}, `"tool":"post_message","arguments":{"text":"a"}`, false, ""},
		{"any case", map[string]any{"name": "MCP__SLACK__POST_MESSAGE", "arguments": map[string]any{"text": "b"}}, `"text":"b"`, false, ""},
		{"nested arguments", map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{"arguments": map[string]any{"text": "c"}}}, `"arguments":{"text":"c"}`, false, ""},
		{"call repeated inside", map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{"text": "d"}}}, `"arguments":{"text":"d"}`, false, ""},
		{"tool name as key", map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{"post_message": map[string]any{"text": "e"}}}, `"arguments":{"text":"e"}`, false, ""},
		{"arguments as a string", map[string]any{"name": "mcp__slack__post_message", "arguments": `{"text":"f"}`}, `"arguments":{"text":"f"}`, false, ""},
		{"no arguments", map[string]any{"name": "mcp__slack__list_channels"}, `"arguments":{}`, false, ""},
		{"no name", map[string]any{"arguments": map[string]any{}}, `"name" is required`, true, "name"},
		{"arguments not an object", map[string]any{"name": "mcp__slack__post_message", "arguments": []int{1}}, `"arguments" must be a JSON object`, true, "arguments"},
	}
	check := func(t *testing.T, tool string, args any, want string, isErr bool, schema string) {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
		if err != nil {
			if schema == "" || !strings.Contains(err.Error(), schema) {
				t.Errorf("%s %v: a protocol error %q; want a tool result with %q", tool, args, err, want)
			}
			return
		}
		if res.IsError != isErr || !strings.Contains(text(res), want) {
			t.Errorf("%s %v: isError %v, text %q; want %v and %q", tool, args, res.IsError, text(res), isErr, want)
		}
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { check(t, toolCall, tt.args, tt.want, tt.err, tt.schema) })
	}
	for _, tt := range []struct {
		args         any
		want, schema string
	}{
		{map[string]any{}, `"query" is required`, "query"},
		{map[string]any{"query": "?!"}, "Query must contain at least one letter or number.", ""},
		{map[string]any{"query": "   "}, `"query" is required`, ""},
		{map[string]any{"query": "x", "limit": 0}, `"limit" must be a positive integer`, "limit"},
		{map[string]any{"query": "x", "limit": 2.5}, `"limit" must be a positive integer`, "limit"},
		{map[string]any{"query": "zzyzx"}, "No match.", ""},
	} {
		check(t, toolSearch, tt.args, tt.want, tt.want != "No match.", tt.schema)
	}
}

func TestAllModeAndListChanged(t *testing.T) {
	cfgs := standardUpstreams(t)
	cfgs = append(cfgs, memServer(t, "dyn", mcptest.SimpleTools("add_tool")))
	g, _ := gatewayFor(t, &Options{Settings: policy.Settings{Mode: policy.ModeStandard}}, cfgs...)
	changed := make(chan struct{}, 10)
	cs := connect(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	want := []string{"mcp__dyn__add_tool", "mcp__github__create_issue", "mcp__github__create_pull_request", "mcp__github__fail", "mcp__github__search_code", "mcp__slack__list_channels", "mcp__slack__post_message"}
	if diff := cmp.Diff(want, listNames(t, cs)); diff != "" {
		t.Fatalf("all mode list (-want +got):\n%s", diff)
	}
	call(t, cs, "mcp__dyn__add_tool", map[string]any{"name": "brand_new"})
	select {
	case <-changed:
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Fatal("no list_changed from the gateway")
	}
	if names := listNames(t, cs); !slices.Contains(names, "mcp__dyn__brand_new") {
		t.Errorf("new tool not listed: %v", names)
	}
}

func TestAutoMode(t *testing.T) {
	cfgs := standardUpstreams(t)
	small, _ := gatewayFor(t, &Options{Settings: policy.Settings{Mode: policy.ModeAuto, Percent: 10}, ContextWindow: 200_000}, cfgs...)
	if names := listNames(t, connect(t, small, nil)); len(names) != 6 {
		t.Errorf("a small catalog under the threshold should be listed whole: %v", names)
	}
	big, _ := gatewayFor(t, &Options{Settings: policy.Settings{Mode: policy.ModeAuto, Percent: 1}, ContextWindow: 1000}, standardUpstreams(t)...)
	if diff := cmp.Diff([]string{"call_tool", "mcp__github__search_code", "search_tools"}, listNames(t, connect(t, big, nil))); diff != "" {
		t.Errorf("above the threshold: search mode (-want +got):\n%s", diff)
	}
}

// With servers still connecting, a search that finds little names them.
func TestPendingServers(t *testing.T) {
	cmd, env := mcptest.Command("hang", nil)
	slow := config.ServerConfig{Name: "slowpoke", Command: cmd, Env: env, Timeout: time.Minute}
	pool := upstream.NewPool([]config.ServerConfig{slow}, nil)
	background(t, pool.Run)
	g := newGateway(t, pool.Scope(nil), &Options{PendingWait: 200 * time.Millisecond})
	cs := connect(t, g, nil)
	res := call(t, cs, toolSearch, map[string]any{"query": "anything"})
	var sr searchResult
	json.Unmarshal([]byte(text(res)), &sr)
	if !slices.Equal(sr.PendingServers, []string{"slowpoke"}) || !strings.Contains(sr.Note, "slowpoke (starting)") || len(sr.NotConnected) != 1 {
		t.Errorf("search result: %s", text(res))
	}
}

// gatewayAwaited runs a gateway over one server that connects only once
// the gateway waits for it: a request made then is one made while the
// server was still starting.
func gatewayAwaited(t *testing.T, slow config.ServerConfig, opts *Options) *Server {
	t.Helper()
	dial := slow.Dial
	asked := make(chan struct{})
	slow.Dial = func(ctx context.Context) (mcp.Transport, error) {
		<-asked // the gateway is waiting for this server
		return dial(ctx)
	}
	pool := upstream.NewPool([]config.ServerConfig{slow}, nil)
	g, err := New(pool.Scope(nil), opts)
	if err != nil {
		t.Fatal(err)
	}
	var once sync.Once
	g.waiting = func() { once.Do(func() { close(asked) }) }
	background(t, pool.Run)
	background(t, g.Run)
	return g
}

// A call made before its server has connected waits for it.
func TestCallWaitsForConnectingServer(t *testing.T) {
	g := gatewayAwaited(t, memServer(t, "late", mcptest.SimpleTools("echo")), nil)
	cs := connect(t, g, nil)
	res := call(t, cs, toolCall, map[string]any{"name": "mcp__late__echo", "arguments": map[string]any{"text": "waited"}})
	if res.IsError || !strings.Contains(text(res), "waited") {
		t.Errorf("call_tool before the server connected: %s", text(res))
	}
	res = call(t, cs, toolSearch, map[string]any{"query": "echo"})
	if !strings.Contains(text(res), "mcp__late__echo") {
		t.Errorf("search: %s", text(res))
	}
}

// A crashed server is restarted, and a call made meanwhile waits for it.
func TestCallDuringRestart(t *testing.T) {
	cmd, env := mcptest.Command("serve", []string{"crash", "echo"})
	g, pool := gatewayFor(t, nil, config.ServerConfig{Name: "crashy", Command: cmd, Env: env, Timeout: testenv.Timeout(config.DefaultTimeout)})
	cs := connect(t, g, nil)
	res := call(t, cs, toolCall, map[string]any{"name": "mcp__crashy__crash"})
	if !res.IsError {
		t.Fatalf("a call whose server died should be a tool error: %s", text(res))
	}
	res = call(t, cs, toolCall, map[string]any{"name": "mcp__crashy__echo", "arguments": map[string]any{"text": "back"}})
	if res.IsError || !strings.Contains(text(res), "back") {
		t.Errorf("call after the crash: %s", text(res))
	}
	if st := pool.Status(); st[0].Restarts < 1 {
		t.Errorf("status: %+v", st)
	}
}

func TestCatalogOnly(t *testing.T) {
	e, _ := catalog.ParseTool("notes", rawTool("add_note", "Add a note", nil))
	g := newGateway(t, upstream.Fixed(catalog.New([]catalog.Entry{e}, nil), "a test catalog").Scope(nil), nil)
	cs := connect(t, g, nil)
	res := call(t, cs, toolCall, map[string]any{"name": "mcp__notes__add_note"})
	if !res.IsError || !strings.Contains(text(res), "toolshelf is serving a test catalog, which has no servers to call") {
		t.Errorf("call: %s", text(res))
	}
}

// httpGateway serves the gateway on loopback.
func httpGateway(t *testing.T, g *Server, opts *HTTPOptions) string {
	t.Helper()
	if opts == nil {
		opts = &HTTPOptions{}
	}
	if opts.AdminToken == "" && opts.AuthToken == "" {
		o := *opts
		o.AdminToken = testAdmin
		opts = &o
	}
	srv := httptest.NewServer(g.Handler(opts))
	t.Cleanup(func() {
		// A client's event stream (its hanging GET) lives as long as its
		// session; a client that closed before the stream was open never
		// ended it, and Close would wait for it forever.
		srv.CloseClientConnections()
		srv.Close()
	})
	return srv.URL
}

// withSessions is the newest MCP revision with sessions: a client that
// asks for it is served with one.
const withSessions = "2025-11-25"

func httpClient(t *testing.T, url string, opts *mcp.ClientOptions, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	return httpClientAt(t, url, opts, hc, "")
}

// httpSessionClient is httpClient on the newest revision with sessions.
func httpSessionClient(t *testing.T, url string, opts *mcp.ClientOptions, hc *http.Client) *mcp.ClientSession {
	t.Helper()
	return httpClientAt(t, url, opts, hc, withSessions)
}

func httpClientAt(t *testing.T, url string, opts *mcp.ClientOptions, hc *http.Client, version string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, opts).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp", HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: version})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func TestHTTP(t *testing.T) {
	g, _ := gatewayFor(t, nil, standardUpstreams(t)...)
	url := httpGateway(t, g, nil)
	cs := httpClient(t, url, nil, nil)
	if got := listNames(t, cs); len(got) != 3 {
		t.Errorf("tools/list over HTTP: %v", got)
	}
	res := call(t, cs, toolCall, map[string]any{"name": "mcp__github__create_issue", "arguments": map[string]any{"text": "x"}})
	if res.IsError {
		t.Errorf("call over HTTP: %s", text(res))
	}

	// /healthz and /metrics.
	var h health
	json.Unmarshal([]byte(get(t, url+"/healthz", adminHeader)), &h)
	if h.Status != "ok" || len(h.Servers) != 2 || h.Servers[0].State != upstream.StateReady || h.Tools != 6 {
		t.Errorf("healthz: %+v", h)
	}
	// The names toolshelf had before the metrics went through the
	// OpenTelemetry library, beside the MCP conventions' own.
	body := get(t, url+"/metrics", adminHeader)
	for _, want := range []struct {
		name   string
		labels map[string]string
		value  float64
	}{
		{"toolshelf_calls_total", map[string]string{"profile": "everything", "server": "github", "outcome": "ok"}, 1},
		{"toolshelf_call_duration_seconds", map[string]string{"profile": "everything", "server": "github"}, 1},
		{"toolshelf_catalog_tools", map[string]string{"profile": "everything"}, 6},
		{"mcp_server_operation_duration_seconds", map[string]string{"mcp_method_name": "tools/call", "gen_ai_tool_name": toolCall}, 1},
		{"toolshelf_calls_unsearched_total", map[string]string{"profile": "everything", "server": "github", "via": "none"}, 1},
	} {
		if got := metricValue(t, body, want.name, want.labels); got != want.value {
			t.Errorf("%s%v = %v, want %v:\n%s", want.name, want.labels, got, want.value, body)
		}
	}

	// Malformed JSON-RPC, unknown methods and oversized bodies get protocol
	// errors; the gateway keeps serving.
	for _, tt := range []struct {
		body   string
		status int
		want   string
	}{
		{`{"jsonrpc":"2.0","id":1,"method":`, 400, ""},
		// Over stateless HTTP the SDK answers an unknown method of a
		// pre-2026 revision with 400; over stdio it is -32601 (TestStdio).
		{`{"jsonrpc":"2.0","id":1,"method":"no/such","params":{}}`, 400, "not handled"},
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"` + strings.Repeat("x", MaxRequestBytes) + `"}}}`, 413, ""},
		// JSON nested deeper than any decoder takes.
		{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"x","arguments":` + strings.Repeat("[", 100_000) + strings.Repeat("]", 100_000) + `}}}`, 400, ""},
	} {
		st, b := post(t, url+"/mcp", tt.body)
		if st != tt.status || !strings.Contains(b, tt.want) {
			t.Errorf("POST %.60s: %d %s", tt.body, st, b)
		}
	}
	if got := listNames(t, cs); len(got) != 3 {
		t.Errorf("the gateway stopped serving: %v", got)
	}
}

func get(t *testing.T, url string, hdr map[string]string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}

func post(t *testing.T, url, body string) (int, string) {
	t.Helper()
	st, b, err := postWith(url, body, nil)
	if err != nil {
		t.Fatal(err)
	}
	return st, b
}

// postWith sends one JSON-RPC body as a client would, without a session,
// with extra headers; it may run in any goroutine.
func postWith(url, body string, hdr map[string]string) (int, string, error) {
	req, _ := http.NewRequest("POST", url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), nil
}

func TestHTTPAuthAndOrigin(t *testing.T) {
	g, _ := gatewayFor(t, nil, standardUpstreams(t)...)
	url := httpGateway(t, g, &HTTPOptions{AuthToken: "s3cret"})
	if st, _ := post(t, url+"/mcp", `{}`); st != http.StatusUnauthorized {
		t.Errorf("no token: %d", st)
	}
	authed := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r.Header.Set("Authorization", "Bearer s3cret")
		return http.DefaultTransport.RoundTrip(r)
	})}
	cs := httpClient(t, url, nil, authed)
	if got := listNames(t, cs); len(got) != 3 {
		t.Errorf("with the token: %v", got)
	}
	// The scheme is case-insensitive; the token is not.
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for auth, want := range map[string]int{"bearer s3cret": 200, "BEARER s3cret": 200, "Bearer S3CRET": 401, "Basic s3cret": 401, "s3cret": 401} {
		st, _, err := postWith(url+"/mcp", ping, map[string]string{"Authorization": auth})
		if err != nil || (st == 401) != (want == 401) {
			t.Errorf("Authorization %q: %d %v, want %d", auth, st, err, want)
		}
	}
	for origin, want := range map[string]int{"http://evil.example": 403, url: 200, "http://localhost:1234": 200} {
		st, _, err := postWith(url+"/mcp", ping, map[string]string{"Authorization": "Bearer s3cret", "Origin": origin})
		if err != nil || (st == 403) != (want == 403) {
			t.Errorf("Origin %s: %d %v", origin, st, err)
		}
	}
	// /healthz says up or down and counts to anyone; each server's state
	// and error only with the token.
	if b := get(t, url+"/healthz", nil); !strings.Contains(b, `"status": "ok"`) || !strings.Contains(b, `"serversReady": 2`) || strings.Contains(b, "github") {
		t.Errorf("healthz without the token: %s", b)
	}
	if b := get(t, url+"/healthz", map[string]string{"Authorization": "Bearer s3cret"}); !strings.Contains(b, `"name": "github"`) {
		t.Errorf("healthz with the token: %s", b)
	}
}

type roundTrip func(*http.Request) (*http.Response, error)

func (f roundTrip) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Activation adds what a session finds to that session only (clients
// of revisions with sessions: MCP 2026-07-28 forbids a tool list that
// varies by connection).
func TestActivate(t *testing.T) {
	g, _ := gatewayFor(t, &Options{Activate: true}, standardUpstreams(t)...)
	url := httpGateway(t, g, nil)
	changed := make(chan struct{}, 10)
	a := httpSessionClient(t, url, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }}, nil)
	b := httpSessionClient(t, url, nil, nil)
	res := call(t, a, toolSearch, map[string]any{"query": "post a slack message", "limit": 1})
	var sr searchResult
	json.Unmarshal([]byte(text(res)), &sr)
	if !slices.Equal(sr.Activated, []string{"mcp__slack__post_message"}) {
		t.Fatalf("activated: %s", text(res))
	}
	select {
	case <-changed:
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Fatal("no list_changed after activation")
	}
	if names := listNames(t, a); !slices.Contains(names, "mcp__slack__post_message") {
		t.Errorf("session a: %v", names)
	}
	if names := listNames(t, b); slices.Contains(names, "mcp__slack__post_message") {
		t.Errorf("session b sees a's activation: %v", names)
	}
	res = call(t, a, "mcp__slack__post_message", map[string]any{"text": "direct"})
	if res.IsError || !strings.Contains(text(res), "direct") {
		t.Errorf("calling the activated tool: %s", text(res))
	}
}

// A client that goes away mid-call cancels the upstream call (stateless:
// each request is bound to its HTTP request).
func TestClientDisconnectCancels(t *testing.T) {
	cmd, env := mcptest.Command("serve", []string{"wait"})
	g, _ := gatewayFor(t, nil, config.ServerConfig{Name: "slow", Command: cmd, Env: env, Timeout: testenv.Timeout(config.DefaultTimeout),
		// Uncontained: it writes its marker in the test's temporary folder.
		NoContain: true})
	marker := filepath.Join(t.TempDir(), "marker")
	disconnectMidCall(t, httpGateway(t, g, &HTTPOptions{Stateless: true}), marker,
		`{"name":"call_tool","arguments":{"name":"mcp__slow__wait","arguments":{"marker":`+strconv.Quote(marker)+`}}}`)
}

// disconnectMidCall sends a tools/call with params to the gateway at url,
// drops the connection once the upstream call has started (mcptest's
// wait tool writes "started" to marker), and waits for the upstream call
// to be cancelled.
func disconnectMidCall(t *testing.T, url, marker, params string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":` + params + `}`
	req, _ := http.NewRequestWithContext(ctx, "POST", url+"/mcp", bytes.NewReader([]byte(body)))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Protocol-Version", "2025-06-18")
	done := make(chan struct{})
	go func() {
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
		}
		close(done)
	}()
	testenv.Eventually(t, config.DefaultTimeout, "the upstream call to start", func() bool {
		b, _ := os.ReadFile(marker)
		return string(b) == "started"
	})
	cancel()
	<-done
	testenv.Eventually(t, config.DefaultTimeout, "the upstream call to be cancelled", func() bool {
		b, _ := os.ReadFile(marker)
		return string(b) == "cancelled"
	})
}

// fakeEmbedder embeds in-process, and fails while fail is set.
type fakeEmbedder struct{ fail atomic.Bool }

func (f *fakeEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	if f.fail.Load() {
		return nil, errors.New("embeddings endpoint: 503")
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = fakeembed.Vector(t)
	}
	return out, nil
}

// With an embedder the gateway searches lexically at once and hybrid once
// the embeddings are ready; when the embedder fails, lexically again.
func TestHybridSearch(t *testing.T) {
	emb := &fakeEmbedder{}
	g, _ := gatewayFor(t, &Options{Engine: "hybrid", Embedder: emb}, standardUpstreams(t)...)
	testenv.Eventually(t, config.DefaultTimeout, "the hybrid engine", func() bool {
		_, ok := g.state.Load().Engine().(*search.Hybrid)
		return ok
	})
	cs := connect(t, g, nil)
	res := call(t, cs, toolSearch, map[string]any{"query": "post a message to a channel", "limit": 1})
	if !strings.Contains(text(res), "mcp__slack__post_message") {
		t.Errorf("hybrid search: %s", text(res))
	}
	emb.fail.Store(true)
	res = call(t, cs, toolSearch, map[string]any{"query": "create an issue", "limit": 1})
	if res.IsError || !strings.Contains(text(res), "mcp__github__create_issue") {
		t.Errorf("search with the endpoint down: %s", text(res))
	}
}

// The hybrid engine on the built-in word vectors needs no embedder: it is
// the engine of every catalog at once.
func TestBuiltinHybridSearch(t *testing.T) {
	g, _ := gatewayFor(t, &Options{Engine: "hybrid"}, standardUpstreams(t)...)
	if _, ok := g.state.Load().Engine().(*search.Hybrid); !ok {
		t.Fatalf("engine %T, want *search.Hybrid", g.state.Load().Engine())
	}
	cs := connect(t, g, nil)
	res := call(t, cs, toolSearch, map[string]any{"query": "post a message to a channel", "limit": 1})
	if !strings.Contains(text(res), "mcp__slack__post_message") {
		t.Errorf("hybrid search: %s", text(res))
	}
}

// With --activate each session has a server of its own: past
// MaxSessions a new one is refused with a clear error, and the open ones
// go on.
func TestMaxSessions(t *testing.T) {
	// Sessions are capped with a server per session (Activate) and with
	// the one shared server (the default).
	for _, activate := range []bool{true, false} {
		t.Run(fmt.Sprint("activate=", activate), func(t *testing.T) { testMaxSessions(t, activate) })
	}
}

func testMaxSessions(t *testing.T, activate bool) {
	g, _ := gatewayFor(t, &Options{Activate: activate, MaxSessions: 2}, standardUpstreams(t)...)
	url := httpGateway(t, g, nil)
	a, b := httpSessionClient(t, url, nil, nil), httpSessionClient(t, url, nil, nil)
	_, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url + "/mcp"}, &mcp.ClientSessionOptions{ProtocolVersion: withSessions})
	if err == nil || !strings.Contains(err.Error(), "Service Unavailable") {
		t.Errorf("a third session: %v", err)
	}
	// A client of a revision without sessions needs none: it is served.
	if names := listNames(t, httpClient(t, url, nil, nil)); len(names) != 3 {
		t.Errorf("a 2026-07-28 client past the sessions' bound: %v", names)
	}
	st, body := post(t, url+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if st != http.StatusServiceUnavailable || !strings.Contains(body, "2 sessions are open, the most it serves (--max-sessions)") {
		t.Errorf("a third session: %d %s", st, body)
	}
	for _, cs := range []*mcp.ClientSession{a, b} {
		if names := listNames(t, cs); len(names) != 3 {
			t.Errorf("an open session: %v", names)
		}
	}
	if m := get(t, url+"/metrics", adminHeader); metricValue(t, m, "toolshelf_sessions_refused_total", map[string]string{"profile": "everything"}) != 2 {
		t.Errorf("metrics: %s", m)
	}
}

// A one-shot client asking for the tool list (in all mode) or the prompt
// list as soon as the gateway starts gets the lists of the servers that
// were still starting, not empty ones.
func TestFirstListsWaitForStartingServers(t *testing.T) {
	for _, method := range []string{"tools/list", "prompts/list"} {
		t.Run(method, func(t *testing.T) {
			srv := mcp.NewServer(&mcp.Implementation{Name: "late", Version: "1"}, nil)
			srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
			srv.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return &mcp.GetPromptResult{}, nil
			})
			cs := connect(t, gatewayAwaited(t, inMemory("late", srv), &Options{Settings: allMode}), nil)
			switch method {
			case "tools/list":
				if names := listNames(t, cs); !slices.Contains(names, "mcp__late__echo") {
					t.Errorf("the first tool list: %v", names)
				}
			case "prompts/list":
				res, err := cs.ListPrompts(context.Background(), nil)
				if err != nil || len(res.Prompts) != 1 || res.Prompts[0].Name != "greet" {
					t.Errorf("the first prompt list: %+v %v", res, err)
				}
			}
		})
	}
}

// metricValue reads one series of /metrics' text: a counter's or gauge's
// value, a histogram's count; -1 when the series is not there.
func metricValue(t *testing.T, body, name string, labels map[string]string) float64 {
	t.Helper()
	samples, err := telemetry.ReadMetrics(strings.NewReader(body))
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	s, ok := telemetry.Find(samples, name, labels)
	if !ok {
		return -1
	}
	return s.Value
}

// testAdmin is the admin token of the tests' HTTP gateways (httpGateway),
// which /metrics and /healthz's details need; adminHeader sends it.
const testAdmin = "admin-token-of-the-tests"

var adminHeader = map[string]string{"Authorization": "Bearer " + testAdmin}

// One path serves both eras: a client of MCP 2026-07-28 without a
// session (the go-sdk's default now), an earlier one with one. Each
// searches and calls; the newer one's search and the call after it are
// followed by its caller, so that search learns from it too.
func TestBothEras(t *testing.T) {
	st := learn.Open(filepath.Join(t.TempDir(), "usage.db"), nil)
	g, _ := gatewayFor(t, &Options{Learn: st}, standardUpstreams(t)...)
	url := httpGateway(t, g, nil)
	for _, tc := range []struct {
		cs      *mcp.ClientSession
		version string
		session bool
	}{
		{httpClient(t, url, nil, nil), "2026-07-28", false},
		{httpSessionClient(t, url, nil, nil), withSessions, true},
	} {
		if got := tc.cs.InitializeResult().ProtocolVersion; got != tc.version || (tc.cs.ID() != "") != tc.session {
			t.Errorf("negotiated %s, session %q; want %s, a session: %v", got, tc.cs.ID(), tc.version, tc.session)
		}
		for range 2 {
			res := call(t, tc.cs, toolSearch, map[string]any{"query": "create a pull request"})
			if !strings.Contains(text(res), "mcp__github__create_pull_request") {
				t.Fatalf("%s: search: %s", tc.version, text(res))
			}
			if res := call(t, tc.cs, toolCall, map[string]any{"name": "mcp__github__create_pull_request", "arguments": map[string]any{"text": "x"}}); res.IsError {
				t.Fatalf("%s: call: %s", tc.version, text(res))
			}
		}
	}
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	pairs, _ := st.Pairs()
	if len(pairs) != 1 || pairs[0].Count != 2 {
		t.Errorf("learned: %+v, want one pair, counted once for each client", pairs)
	}
}
