package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/shelf"
)

// These tests put clients nobody here wrote in front of 'toolshelf proxy':
// Claude Code and the official OpenAI client for Node (both pinned in
// testdata/clients), with a scripted model API behind the proxy.

// proxyURL matches the base URL in the proxy's start-up log.
var proxyURL = regexp.MustCompile(`url=(http://\S+)`)

// startProxy runs 'toolshelf proxy' in front of upstream, as a process
// with folders of its own, and returns its base URL.
func startProxy(t *testing.T, upstream string, args ...string) string {
	t.Helper()
	cmd := exec.Command(toolshelf, append([]string{"proxy", "--listen", "127.0.0.1:0", "--upstream", upstream}, args...)...)
	dir := t.TempDir()
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "XDG_STATE_HOME="+filepath.Join(dir, "state"))
	return testenv.Listening(t, cmd, "the proxy", proxyURL)
}

// claudeAPI is a scripted Messages API for Claude Code: it searches
// for the memory tool, calls it once found, and ends once the tool's
// result is back; a request of a client that searches itself gets a text
// answer. It streams when asked to, as the API does.
type claudeAPI struct {
	mu   sync.Mutex
	seen []messages.Request
	urls []string
}

func (a *claudeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req messages.Request
	if err := json.NewDecoder(r.Body).Decode(&req); err != nil || r.URL.Path != "/v1/messages" {
		http.Error(w, "not a messages request", 400)
		return
	}
	a.mu.Lock()
	a.seen = append(a.seen, req)
	a.urls = append(a.urls, r.URL.String())
	a.mu.Unlock()
	results := map[string]bool{}
	for _, b := range req.Messages[len(req.Messages)-1].Content {
		if b.Type == "tool_result" {
			results[b.String("tool_use_id")] = true
		}
	}
	var content string
	stop := "tool_use"
	switch {
	case slices.ContainsFunc(req.Tools, func(t messages.Tool) bool { return t.Name == "ToolSearch" }):
		content, stop = `{"type":"text","text":"Passed through."}`, "end_turn"
	case results["toolu_c1"]:
		content, stop = `{"type":"text","text":"Created the entity."}`, "end_turn"
	case results["toolu_s1"]:
		content = `{"type":"tool_use","id":"toolu_c1","name":"mcp__memory__create_entities","input":{"entities":[{"name":"toolshelf","entityType":"project","observations":["defers tool definitions"]}]}}`
	default:
		content = `{"type":"tool_use","id":"toolu_s1","name":"tool_search","input":{"query":"create entities in the knowledge graph"}}`
	}
	answer(w, req, content, stop)
}

// answer writes one content block as the Messages API's answer to req:
// whole, or streamed when req asks for a stream.
func answer(w http.ResponseWriter, req messages.Request, content, stop string) {
	var stream bool
	_ = json.Unmarshal(req.Extra["stream"], &stream)
	if !stream {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":10}}`, req.Model, content, stop)
		return
	}
	// As the API streams it: the block's start without its text or
	// input, which follow as one delta.
	var block map[string]any
	_ = json.Unmarshal([]byte(content), &block)
	var delta string
	if block["type"] == "text" {
		d, _ := json.Marshal(map[string]any{"type": "text_delta", "text": block["text"]})
		delta, block["text"] = string(d), ""
	} else {
		in, _ := json.Marshal(block["input"])
		d, _ := json.Marshal(map[string]any{"type": "input_json_delta", "partial_json": string(in)})
		delta, block["input"] = string(d), map[string]any{}
	}
	start, _ := json.Marshal(map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
	w.Header().Set("Content-Type", "text/event-stream")
	ev := func(name, data string) { fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, data) }
	ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":1}}}`, req.Model))
	ev("content_block_start", string(start))
	ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":`+delta+`}`)
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", fmt.Sprintf(`{"type":"message_delta","delta":{"stop_reason":%q,"stop_sequence":null},"usage":{"output_tokens":10}}`, stop))
	ev("message_stop", `{"type":"message_stop"}`)
}

// claude runs Claude Code in print mode with the proxy as its API and
// server-memory as its one MCP server, in a home of its own.
func claude(t *testing.T, proxyURL, memoryFile string, env ...string) (string, error) {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join(clientsDir, "node_modules", ".bin", "claude"))
	if err != nil {
		t.Fatal(err)
	}
	memory, _ := filepath.Abs("../testdata/servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	cfg := filepath.Join(t.TempDir(), "mcp.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"memory": map[string]any{
		"command": "node", "args": []string{memory}, "env": map[string]string{"MEMORY_FILE_PATH": memoryFile},
	}}})
	os.WriteFile(cfg, b, 0o644)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "-p", "Remember that toolshelf defers tool definitions.",
		"--mcp-config", cfg, "--strict-mcp-config", "--allowedTools", "mcp__memory__create_entities")
	cmd.Dir = t.TempDir()
	cmd.Env = append([]string{
		"HOME=" + t.TempDir(), "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_API_KEY=sk-ant-test-key", "ANTHROPIC_BASE_URL=" + proxyURL,
		"DISABLE_TELEMETRY=1", "DISABLE_ERROR_REPORTING=1", "DISABLE_AUTOUPDATER=1",
		"CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1",
	}, env...)
	out, err := cmd.CombinedOutput()
	if ctx.Err() != nil {
		return string(out), fmt.Errorf("Claude Code timed out: %w", ctx.Err())
	}
	return string(out), err
}

