package gateway

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/rules"
	"github.com/toolshelf/toolshelf/telemetry"
	"github.com/toolshelf/toolshelf/upstream"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// listTokens is the cl100k token count of a client's tools/list result.
func listTokens(t testing.TB, cs *mcp.ClientSession) (tools, tokens int) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var all []*mcp.Tool
	all = append(all, res.Tools...)
	for res.NextCursor != "" {
		if res, err = cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: res.NextCursor}); err != nil {
			t.Fatal(err)
		}
		all = append(all, res.Tools...)
	}
	b, _ := json.Marshal(map[string]any{"tools": all})
	n, err := policy.CL100K(string(b))
	if err != nil {
		t.Fatal(err)
	}
	return len(all), n
}

// The acceptance measurement of the gateway: with the tools of the real
// servers of examples/servers.json (the built-in catalog, which
// internal/builtin's test keeps equal to what they list live), what a
// client's tools/list costs in search mode against listing every tool
// (all mode), with one tokenizer.
func TestTokenSaving(t *testing.T) {
	up := upstream.Fixed(builtin.Catalog(), "the built-in catalog").Scope(nil)
	searchTools, searchTokens := listTokens(t, connect(t, newGateway(t, up, nil), nil))
	allTools, allTokens := listTokens(t, connect(t, newGateway(t, up, &Options{Settings: policy.Settings{Mode: policy.ModeStandard}}), nil))
	ratio := float64(searchTokens) / float64(allTokens)
	t.Logf("tools/list, cl100k tokens: search mode %d tools %d tokens; all mode %d tools %d tokens; %.2f%%", searchTools, searchTokens, allTools, allTokens, 100*ratio)
	if allTools < 500 || ratio >= 0.02 {
		t.Errorf("search mode costs %.2f%% of all mode (%d of %d tokens), want under 2%%", 100*ratio, searchTokens, allTokens)
	}
	testenv.DocSays(t, "docs/benchmarks.md",
		fmt.Sprintf("| all (every tool directly, as without a gateway) | %d | %s | 100%% |", allTools, testenv.Thousands(allTokens)),
		fmt.Sprintf("| search (default: `search_tools`, `call_tool`) | %d | %s | **%.2f%%** |", searchTools, testenv.Thousands(searchTokens), 100*ratio))
}

// callPair returns a client session connected to an in-memory upstream
// directly, and one connected to the same upstream through the gateway.
func callPair(b testing.TB) (direct, viaGateway *mcp.ClientSession) {
	return callPairWith(b, nil, nil, nil)
}

// callPairWith is callPair with the gateway and its pool recording into
// tel (nil: the defaults, which trace nothing), asking the rules of live
// about every call (nil: none), and counting every call in l (nil: none).
func callPairWith(b testing.TB, tel *telemetry.Telemetry, live *rules.Live, l *ledger.Ledger) (direct, viaGateway *mcp.ClientSession) {
	srv, err := mcptest.NewServer("echo", mcptest.SimpleTools("echo"), nil)
	if err != nil {
		b.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	go srv.Run(context.Background(), st)
	direct, err = mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	cfg := config.ServerConfig{Name: "echo", Dial: func(ctx context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		go srv.Run(context.Background(), st)
		return ct, nil
	}}
	pool := upstream.NewPool([]config.ServerConfig{cfg}, &upstream.Options{Telemetry: tel, Policies: live})
	background(b, pool.Run)
	pool.Wait(context.Background())
	g := newGateway(b, pool.Scope(nil), &Options{Telemetry: tel, Ledger: l})
	st2, ct2 := mcp.NewInMemoryTransports()
	go g.MCPServer().Run(context.Background(), st2)
	viaGateway, err = mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), ct2, nil)
	if err != nil {
		b.Fatal(err)
	}
	return direct, viaGateway
}

// BenchmarkCall compares a tools/call made directly to an in-memory
// upstream with the same call made through the gateway's call_tool.
//
// Both run with the garbage collector target that 'toolshelf serve' sets
// (GOGC 400): the SDK's allocations make collection most of the cost.
func BenchmarkCall(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	direct, via := callPair(b)
	benchCallPair(b, direct, via)
}

