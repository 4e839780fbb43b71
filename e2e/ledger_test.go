package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// usageAPI is a model API that reports usage as the real ones do, whole
// or streamed (the Messages API's and Chat Completions'), and keeps the
// keys it was sent. A request for noUsageModel gets an answer without
// usage.
type usageAPI struct {
	mu   sync.Mutex
	keys []string
}

const noUsageModel = "claude-haiku-4-5"

func (a *usageAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model  string `json:"model"`
		Stream bool   `json:"stream"`
	}
	body, _ := io.ReadAll(r.Body)
	json.Unmarshal(body, &req)
	a.mu.Lock()
	a.keys = append(a.keys, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"))
	a.mu.Unlock()
	ev := func(name, data string) {
		if name != "" {
			fmt.Fprintf(w, "event: %s\n", name)
		}
		fmt.Fprintf(w, "data: %s\n\n", data)
	}
	switch {
	case r.URL.Path == "/v1/messages" && !req.Stream:
		usage := `,"usage":{"input_tokens":120,"output_tokens":15,"cache_read_input_tokens":30,"cache_creation_input_tokens":10}`
		if req.Model == noUsageModel {
			usage = ""
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"Hello."}],"stop_reason":"end_turn","stop_sequence":null%s}`, req.Model, usage)
	case r.URL.Path == "/v1/messages":
		w.Header().Set("Content-Type", "text/event-stream")
		ev("message_start", fmt.Sprintf(`{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":%q,"content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":120,"output_tokens":1,"cache_read_input_tokens":30,"cache_creation_input_tokens":10}}}`, req.Model))
		ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello."}}`)
		ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
		ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":15}}`)
		ev("message_stop", `{"type":"message_stop"}`)
	case r.URL.Path == "/v1/chat/completions" && !req.Stream:
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"gpt-5.5","choices":[{"index":0,"message":{"role":"assistant","content":"Hello."},"finish_reason":"stop"}],"usage":{"prompt_tokens":200,"completion_tokens":20,"total_tokens":220,"prompt_tokens_details":{"cached_tokens":50}}}`)
	case r.URL.Path == "/v1/chat/completions":
		w.Header().Set("Content-Type", "text/event-stream")
		chunk := `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-5.5","choices":[%s]%s}`
		ev("", fmt.Sprintf(chunk, `{"index":0,"delta":{"role":"assistant","content":"Hello."},"finish_reason":null}`, ""))
		ev("", fmt.Sprintf(chunk, `{"index":0,"delta":{},"finish_reason":"stop"}`, ""))
		ev("", fmt.Sprintf(chunk, "", `,"usage":{"prompt_tokens":200,"completion_tokens":20,"total_tokens":220,"prompt_tokens_details":{"cached_tokens":50}}`))
		ev("", "[DONE]")
	default:
		http.Error(w, "not found", 404)
	}
}

// ledgerRow is a row of 'toolshelf usage --json'.
type ledgerRow struct {
	Key                                                       string
	Requests, OwnRounds, Input, Output, CacheRead, CacheWrite int64
	USD                                                       float64
	ToolCalls, Held                                           int64
}

// usageRows runs 'toolshelf usage --json' over the ledger in state.
func usageRows(t *testing.T, state string, by string) map[string]ledgerRow {
	t.Helper()
	cmd := exec.Command(toolshelf, "usage", "--json", "--by", by)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "TOOLSHELF_STORE=")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("toolshelf usage: %v\n%s", err, out)
	}
	var rows []ledgerRow
	if err := json.Unmarshal(out, &rows); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	m := map[string]ledgerRow{}
	for _, r := range rows {
		m[r.Key] = r
	}
	return m
}

// clientSteps are ledger-client.mjs's lines.
type clientStep struct {
	Step    string
	OK      bool
	Status  int
	Message string
}

func runLedgerClient(t *testing.T, url, token, steps string, model ...string) []clientStep {
	t.Helper()
	out, err := node(t, "node", append([]string{"ledger-client.mjs", url, token, steps}, model...)...)
	if err != nil {
		t.Fatalf("ledger-client: %v\n%s", err, out)
	}
	var got []clientStep
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		var s clientStep
		if json.Unmarshal([]byte(line), &s) == nil && s.Step != "" {
			got = append(got, s)
		}
	}
	return got
}

