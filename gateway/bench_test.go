package gateway

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"runtime/debug"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/upstream"
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
	up := CatalogOnly{Cat: builtin.Catalog(), Source: "the built-in catalog"}
	searchTools, searchTokens := listTokens(t, connect(t, newGateway(t, up, nil), nil))
	allTools, allTokens := listTokens(t, connect(t, newGateway(t, up, &Options{Settings: policy.Settings{Mode: policy.ModeStandard}}), nil))
	ratio := float64(searchTokens) / float64(allTokens)
	t.Logf("tools/list, cl100k tokens: search mode %d tools %d tokens; all mode %d tools %d tokens; %.2f%%", searchTools, searchTokens, allTools, allTokens, 100*ratio)
	if allTools < 500 || ratio >= 0.02 {
		t.Errorf("search mode costs %.2f%% of all mode (%d of %d tokens), want under 2%%", 100*ratio, searchTokens, allTokens)
	}
}

// callPair returns a client session connected to an in-memory upstream
// directly, and one connected to the same upstream through the gateway.
func callPair(b testing.TB) (direct, viaGateway *mcp.ClientSession) {
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
	cfg := upstream.ServerConfig{Name: "echo", Dial: func(ctx context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		go srv.Run(context.Background(), st)
		return ct, nil
	}}
	pool := upstream.NewPool([]upstream.ServerConfig{cfg}, nil)
	background(b, pool.Run)
	pool.Wait(context.Background())
	g := newGateway(b, pool, nil)
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

var loadDuration = flag.Duration("load", 2*time.Second, "how long TestLoad runs")

// TestLoad runs 50 concurrent HTTP clients against the gateway for a
// bounded time, each searching and calling, and requires that no request
// fails. It reports throughput and latency percentiles (go test -v -run
// TestLoad -load 10s ./gateway).
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("load test")
	}
	const clients = 50
	g, _ := gatewayFor(t, nil, memServer(t, "echo", mcptest.SimpleTools("echo", "search_docs", "create_issue")))
	url := httpGateway(t, g, nil)
	sessions := make([]*mcp.ClientSession, clients)
	for i := range sessions {
		sessions[i] = httpClient(t, url, nil, nil)
	}
	var mu sync.Mutex
	var lat []time.Duration
	var failures []string
	deadline := time.Now().Add(*loadDuration)
	var wg sync.WaitGroup
	for i, cs := range sessions {
		wg.Go(func() {
			var mine []time.Duration
			for n := 0; time.Now().Before(deadline); n++ {
				start := time.Now()
				var res *mcp.CallToolResult
				var err error
				if n%4 == 0 {
					res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolSearch, Arguments: map[string]any{"query": "create an issue"}})
				} else {
					res, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: map[string]any{"name": "mcp__echo__echo", "arguments": map[string]any{"text": fmt.Sprint(i, n)}}})
				}
				mine = append(mine, time.Since(start))
				if err != nil || res.IsError {
					mu.Lock()
					failures = append(failures, fmt.Sprint(err, res))
					mu.Unlock()
				}
			}
			mu.Lock()
			lat = append(lat, mine...)
			mu.Unlock()
		})
	}
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d of %d requests failed; first: %s", len(failures), len(lat), failures[0])
	}
	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[min(len(lat)-1, int(p*float64(len(lat))))] }
	t.Logf("%d clients, %v: %d requests, %.0f req/s, p50 %v, p99 %v, max %v",
		clients, *loadDuration, len(lat), float64(len(lat))/loadDuration.Seconds(), pct(0.50), pct(0.99), lat[len(lat)-1])
}

// BenchmarkCallRealServer is BenchmarkCall against a real npm server over
// stdio (server-memory's read_graph): what a forwarded call costs when the
// upstream is a process, as it is for users.
func BenchmarkCallRealServer(b *testing.B) {
	testenv.RequireNPM(b, "testdata/servers")
	cfg := upstream.ServerConfig{
		Name: "memory", Command: "node", Cwd: "../testdata/servers",
		Args: []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"},
		Env:  map[string]string{"MEMORY_FILE_PATH": b.TempDir() + "/m.jsonl"},
	}
	pool := upstream.NewPool([]upstream.ServerConfig{cfg}, nil)
	background(b, pool.Run)
	pool.Wait(context.Background())
	g := newGateway(b, pool, nil)
	st, ct := mcp.NewInMemoryTransports()
	go g.MCPServer().Run(context.Background(), st)
	via, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer debug.SetGCPercent(debug.SetGCPercent(400))
	b.Run("path=pool", func(b *testing.B) {
		for b.Loop() {
			if _, err := pool.Call(context.Background(), "mcp__memory__read_graph", nil); err != nil {
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