// BenchmarkCallHTTP is BenchmarkCall over streamable HTTP on loopback,
// as a 2026-07-28 client calls (no session): the upstream served by the
// SDK's own handler, and the same upstream through the gateway's, whose
// front door (authorization, the checks of what a request is, tasks)
// reads the request before the SDK does. Client and servers are in one
// process: the allocations are all three's.
func BenchmarkCallHTTP(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	srv, err := mcptest.NewServer("echo", mcptest.SimpleTools("echo"), nil)
	if err != nil {
		b.Fatal(err)
	}
	upstreamURL := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, &mcp.StreamableHTTPOptions{Stateless: true}))
	b.Cleanup(upstreamURL.Close)
	pool := upstream.NewPool([]config.ServerConfig{{Name: "echo", URL: upstreamURL.URL}}, nil)
	background(b, pool.Run)
	pool.Wait(context.Background())
	g := newGateway(b, pool.Scope(nil), nil)
	front := httptest.NewServer(g.Handler(&HTTPOptions{AuthToken: "bench-token"}))
	b.Cleanup(front.Close)
	session := func(url string, header http.Header) *mcp.ClientSession {
		hc := &http.Client{Transport: headerTransport{header}}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	direct := session(upstreamURL.URL, nil)
	via := session(front.URL+"/mcp", http.Header{"Authorization": {"Bearer bench-token"}})
	benchCallPair(b, direct, via)
}