// TestOneLedgerForModelsAndTools: two people of the team's identity
// provider (a real oidc-provider) call a model through 'toolshelf proxy'
// with the official Anthropic and OpenAI SDKs for Node, whole and
// streamed, their access tokens as API keys; one of them also calls tools
// through 'toolshelf serve'. One ledger counts it all: the usage rows
// equal what the fake API reported (a round without usage at its most),
// the tool calls are in the same person's row, the upstream got only the
// proxy's own key, the budgeted person is refused with 429 at the exact
// request and the SDK surfaces why, and a tool-call budget refuses the
// call.
func TestOneLedgerForModelsAndTools(t *testing.T) {
	t.Parallel()
	requireClients(t)
	idp := testenv.StartIDP(t, nil)
	api := &usageAPI{}
	upstream := httptest.NewServer(api)
	defer upstream.Close()
	state := t.TempDir()
	memory, _ := filepath.Abs("../testdata/servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	profile := func(group string) map[string]any {
		return map[string]any{"servers": []string{"memory"}, "claims": map[string]any{"groups": []string{group}}}
	}
	cfg := map[string]any{
		"mcpServers": map[string]any{"memory": map[string]any{
			"command": "node", "args": []string{memory},
			"env":     map[string]string{"MEMORY_FILE_PATH": filepath.Join(testenv.WritableDir(t), "memory.jsonl")},
			"timeout": testenv.Timeout(30 * time.Second).String(),
		}},
		"identity": map[string]any{"issuer": idp.Issuer, "audience": "toolshelf", "scopes": []string{"mcp"}},
		"profiles": map[string]any{"ops": profile("sre"), "dev": profile("dev")},
		"budgets": []any{
			map[string]any{"for": "person:bob@example.com", "requests": 3, "per": "day"},
			map[string]any{"for": "group:sre", "toolCalls": 2, "per": "day"},
		},
	}
	b, _ := json.Marshal(cfg)
	cfgPath := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfgPath, b, 0o644)

	cmd := exec.Command(toolshelf, "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream.URL, "--config", cfgPath)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "XDG_CACHE_HOME="+filepath.Join(t.TempDir(), "cache"), "TOOLSHELF_UPSTREAM_API_KEY=sk-proxy-own", "TOOLSHELF_STORE=")
	proxy := testenv.Listening(t, cmd, "the proxy", proxyURL)
	alice, bob := idp.Token(t, "alice"), idp.Token(t, "bob")

	for _, s := range runLedgerClient(t, proxy, alice, "anthropic,anthropic-stream,openai,openai-stream") {
		if !s.OK {
			t.Errorf("alice's %s: %+v", s.Step, s)
		}
	}
	if s := runLedgerClient(t, proxy, alice, "anthropic", noUsageModel); len(s) != 1 || !s[0].OK {
		t.Errorf("alice's request of an answer without usage: %+v", s)
	}
	steps := runLedgerClient(t, proxy, bob, "anthropic,openai-stream,anthropic-stream,anthropic,openai")
	for i, s := range steps {
		refused := s.Status == 429 && strings.Contains(s.Message, "person:bob@example.com/day") && strings.Contains(s.Message, "3 requests")
		if (i < 3 && !s.OK) || (i >= 3 && !refused) {
			t.Errorf("bob's request %d (%s): %+v; want the first 3 through and the rest refused by his budget", i+1, s.Step, s)
		}
	}
	if s := runLedgerClient(t, proxy, "not-a-token", "anthropic"); len(s) != 1 || s[0].Status != 401 {
		t.Errorf("a token of no one: %+v", s)
	}
	// carol is a person of the provider, in no profile's group: refused.
	if s := runLedgerClient(t, proxy, idp.Token(t, "carol"), "openai"); len(s) != 1 || s[0].Status != 403 || !strings.Contains(s[0].Message, "claims of no profile") {
		t.Errorf("a person of no profile: %+v", s)
	}

	// alice's tool calls, through the gateway, into the same ledger.
	script := testenv.ServeScript(t, toolshelf, map[string]string{"XDG_STATE_HOME": state, "TOOLSHELF_STORE": ""}, cfgPath, "--http", "127.0.0.1:0")
	gateway := testenv.RunHTTPScript(t, script) + "/ops"
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "ledger-test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: gateway, HTTPClient: &http.Client{Transport: bearer{alice}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for i := range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__memory__read_graph", "arguments": map[string]any{}}})
		if err != nil {
			t.Fatal(err)
		}
		text := ""
		for _, c := range res.Content {
			if tc, ok := c.(*mcp.TextContent); ok {
				text += tc.Text
			}
		}
		if refused := res.IsError && strings.Contains(text, "group:sre/day"); refused != (i == 2) {
			t.Errorf("alice's call %d: %s", i+1, text)
		}
	}

	rows := usageRows(t, state, "person")
	a, bo := rows["alice@example.com"], rows["bob@example.com"]
	// Reported: Messages 120 in, 15 out, 30 cache read, 10 written;
	// Chat Completions 200 prompt (50 cached), 20 out. The round
	// without usage: max_tokens (256) out, its body's bytes in.
	if a.Requests != 5 || a.ToolCalls != 2 || a.CacheRead != 2*30+2*50 || a.CacheWrite != 2*10 || a.Output != 2*15+2*20+256 || a.Input <= 2*120+2*150 || a.Held != 0 || a.USD <= 0 {
		t.Errorf("alice's row %+v", a)
	}
	if bo.Requests != 3 || bo.Input != 2*120+150 || bo.Output != 2*15+20 || bo.ToolCalls != 0 {
		t.Errorf("bob's row %+v", bo)
	}
	if p := usageRows(t, state, "profile"); p["ops"].Requests != 5 || p["dev"].Requests != 3 {
		t.Errorf("by profile: %+v", p)
	}
	// What each person sees of it with their own token: the gateway's
	// /usage shows alice her model requests and tool calls, the
	// proxy's shows bob his and his spent budget.
	own := func(url, token string) (rep struct {
		Rows    []ledgerRow
		Budgets []struct {
			Name  string
			Share float64
		}
	}) {
		req, _ := http.NewRequest("GET", url+"/usage?by=person", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		json.NewDecoder(resp.Body).Decode(&rep)
		return rep
	}
	if rep := own(strings.TrimSuffix(gateway, "/mcp/ops"), alice); len(rep.Rows) != 1 || rep.Rows[0].Requests != 5 || rep.Rows[0].ToolCalls != 2 || len(rep.Budgets) != 1 || rep.Budgets[0].Share != 1 {
		t.Errorf("alice's /usage on the gateway: %+v", rep)
	}
	if rep := own(proxy, bob); len(rep.Rows) != 1 || rep.Rows[0].Key != "bob@example.com" || rep.Rows[0].Requests != 3 || len(rep.Budgets) != 1 || rep.Budgets[0].Name != "person:bob@example.com/day" {
		t.Errorf("bob's /usage on the proxy: %+v", rep)
	}
	api.mu.Lock()
	defer api.mu.Unlock()
	if len(api.keys) != 8 {
		t.Errorf("the upstream got %d requests, want 8 (5 of alice's, 3 of bob's)", len(api.keys))
	}
	for _, k := range api.keys {
		if k != "sk-proxy-own" && k != "Bearer sk-proxy-own" {
			t.Errorf("the upstream got the key %q, not the proxy's own", k)
		}
	}
}

