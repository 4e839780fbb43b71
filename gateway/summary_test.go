package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/upstream"
)

// searchDescription returns search_tools' description as a client lists it.
func searchDescription(t *testing.T, cs *mcp.ClientSession) string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range res.Tools {
		if tool.Name == toolSearch {
			return tool.Description
		}
	}
	t.Fatal("search_tools is not listed")
	return ""
}

// In search mode the model is told what it can find: search_tools'
// description and the instructions name every built-in server, within the
// budget, and a new server changes the description (and the client is
// told).
func TestSearchToolNamesTheServers(t *testing.T) {
	c := builtin.Catalog()
	g, err := New(upstream.Fixed(c, "test").Scope(nil), nil)
	if err != nil {
		t.Fatal(err)
	}
	changed := make(chan struct{}, 16)
	cs := connect(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	desc := searchDescription(t, cs)
	_, servers, ok := strings.Cut(desc, serversHeading+"\n")
	if !ok {
		t.Fatalf("search_tools names no server:\n%s", desc)
	}
	for _, name := range c.ServerNames() {
		if !strings.Contains(servers, "\n"+name+" (") && !strings.HasPrefix(servers, name+" (") {
			t.Errorf("search_tools does not name %s", name)
		}
	}
	total := 0
	for _, line := range strings.Split(servers, "\n") {
		n, _ := policy.CL100K(line)
		if n > policy.SummaryServerTokens {
			t.Errorf("%d tokens for one server: %s", n, line)
		}
		total += n
	}
	if total > policy.SummaryTotalTokens {
		t.Errorf("the summaries take %d tokens, over %d", total, policy.SummaryTotalTokens)
	}
	// What a client's tools/list costs now (docs/benchmarks.md).
	res, _ := cs.ListTools(context.Background(), nil)
	listed, _ := json.Marshal(res.Tools)
	n, _ := policy.CL100K(string(listed))
	t.Logf("tools/list in search mode: %d characters, %d cl100k tokens; the summaries %d tokens", len(listed), n, total)
	testenv.DocSays(t, "docs/benchmarks.md",
		fmt.Sprintf("| with them: `search_tools` names every server with what its tools do | %s | %d |", testenv.Thousands(len(listed)), n),
		fmt.Sprintf("The summaries take %d tokens for the %d servers", total, len(c.ServerNames())))
	if ins := cs.InitializeResult().Instructions; !strings.Contains(ins, "github (26 tools)") {
		t.Errorf("the instructions do not name the servers:\n%s", ins)
	}

	// A server joins.
	var es []catalog.Entry
	for e := range c.All() {
		es = append(es, *e)
	}
	raw, _ := json.Marshal(map[string]any{"name": "forecast", "description": "Weather forecast for a city.", "inputSchema": map[string]any{"type": "object"}})
	e, err := catalog.ParseTool("weather", raw)
	if err != nil {
		t.Fatal(err)
	}
	g.Update(catalog.New(append(es, e), c.Servers()))
	testenv.Eventually(t, 10*time.Second, "tools/list_changed", func() bool {
		select {
		case <-changed:
			return true
		default:
			return false
		}
	})
	if d := searchDescription(t, cs); !strings.Contains(d, "weather (1 tool): Weather forecast for a city.") {
		t.Errorf("the new server is not described:\n%s", d)
	}
}

// Past the budget, the largest servers are described and the rest named.
func TestSummariesBudget(t *testing.T) {
	var es []catalog.Entry
	for i := range 60 {
		raw, _ := json.Marshal(map[string]any{"name": "tool", "description": "Does a thing with widgets and gadgets.", "inputSchema": map[string]any{"type": "object"}})
		e, _ := catalog.ParseTool("server"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26)), raw)
		es = append(es, e)
	}
	lines := policy.Summaries(catalog.New(es, nil))
	total := 0
	for _, l := range lines {
		n, _ := policy.CL100K(l)
		total += n
	}
	last := lines[len(lines)-1]
	if total > policy.SummaryTotalTokens || !strings.HasPrefix(last, "and ") || !strings.Contains(last, " more: ") {
		t.Errorf("%d tokens, last line %q", total, last)
	}
}

// A client knows what is missing: with a server that failed (a real
// process that exits at once, saying why), search_tools' description
// lists it apart from the connected ones, a search that finds nothing
// among the connected servers' tools says that the failed server was not
// searched and why, and a call of one of its tools says the server is
// down, not that there is no such tool.
func TestClientToldWhatIsNotConnected(t *testing.T) {
	failing := config.ServerConfig{Name: "memory", Command: "/bin/sh", NoContain: true,
		Args: []string{"-c", "echo 'cannot open the knowledge graph file: permission denied' >&2; exit 3"}}
	notes := memServer(t, "notes", []json.RawMessage{rawTool("append_note", "Append a line to the notes file", nil)})
	pool := upstream.NewPool([]config.ServerConfig{failing, notes}, &upstream.Options{RestartDelay: time.Hour})
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*config.DefaultTimeout))
	defer cancel()
	pool.Wait(ctx)
	g := newGateway(t, pool.Scope(nil), nil)
	cs := connect(t, g, nil)

	testenv.Eventually(t, time.Minute, "search_tools' description to name the failed server", func() bool {
		return strings.Contains(searchDescription(t, cs), notConnectedHeading+"\n- memory (failed: ")
	})
	desc := searchDescription(t, cs)
	if !strings.Contains(desc, "permission denied") || !strings.Contains(desc, serversHeading+"\nnotes") {
		t.Errorf("search_tools' description:\n%s", desc)
	}

	res := call(t, cs, toolSearch, map[string]any{"query": "remember a fact about a person in the knowledge graph"})
	var got searchResult
	if err := json.Unmarshal([]byte(text(res)), &got); err != nil {
		t.Fatalf("search: %v\n%s", err, text(res))
	}
	if len(got.NotConnected) != 1 || got.NotConnected[0].Server != "memory" || got.NotConnected[0].State != "failed" || !strings.Contains(got.NotConnected[0].Why, "permission denied") {
		t.Errorf("not_connected: %+v", got.NotConnected)
	}
	if len(got.Matches) > 0 && !got.Weak {
		t.Fatalf("a confident match among the notes server's tools: %s", text(res))
	}
	if got.Weak && (got.WeakReason == "" || !strings.Contains(got.Note, got.WeakReason)) {
		t.Errorf("a weak answer without its reason: %q, note %q", got.WeakReason, got.Note)
	}
	if !strings.Contains(got.Note, "memory (failed: ") || !strings.Contains(got.Note, "permission denied") || strings.Contains(got.Note, "Try other words") {
		t.Errorf("the note of a search that found nothing: %q", got.Note)
	}

	res = call(t, cs, toolCall, map[string]any{"name": "mcp__memory__create_entities", "arguments": map[string]any{}})
	if !res.IsError || !strings.Contains(text(res), "server memory, which is not connected now") || strings.Contains(text(res), "there is no tool") {
		t.Errorf("a call of the failed server's tool: %s", text(res))
	}
	// A name of no server is still unknown.
	res = call(t, cs, toolCall, map[string]any{"name": "mcp__nowhere__create_entities", "arguments": map[string]any{}})
	if !res.IsError || !strings.Contains(text(res), "there is no tool") {
		t.Errorf("a call of no server's tool: %s", text(res))
	}
}