// benchCallPair calls echo directly and through the gateway, as
// sub-benchmarks path=direct and path=gateway.
func benchCallPair(b *testing.B, direct, via *mcp.ClientSession) {
	args := map[string]any{"text": "hello"}
	b.Run("path=direct", func(b *testing.B) {
		for b.Loop() {
			if _, err := direct.CallTool(context.Background(), &mcp.CallToolParams{Name: "echo", Arguments: args}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("path=gateway", func(b *testing.B) {
		for b.Loop() {
			res, err := via.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: map[string]any{"name": "mcp__echo__echo", "arguments": args}})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
}

// headerTransport adds headers to every request.
type headerTransport struct{ header http.Header }

func (h headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	for k, v := range h.header {
		r.Header[k] = v
	}
	return http.DefaultTransport.RoundTrip(r)
}

// BenchmarkCallRules is call_tool through the gateway with no rules of
// the operators' and with a file of ten: a forbid by argument, an ask, a
// limit of a million a minute, and seven forbids of other tools.
func BenchmarkCallRules(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	file := filepath.Join(b.TempDir(), "team.cedar")
	text := `forbid (principal, action, resource) when { resource.name == "echo" && context.args.text like "*secret*" };
@ask("Delete?") forbid (principal, action, resource) when { resource.destructive };
@limit("1000000/minute") permit (principal, action, resource) when { resource.server == "echo" };
`
	for i := range 7 {
		text += fmt.Sprintf("forbid (principal, action, resource) when { resource.name == \"other_%d\" };\n", i)
	}
	os.WriteFile(file, []byte(text), 0o644)
	live, err := rules.Open(file)
	if err != nil {
		b.Fatal(err)
	}
	args := map[string]any{"name": "mcp__echo__echo", "arguments": map[string]any{"text": "hello"}}
	for _, c := range []struct {
		name string
		live *rules.Live
	}{{"rules=none", nil}, {"rules=10", live}} {
		_, via := callPairWith(b, nil, c.live, nil)
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				res, err := via.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: args})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// BenchmarkCallLedger is call_tool through the gateway without a ledger,
// with the ledger file (every call admitted, then settled: two appends
// under the file's lock), and with a tool-call budget that applies (the
// window summed at each admission).
func BenchmarkCallLedger(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	args := map[string]any{"name": "mcp__echo__echo", "arguments": map[string]any{"text": "hello"}}
	for _, c := range []struct {
		name    string
		ledger  bool
		budgets []ledger.Budget
	}{{"ledger=none", false, nil}, {"ledger=file", true, nil}, {"ledger=file+budget", true, []ledger.Budget{{For: "everyone", ToolCalls: 1 << 40, Per: "day"}}}} {
		var l *ledger.Ledger
		if c.ledger {
			book, err := ledger.OpenFile(filepath.Join(b.TempDir(), ledger.FileName))
			if err != nil {
				b.Fatal(err)
			}
			l = ledger.New(book, &ledger.Options{Budgets: c.budgets})
			defer l.Close()
		}
		_, via := callPairWith(b, nil, nil, l)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				res, err := via.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: args})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

// BenchmarkCallTracing is call_tool through the gateway with tracing off
// (the default), on with an exporter that drops every span, and on with
// OTLP/HTTP to a receiver on loopback that reads and discards what it
// gets (batched, as serve exports).
func BenchmarkCallTracing(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	receiver := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	defer receiver.Close()
	b.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.URL)
	args := map[string]any{"name": "mcp__echo__echo", "arguments": map[string]any{"text": "hello"}}
	for _, tc := range []struct {
		name string
		tel  func() (*telemetry.Telemetry, error)
	}{
		{"tracing=off", func() (*telemetry.Telemetry, error) { return nil, nil }},
		{"tracing=drop", func() (*telemetry.Telemetry, error) {
			return telemetry.New(context.Background(), &telemetry.Options{Getenv: noEnv, SpanExporter: tracetest.NewNoopExporter()})
		}},
		{"tracing=otlp", func() (*telemetry.Telemetry, error) { return telemetry.New(context.Background(), nil) }},
	} {
		b.Run(tc.name, func(b *testing.B) {
			tel, err := tc.tel()
			if err != nil {
				b.Fatal(err)
			}
			if tel != nil {
				defer tel.Shutdown(context.Background())
			}
			_, via := callPairWith(b, tel, nil, nil)
			b.ReportAllocs()
			for b.Loop() {
				res, err := via.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: args})
				if err != nil || res.IsError {
					b.Fatal(err, res)
				}
			}
		})
	}
}

var loadDuration = flag.Duration("load", 3*time.Second, "how long TestLoad runs (60s for the record in docs/reliability.md)")

// TestLoad runs 50 concurrent HTTP clients against the gateway, with a
// token, in front of a real server (server-memory), for a bounded time.
// Each client cycles through search_tools, call_tool on read_graph, and a
// hostile request: a call_tool with a one-megabyte name, malformed JSON,
// or a wrong token. No well-formed request may fail, and every hostile
// one must get its clear refusal. It reports throughput, latency
// percentiles of the well-formed requests and the peak resident memory
// (go test -v -run TestLoad -load 60s ./gateway).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	testenv.RequireNPM(t, "testdata/servers")
	const clients = 50
	dir := testenv.WritableDir(t)
	memory := config.ServerConfig{
		Name: "memory", Command: "node", Cwd: "../testdata/servers",
		Args:       []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"},
		Env:        map[string]string{"MEMORY_FILE_PATH": dir + "/m.jsonl"},
		WritePaths: []string{dir},
		Timeout:    testenv.Timeout(config.DefaultTimeout),
	}
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	auditLog, err := audit.Open(auditFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	actx, cancelAudit := context.WithCancel(context.Background())
	auditDone := make(chan struct{})
	go func() { defer close(auditDone); auditLog.Run(actx) }()
	stopAudit := func() { cancelAudit(); <-auditDone }
	t.Cleanup(stopAudit)
	g, _ := gatewayFor(t, &Options{Audit: auditLog}, memory)
	const token = "load-token"
	url := httpGateway(t, g, &HTTPOptions{AuthToken: token})
	authed := &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultTransport.RoundTrip(r)
	})}
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		sessions[i] = httpClient(t, url, nil, authed)
	}
	huge := strings.Repeat("n", 1<<20)
	var hugeCalls atomic.Int64 // tools/call requests among the hostile ones
	hostile := []func() (ok bool, what string){
		func() (bool, string) { // a one-megabyte unknown name: a short tool error
			hugeCalls.Add(1)
			res, err := sessions[0].CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: map[string]any{"name": huge}})
			return err == nil && res.IsError && len(text(res)) < 2000, fmt.Sprint("1 MB name: ", err)
		},
		func() (bool, string) { // malformed JSON: 400
			st, _, _ := postWith(url+"/mcp", `{"jsonrpc":"2.0","id":1,"method":`, map[string]string{"Authorization": "Bearer " + token})
			return st == http.StatusBadRequest, fmt.Sprint("malformed JSON: ", st)
		},
		func() (bool, string) { // a wrong token: 401
			st, _, _ := postWith(url+"/mcp", `{"jsonrpc":"2.0","id":1,"method":"ping"}`, map[string]string{"Authorization": "Bearer wrong"})
			return st == http.StatusUnauthorized, fmt.Sprint("wrong token: ", st)
		},
	}
	var mu sync.Mutex
	var lat []time.Duration
	var failures []string
	hostileDone := 0
	deadline := time.Now().Add(*loadDuration)
	var wg sync.WaitGroup
	for i, cs := range sessions {
		wg.Go(func() {
			var mine []time.Duration
			var fails []string
			nh := 0
			for n := 0; time.Now().Before(deadline); n++ {
				if n%4 == 3 {
					if ok, what := hostile[(i+n/4)%len(hostile)](); !ok {
						fails = append(fails, what)
					}
					nh++
					continue
				}
				start := time.Now()
				var res *mcp.CallToolResult
				var err error
				if n%4 == 0 {
					res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolSearch, Arguments: map[string]any{"query": "read the knowledge graph"}})
				} else {
					res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: map[string]any{"name": "mcp__memory__read_graph"}})
				}
				mine = append(mine, time.Since(start))
				if err != nil || res.IsError {
					fails = append(fails, fmt.Sprint(err, res))
				}
			}
			mu.Lock()
			lat, failures, hostileDone = append(lat, mine...), append(failures, fails...), hostileDone+nh
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed; first: %s", len(failures), len(lat)+hostileDone, failures[0])
	}
	// The audit log holds one line per tools/call request made: the
	// well-formed ones and the 1 MB names (malformed bodies and wrong
	// tokens never reach a tool).
	stopAudit()
	recs, bad, err := audit.Read(auditFile, time.Time{})
	if err != nil || bad > 0 {
		t.Fatalf("reading the audit log: %v (%d bad lines)", err, bad)
	}
	if want := len(lat) + int(hugeCalls.Load()); len(recs) != want || auditLog.Dropped() != 0 {
		t.Errorf("the audit log has %d lines (%d dropped), want %d", len(recs), auditLog.Dropped(), want)
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	t.Logf("%d clients, %v: %d well-formed requests (%.0f/s), p50 %v, p99 %v, max %v; %d hostile requests refused; %d audit lines; peak RSS %s",
		clients, *loadDuration, len(lat), float64(len(lat))/loadDuration.Seconds(), pct(0.50), pct(0.99), lat[len(lat)-1], hostileDone, len(recs), testenv.PeakRSS())
}