// TestClaudeCodeWithAPersonsToken: Claude Code through 'toolshelf proxy'
// with a person's access token as its API key. Its requests (the search
// round the proxy made by itself among them) are counted under the
// person, and the upstream gets the proxy's own key.
func TestClaudeCodeWithAPersonsToken(t *testing.T) {
	t.Parallel()
	requireClients(t)
	idp := testenv.StartIDP(t, nil)
	api := &claudeAPI{}
	var mu sync.Mutex
	var keys []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		keys = append(keys, r.Header.Get("X-Api-Key")+r.Header.Get("Authorization"))
		mu.Unlock()
		api.ServeHTTP(w, r)
	}))
	defer srv.Close()
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers": {}, "identity": {"issuer": %q, "audience": "toolshelf", "scopes": ["mcp"], "claims": {"groups": ["sre"]}}}`, idp.Issuer)), 0o644)
	state := t.TempDir()
	cmd := exec.Command(toolshelf, "proxy", "--listen", "127.0.0.1:0", "--upstream", srv.URL, "--mode", "search", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+state, "XDG_CACHE_HOME="+filepath.Join(t.TempDir(), "cache"), "TOOLSHELF_UPSTREAM_API_KEY=sk-proxy-own", "TOOLSHELF_STORE=")
	url := testenv.Listening(t, cmd, "the proxy", proxyURL)

	out, err := claude(t, url, filepath.Join(t.TempDir(), "memory.jsonl"), "ENABLE_TOOL_SEARCH=false", "ANTHROPIC_API_KEY="+idp.Token(t, "alice"))
	if err != nil || !strings.Contains(out, "Created the entity.") {
		t.Fatalf("Claude Code: %v\n%s", err, out)
	}
	rows := usageRows(t, state, "person")
	a := rows["alice@example.com"]
	if a.Requests < 2 || a.OwnRounds < 1 || a.Input == 0 || len(rows) != 1 {
		t.Errorf("rows %+v: want alice's requests, the proxy's own search round among them", rows)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, k := range keys {
		if k != "sk-proxy-own" {
			t.Errorf("the upstream got the key %q", k)
		}
	}
}

