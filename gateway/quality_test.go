package gateway

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/telemetry"
)

// Search quality in production: ten searches, each followed by a call of
// the tool at a known rank of its result, give the rank histogram that
// /metrics serves (online recall@1, @5 and @10 are its buckets); a call of
// a tool no search ranked counts as unsearched (via none, or via select
// when a select: search named it), and a search whose tools the session
// never calls counts as unused once the session is forgotten.
func TestSearchRankMetrics(t *testing.T) {
	var tools []json.RawMessage
	for i := range 12 {
		tools = append(tools, rawTool(fmt.Sprintf("report_%02d", i), fmt.Sprintf("Build the quarterly sales report number %d for the region", i), nil))
	}
	g, _ := gatewayFor(t, nil, memServer(t, "sales", tools))
	url := httpGateway(t, g, nil)
	// A session, which ends: then its searches nothing followed count.
	cs := httpSessionClient(t, url, nil, nil)

	search := func(query string, limit int) []string {
		t.Helper()
		var res struct{ Matches []struct{ Name string } }
		json.Unmarshal([]byte(text(call(t, cs, toolSearch, map[string]any{"query": query, "limit": limit}))), &res)
		var names []string
		for _, m := range res.Matches {
			names = append(names, m.Name)
		}
		return names
	}
	ranks := []int{1, 1, 1, 2, 3, 5, 1, 8, 2, 10}
	for i, rank := range ranks {
		found := search(fmt.Sprintf("quarterly sales report %d", i), 10)
		if len(found) < rank {
			t.Fatalf("search %d found %d tools", i, len(found))
		}
		if res := call(t, cs, toolCall, map[string]any{"name": found[rank-1], "arguments": map[string]any{}}); res.IsError {
			t.Fatalf("call: %s", text(res))
		}
	}
	// Called with no search that ranked it: by name, then after select:.
	call(t, cs, toolCall, map[string]any{"name": "mcp__sales__report_11", "arguments": map[string]any{}})
	if names := search("select:mcp__sales__report_10", 5); len(names) != 1 {
		t.Fatalf("select: %v", names)
	}
	call(t, cs, toolCall, map[string]any{"name": "mcp__sales__report_10", "arguments": map[string]any{}})
	// A search nothing follows, then the session ends and is forgotten.
	search("quarterly report for the board", 5)
	cs.Close()
	g.learn.sweep(map[*mcp.ServerSession]bool{})

	samples, err := telemetry.ReadMetrics(strings.NewReader(get(t, url+"/metrics", adminHeader)))
	if err != nil {
		t.Fatal(err)
	}
	h, ok := telemetry.Find(samples, "toolshelf_search_rank", map[string]string{"profile": "everything", "server": "sales"})
	if !ok {
		t.Fatalf("no rank histogram: %v", samples)
	}
	for bound, want := range map[float64]uint64{1: 4, 2: 6, 5: 8, 10: 10, math.Inf(1): 10} {
		if h.Buckets[bound] != want {
			t.Errorf("searches whose called tool ranked at or above %v: %d, want %d (%v)", bound, h.Buckets[bound], want, h.Buckets)
		}
	}
	for via, want := range map[string]float64{"none": 1, "select": 1} {
		if s, _ := telemetry.Find(samples, "toolshelf_calls_unsearched_total", map[string]string{"profile": "everything", "server": "sales", "via": via}); s.Value != want {
			t.Errorf("unsearched calls via %s: %v, want %v", via, s.Value, want)
		}
	}
	if s, _ := telemetry.Find(samples, "toolshelf_searches_unused_total", map[string]string{"profile": "everything"}); s.Value != 1 {
		t.Errorf("unused searches: %v, want 1", s.Value)
	}
}