// BenchmarkCallRealServer is BenchmarkCall against a real npm server over
// stdio (server-memory's read_graph): what a forwarded call costs when the
// upstream is a process, as it is for users.
func BenchmarkCallRealServer(b *testing.B) {
	testenv.RequireNPM(b, "testdata/servers")
	dir := testenv.WritableDir(b)
	cfg := config.ServerConfig{
		Name: "memory", Command: "node", Cwd: "../testdata/servers",
		Args:       []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"},
		Env:        map[string]string{"MEMORY_FILE_PATH": dir + "/m.jsonl"},
		WritePaths: []string{dir},
	}
	pool := upstream.NewPool([]config.ServerConfig{cfg}, nil)
	background(b, pool.Run)
	pool.Wait(context.Background())
	g := newGateway(b, pool.Scope(nil), nil)
	st, ct := mcp.NewInMemoryTransports()
	go g.MCPServer().Run(context.Background(), st)
	via, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	b.Run("path=pool", func(b *testing.B) {
		for b.Loop() {
			if _, err := pool.Scope(nil).Call(context.Background(), "mcp__memory__read_graph", nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("path=gateway", func(b *testing.B) {
		for b.Loop() {
			res, err := via.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: map[string]any{"name": "mcp__memory__read_graph"}})
			if err != nil || res.IsError {
				b.Fatal(err, res)
			}
		}
	})
}