// TestBudgetAcrossReplicas: proxies on one PostgreSQL store hold a
// budget of N requests exactly, 16 clients sending through two of them at
// once; a replica killed in the middle of a stream loses no record of it
// and counts it once, at its most.
func TestBudgetAcrossReplicas(t *testing.T) {
	t.Parallel()
	store := testenv.Postgres(t)
	started, release := make(chan struct{}), make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	answered := 0
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var req struct {
			Model  string `json:"model"`
			Stream bool   `json:"stream"`
		}
		json.NewDecoder(r.Body).Decode(&req)
		if req.Stream {
			// The stream a replica is killed in the middle of.
			w.Header().Set("Content-Type", "text/event-stream")
			fmt.Fprintf(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"type\":\"message\",\"role\":\"assistant\",\"model\":%q,\"content\":[],\"usage\":{\"input_tokens\":70,\"output_tokens\":1}}}\n\n", req.Model)
			w.(http.Flusher).Flush()
			once.Do(func() { close(started) })
			select {
			case <-release:
			case <-r.Context().Done():
			}
			return
		}
		mu.Lock()
		answered++
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"m","type":"message","role":"assistant","model":%q,"content":[{"type":"text","text":"hi"}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":50,"output_tokens":5}}`, req.Model)
	}))
	defer upstream.Close()
	defer close(release)
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, []byte(fmt.Sprintf(`{"mcpServers": {}, "store": %q, "budgets": [{"for": "everyone", "requests": 20, "per": "hour"}]}`, store)), 0o600)
	replica := func() (*exec.Cmd, string) {
		cmd := exec.Command(toolshelf, "proxy", "--listen", "127.0.0.1:0", "--upstream", upstream.URL, "--config", cfg)
		cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir(), "XDG_CACHE_HOME="+t.TempDir(), "TOOLSHELF_STORE=")
		return cmd, testenv.Listening(t, cmd, "a proxy replica", proxyURL)
	}
	send := func(url, body string) (int, error) {
		req, _ := http.NewRequest("POST", url+"/v1/messages", strings.NewReader(body))
		req.Header.Set("X-Api-Key", "sk-client")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, err
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	}

	doomed, doomedURL := replica()
	go send(doomedURL, `{"model":"claude-sonnet-4-5","max_tokens":4000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	select {
	case <-started:
	case <-time.After(testenv.Timeout(30 * time.Second)):
		t.Fatal("the stream did not start")
	}
	doomed.Process.Kill()
	doomed.Wait()

	_, a := replica()
	_, b := replica()
	var wg sync.WaitGroup
	var codes sync.Map
	for i := range 16 {
		wg.Go(func() {
			url := a
			if i%2 == 1 {
				url = b
			}
			for range 3 {
				status, err := send(url, `{"model":"claude-sonnet-4-5","max_tokens":100,"messages":[{"role":"user","content":"hi"}]}`)
				if err != nil {
					t.Error(err)
					return
				}
				n, _ := codes.LoadOrStore(status, new(int64))
				mu.Lock()
				*n.(*int64)++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	count := func(status int) int64 {
		if n, ok := codes.Load(status); ok {
			return *n.(*int64)
		}
		return 0
	}
	// 20 in the budget: the killed stream's request holds one.
	mu.Lock()
	up := answered
	mu.Unlock()
	if count(200) != 19 || count(429) != 29 || up != 19 {
		t.Errorf("%d answered and %d refused (the upstream answered %d); want exactly 19 and 29", count(200), count(429), up)
	}
	cmd := exec.Command(toolshelf, "usage", "--json", "--by", "model", "--store", store)
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+t.TempDir())
	out, err := cmd.Output()
	var rows []ledgerRow
	if err != nil || json.Unmarshal(out, &rows) != nil || len(rows) != 1 {
		t.Fatalf("usage: %v\n%s", err, out)
	}
	// The killed stream: held, at its most (4,000 out); the rest as
	// reported (50 in, 5 out).
	if r := rows[0]; r.Requests != 20 || r.Held != 1 || r.Output != 19*5+4000 || r.Input < 19*50 {
		t.Errorf("the ledger's row %+v", r)
	}
}