// Claude Code (the npm package, pinned in testdata/clients) in front of
// toolshelf proxy, whose upstream is a scripted Messages API: with its own
// tool search off, the request that reaches the API carries the proxy's
// search tool and not the MCP tools; the proxy answers the search, the
// model's call of the tool found runs in Claude Code through its MCP
// server, and the transcript ends normally. With Claude Code's tool search
// on, its requests pass through unchanged.
func TestClaudeCodeThroughProxy(t *testing.T) {
	t.Parallel()
	requireClients(t)
	api := &claudeAPI{}
	srv := httptest.NewServer(api)
	defer srv.Close()
	// server-memory's nine tools are few: --mode search defers them
	// whatever they cost.
	url := startProxy(t, srv.URL, "--mode", "search")

	memoryFile := filepath.Join(t.TempDir(), "memory.jsonl")
	out, err := claude(t, url, memoryFile, "ENABLE_TOOL_SEARCH=false")
	if err != nil || !strings.Contains(out, "Created the entity.") {
		t.Fatalf("Claude Code: %v\n%s", err, out)
	}
	api.mu.Lock()
	seen := slices.Clone(api.seen)
	urls := slices.Clone(api.urls)
	api.mu.Unlock()
	if len(seen) < 3 {
		t.Fatalf("%d requests reached the API, want the search round, the call and the end", len(seen))
	}
	tools := func(r messages.Request) (search, memory int) {
		for _, tl := range r.Tools {
			if tl.Name == "tool_search" {
				search++
			}
			if strings.HasPrefix(tl.Name, "mcp__memory__") {
				memory++
			}
		}
		return
	}
	if s, m := tools(seen[0]); s != 1 || m != 0 {
		t.Errorf("the first request carried the search tool %d times and %d memory tools", s, m)
	}
	if s, m := tools(seen[1]); s != 1 || m == 0 || m > shelf.DefaultLimit || !slices.ContainsFunc(seen[1].Tools, func(t messages.Tool) bool { return t.Name == "mcp__memory__create_entities" }) {
		t.Errorf("the search round carried %d search tools and %d memory tools, want create_entities among at most %d found", s, m, shelf.DefaultLimit)
	}
	if !strings.Contains(urls[0], "beta=true") {
		t.Errorf("the query was not kept: %s", urls[0])
	}
	if b, _ := os.ReadFile(memoryFile); !strings.Contains(string(b), "defers tool definitions") {
		t.Errorf("the tool did not run in Claude Code's MCP server: %q", b)
	}

	// Claude Code's own tool search on: nothing is rewritten.
	api.mu.Lock()
	api.seen = nil
	api.mu.Unlock()
	out, err = claude(t, url, filepath.Join(t.TempDir(), "memory.jsonl"), "ENABLE_TOOL_SEARCH=true")
	if err != nil || !strings.Contains(out, "Passed through.") {
		t.Fatalf("Claude Code with its tool search: %v\n%s", err, out)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	for _, r := range api.seen {
		if s, _ := tools(r); s != 0 {
			t.Errorf("a request of a client that searches itself was rewritten")
		}
	}
}

// The official OpenAI client for Node against the proxy's Chat
// Completions face, in front of a scripted upstream: the upstream sees
// the search tool instead of the catalog's tools, the proxy answers the
// search, and the client gets the found tool's call, plainly and
// streaming, with the rounds' usage added up.
func TestOpenAIClientThroughProxy(t *testing.T) {
	t.Parallel()
	requireClients(t)
	var mu sync.Mutex
	var seen []int // tools per upstream request
	var keys []string
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Tools    []json.RawMessage `json:"tools"`
			Messages []struct {
				Role string `json:"role"`
			} `json:"messages"`
			Stream bool `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		mu.Lock()
		seen = append(seen, len(req.Tools))
		keys = append(keys, r.Header.Get("Authorization"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		call := `{"id":"call_1","type":"function","function":{"name":"tool_search","arguments":"{\"query\":\"create a github issue\"}"}}`
		if req.Messages[len(req.Messages)-1].Role == "tool" {
			call = `{"id":"call_2","type":"function","function":{"name":"mcp__github__create_issue","arguments":"{\"title\":\"crash\"}"}}`
		}
		fmt.Fprintf(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-test","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[%s]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":100,"completion_tokens":10,"total_tokens":110}}`, call)
	}))
	defer api.Close()
	url := startProxy(t, api.URL)

	out, err := node(t, "node", "openai-client.mjs", url+"/v1")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	type outcome struct {
		Finish string
		Calls  [][2]string
		Usage  map[string]int
	}
	var res struct {
		Tools           int
		Plain, Streamed outcome
	}
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &res); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for name, r := range map[string]outcome{"plain": res.Plain, "streamed": res.Streamed} {
		if r.Finish != "tool_calls" || len(r.Calls) != 1 || r.Calls[0][0] != "mcp__github__create_issue" || r.Calls[0][1] != `{"title":"crash"}` {
			t.Errorf("%s: %+v", name, r)
		}
		if r.Usage["prompt_tokens"] != 200 || r.Usage["total_tokens"] != 220 {
			t.Errorf("%s usage %v, want two rounds added up", name, r.Usage)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 4 || seen[0] != 1 || seen[1] < 2 {
		t.Errorf("tools per upstream request %v (the client sent %d)", seen, res.Tools)
	}
	for _, k := range keys {
		if k != "Bearer sk-openai-client-key" {
			t.Errorf("the upstream got Authorization %q", k)
		}
	}
}
