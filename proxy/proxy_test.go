package proxy

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/messages"
	"github.com/toolshelf/toolshelf/policy"
)

// fakeAPI is a scripted Messages API on loopback: each POST /v1/messages
// gets the next scripted answer, and every request is kept.
type fakeAPI struct {
	t      *testing.T
	srv    *httptest.Server
	mu     sync.Mutex
	script []func(req messages.Request) (int, string)
	bodies [][]byte
	reqs   []messages.Request
	keys   []string
	betas  []string
	counts [][]byte
	// traceparents are the traceparent headers of the requests.
	traceparents []string
	// holdStop, when set, holds a streamed answer's message_stop back
	// until the next request arrives or that long has passed: a stream's
	// last event arriving on its own, after the proxy read the rest.
	holdStop time.Duration
	arrived  chan struct{} // a request arrived (seq counts them)
	seq      atomic.Int64
}

func newFakeAPI(t *testing.T, script ...func(req messages.Request) (int, string)) *fakeAPI {
	f := &fakeAPI{t: t, script: script, arrived: make(chan struct{}, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seq := f.seq.Add(1)
		select {
		case f.arrived <- struct{}{}:
		default:
		}
		body, _ := io.ReadAll(r.Body)
		f.mu.Lock()
		defer f.mu.Unlock()
		f.keys = append(f.keys, r.Header.Get("X-Api-Key")+"|"+r.Header.Get(TokenHeader))
		f.betas = append(f.betas, r.Header.Get("Anthropic-Beta"))
		f.traceparents = append(f.traceparents, r.Header.Get("Traceparent"))
		if r.URL.Path == "/v1/messages/count_tokens" {
			f.counts = append(f.counts, body)
			fmt.Fprint(w, `{"input_tokens": 1234}`)
			return
		}
		if r.URL.Path != "/v1/messages" {
			http.Error(w, "not found", 404)
			return
		}
		var req messages.Request
		if err := json.Unmarshal(body, &req); err != nil {
			t.Errorf("the proxy sent a body that is not a request: %v", err)
		}
		f.bodies = append(f.bodies, body)
		f.reqs = append(f.reqs, req)
		n := len(f.reqs) - 1
		if n >= len(f.script) {
			t.Errorf("request %d is past the script", n+1)
			http.Error(w, "past the script", 500)
			return
		}
		status, answer := f.script[n](req)
		w.Header().Set("Request-Id", fmt.Sprintf("req_%d", n))
		var stream bool
		json.Unmarshal(req.Extra["stream"], &stream)
		if answer == "CUT" {
			// A stream that breaks off after its first event.
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"m\",\"usage\":{\"input_tokens\":1}}}\n\nevent: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
			w.(http.Flusher).Flush()
			conn, _, _ := w.(http.Hijacker).Hijack()
			conn.Close()
			return
		}
		if stream && status == 200 {
			var hold func()
			if f.holdStop > 0 {
				hold = func() {
					bound := time.After(f.holdStop)
					for f.seq.Load() == seq {
						select {
						case <-f.arrived:
						case <-bound:
							return
						}
					}
				}
			}
			writeStream(w, []byte(answer), hold)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		io.WriteString(w, answer)
	}))
	t.Cleanup(f.srv.Close)
	return f
}

// reply is a scripted assistant message.
func reply(stop string, in, out int, blocks ...string) string {
	return fmt.Sprintf(`{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4-5","content":[%s],"stop_reason":%q,"stop_sequence":null,"usage":{"input_tokens":%d,"output_tokens":%d}}`,
		strings.Join(blocks, ","), stop, in, out)
}

func toolUse(id, name, input string) string {
	return fmt.Sprintf(`{"type":"tool_use","id":%q,"name":%q,"input":%s}`, id, name, input)
}

func text(s string) string {
	b, _ := json.Marshal(s)
	return `{"type":"text","text":` + string(b) + `}`
}

// builtinTools are the built-in catalog's 519 MCP tools, as Claude Code
// sends MCP tools, with two tools of its own.
func builtinTools() []messages.Tool {
	tools := []messages.Tool{
		{Name: "Bash", Description: "Run a shell command.", InputSchema: json.RawMessage(`{"type":"object","properties":{"command":{"type":"string"}}}`)},
		{Name: "Read", Description: "Read a file.", InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string"}}}`)},
	}
	for e := range builtin.Catalog().All() {
		schema, _ := catalog.NormalizeSchema(e.InputSchema)
		tools = append(tools, messages.Tool{Name: e.Name, Description: e.Description, InputSchema: schema})
	}
	return tools
}

func request(t *testing.T, tools []messages.Tool, history string, extra string) []byte {
	t.Helper()
	tb, _ := json.Marshal(tools)
	return []byte(fmt.Sprintf(`{"model":"claude-sonnet-4-5","max_tokens":1024,"system":"You are helpful.","tools":%s,"messages":%s%s}`, tb, history, extra))
}

func startProxy(t *testing.T, api *fakeAPI, opts *Options) string {
	t.Helper()
	o := Options{Upstream: api.srv.URL}
	if opts != nil {
		o = *opts
		o.Upstream = api.srv.URL
	}
	p, err := New(&o)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	return srv.URL
}

func post(t *testing.T, url string, body []byte, hdr map[string]string) (int, http.Header, []byte) {
	t.Helper()
	req, _ := http.NewRequest("POST", url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "sk-client-key")
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, b
}

func names(tools []messages.Tool) map[string]bool {
	out := map[string]bool{}
	for _, t := range tools {
		out[t.Name] = true
	}
	return out
}

const createIssue = "mcp__github__create_issue"

// The model searches, the proxy answers and asks again with the tool it
// found, the model calls it: the client gets one message, calling its
// tool, with the usage of both rounds.
func TestHiddenSearchRound(t *testing.T) {
	api := newFakeAPI(t,
		func(req messages.Request) (int, string) {
			sent := names(req.Tools)
			if !sent[messages.DefaultSearchTool] || sent[createIssue] || !sent["Bash"] || len(req.Tools) != 3 {
				t.Errorf("round 1 sent %d tools (search tool %v, create_issue %v)", len(req.Tools), sent[messages.DefaultSearchTool], sent[createIssue])
			}
			if sys := string(req.Extra["system"]); !strings.Contains(sys, "You are helpful.") || !strings.Contains(sys, createIssue) || !strings.Contains(sys, "github (26 tools)") {
				t.Errorf("the system prompt does not announce the deferred tools: %.300s", sys)
			}
			return 200, reply("tool_use", 1000, 20, text("Let me find the tool."), toolUse("s1", messages.DefaultSearchTool, `{"query":"create a github issue"}`))
		},
		func(req messages.Request) (int, string) {
			if !names(req.Tools)[createIssue] {
				t.Errorf("round 2 lacks the tool found")
			}
			last := req.Messages[len(req.Messages)-1]
			if last.Role != "user" || last.Content[0].Type != "tool_result" || !strings.Contains(string(last.Content[0].Raw("content")), createIssue) {
				t.Errorf("round 2 does not answer the search: %+v", last)
			}
			return 200, reply("tool_use", 1500, 30, toolUse("c1", createIssue, `{"owner":"o","repo":"r","title":"crash"}`))
		},
	)
	url := startProxy(t, api, nil)
	status, hdr, body := post(t, url+"/v1/messages", request(t, builtinTools(), `[{"role":"user","content":"Open an issue about the crash."}]`, ""), nil)
	if status != 200 {
		t.Fatalf("%d %s", status, body)
	}
	var msg struct {
		Content    []messages.Block
		StopReason string `json:"stop_reason"`
		Usage      map[string]int
	}
	if err := json.Unmarshal(body, &msg); err != nil {
		t.Fatal(err)
	}
	if len(msg.Content) != 1 || msg.Content[0].String("name") != createIssue || msg.StopReason != "tool_use" {
		t.Errorf("the client's answer: %s", body)
	}
	if msg.Usage["input_tokens"] != 2500 || msg.Usage["output_tokens"] != 50 {
		t.Errorf("usage %v, want the two rounds added up", msg.Usage)
	}
	if hdr.Get("Request-Id") != "req_1" {
		t.Errorf("headers of the last round: %v", hdr)
	}
	for _, k := range api.keys {
		if k != "sk-client-key|" {
			t.Errorf("upstream saw key|token %q", k)
		}
	}

	// The next turn: the tool the model called stays loaded; the search
	// tool is still there for the others.
	api.script = append(api.script, func(req messages.Request) (int, string) {
		sent := names(req.Tools)
		if !sent[createIssue] || !sent[messages.DefaultSearchTool] || sent["mcp__github__list_issues"] {
			t.Errorf("turn 2 tools: create_issue %v, search %v", sent[createIssue], sent[messages.DefaultSearchTool])
		}
		return 200, reply("end_turn", 100, 5, text("Done."))
	})
	history := `[{"role":"user","content":"Open an issue about the crash."},
		{"role":"assistant","content":[` + toolUse("c1", createIssue, `{"title":"crash"}`) + `]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"created #7"}]}]`
	if status, _, body := post(t, url+"/v1/messages", request(t, builtinTools(), history, ""), nil); status != 200 || !strings.Contains(string(body), "Done.") {
		t.Errorf("turn 2: %d %s", status, body)
	}
}

// A request below the threshold, and one whose client defers tools
// itself, reach the upstream byte for byte.
func TestPassesUntouched(t *testing.T) {
	few := builtinTools()[:6]
	clientSearch := append(builtinTools(), messages.Tool{Name: "ToolSearch", Description: "Claude Code's own.", InputSchema: searchInput})
	for name, body := range map[string][]byte{
		"few tools":            request(t, few, `[{"role":"user","content":"hi"}]`, ""),
		"client's tool search": request(t, clientSearch, `[{"role":"user","content":"hi"}]`, ""),
	} {
		api := newFakeAPI(t, func(messages.Request) (int, string) { return 200, reply("end_turn", 1, 1, text("ok")) })
		url := startProxy(t, api, nil)
		if status, _, got := post(t, url+"/v1/messages", body, nil); status != 200 || !strings.Contains(string(got), `"ok"`) {
			t.Errorf("%s: %d %s", name, status, got)
		}
		if !bytes.Equal(api.bodies[0], body) {
			t.Errorf("%s: the body was changed", name)
		}
	}
}

// With stream: true the client gets the final round as server-sent
// events its SDK parses, with the rounds' usage.
func TestStream(t *testing.T) {
	api := newFakeAPI(t,
		func(req messages.Request) (int, string) {
			return 200, reply("tool_use", 1000, 20, text("Let me look for the tool."), toolUse("s1", messages.DefaultSearchTool, `{"query":"create a github issue"}`))
		},
		func(req messages.Request) (int, string) {
			return 200, reply("tool_use", 1500, 30, text("Opening it."), toolUse("c1", createIssue, `{"title":"crash"}`))
		},
	)
	url := startProxy(t, api, nil)
	status, hdr, body := post(t, url+"/v1/messages", request(t, builtinTools(), `[{"role":"user","content":"Open an issue."}]`, `,"stream":true`), nil)
	if status != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("%d %v", status, hdr)
	}
	var events []string
	var textOut, input string
	var outTokens, inTokens int
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if ev, ok := strings.CutPrefix(line, "event: "); ok {
			events = append(events, ev)
		}
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			var d struct {
				Usage struct {
					InputTokens  int `json:"input_tokens"`
					OutputTokens int `json:"output_tokens"`
				}
			}
			var raw map[string]json.RawMessage
			json.Unmarshal([]byte(data), &raw)
			json.Unmarshal([]byte(data), &d)
			var delta map[string]string
			json.Unmarshal(raw["delta"], &delta)
			textOut += delta["text"]
			input += delta["partial_json"]
			if d.Usage.OutputTokens > 0 {
				outTokens, inTokens = d.Usage.OutputTokens, d.Usage.InputTokens
			}
		}
	}
	want := "message_start content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_stop message_delta message_stop"
	if got := strings.Join(events, " "); got != want {
		t.Errorf("events:\n%s\nwant\n%s", got, want)
	}
	if textOut != "Opening it." || input != `{"title":"crash"}` || outTokens != 50 || inTokens != 2500 {
		t.Errorf("text %q, input %q, tokens in %d out %d", textOut, input, inTokens, outTokens)
	}
}

// Bad input and a broken upstream get the error shape of the Messages API.
func TestErrors(t *testing.T) {
	overloaded := `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	api := newFakeAPI(t, func(messages.Request) (int, string) { return 529, overloaded })
	url := startProxy(t, api, &Options{MaxRequestBytes: 1 << 20})

	status, _, body := post(t, url+"/v1/messages", request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, ""), nil)
	if status != 529 || string(body) != overloaded {
		t.Errorf("an overloaded upstream: %d %s", status, body)
	}
	status, _, body = post(t, url+"/v1/messages", []byte(`{"model":`), nil)
	var e errorBody
	if json.Unmarshal(body, &e); status != 400 || e.Type != "error" || e.Error.Type != "invalid_request_error" {
		t.Errorf("malformed JSON: %d %s", status, body)
	}
	status, _, body = post(t, url+"/v1/messages", bytes.Repeat([]byte(" "), 2<<20), nil)
	if json.Unmarshal(body, &e); status != 413 || e.Error.Type != "request_too_large" {
		t.Errorf("an oversized request: %d %s", status, body)
	}

	// An upstream that drops the connection halfway through its answer.
	cut := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "1000")
		w.WriteHeader(200)
		io.WriteString(w, `{"id":"msg_1","type":"mess`)
		w.(http.Flusher).Flush()
		conn, _, _ := w.(http.Hijacker).Hijack()
		conn.Close()
	}))
	defer cut.Close()
	pc, _ := New(&Options{Upstream: cut.URL})
	csrv := httptest.NewServer(pc)
	defer csrv.Close()
	status, _, body = post(t, csrv.URL+"/v1/messages", request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, ""), nil)
	if json.Unmarshal(body, &e); status != 502 || e.Error.Type != "api_error" {
		t.Errorf("an upstream that drops its answer: %d %s", status, body)
	}

	// An upstream that is gone.
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	p, _ := New(&Options{Upstream: gone.URL})
	srv := httptest.NewServer(p)
	defer srv.Close()
	status, _, body = post(t, srv.URL+"/v1/messages", request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, ""), nil)
	if json.Unmarshal(body, &e); status != 502 || e.Error.Type != "api_error" {
		t.Errorf("an upstream that is gone: %d %s", status, body)
	}
}

// A model that searches without end gets MaxRounds searches, then the
// client gets its last answer with a note.
func TestSearchLoopIsBounded(t *testing.T) {
	search := func(messages.Request) (int, string) {
		return 200, reply("tool_use", 10, 1, toolUse("s", messages.DefaultSearchTool, `{"query":"something that is not there"}`))
	}
	api := newFakeAPI(t, search, search, search)
	url := startProxy(t, api, &Options{MaxRounds: 2})
	status, _, body := post(t, url+"/v1/messages", request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, ""), nil)
	if status != 200 || !strings.Contains(string(body), "still searching for tools after 2 searches") || !strings.Contains(string(body), `"stop_reason":"end_turn"`) ||
		strings.Contains(string(body), messages.DefaultSearchTool) {
		t.Errorf("%d %s", status, body)
	}
	if len(api.reqs) != 3 {
		t.Errorf("%d rounds, want 3", len(api.reqs))
	}
}

// count_tokens counts the request as the proxy would send it; the
// proxy's own token is checked and not sent on.
func TestCountTokensAndToken(t *testing.T) {
	api := newFakeAPI(t)
	url := startProxy(t, api, &Options{Token: "proxy-token-0123456789"})
	body := request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, "")
	if status, _, _ := post(t, url+"/v1/messages/count_tokens", body, nil); status != 401 {
		t.Errorf("no proxy token: %d", status)
	}
	status, _, got := post(t, url+"/v1/messages/count_tokens", body, map[string]string{TokenHeader: "proxy-token-0123456789"})
	if status != 200 || !strings.Contains(string(got), "1234") {
		t.Fatalf("%d %s", status, got)
	}
	var req messages.Request
	json.Unmarshal(api.counts[0], &req)
	if len(req.Tools) != 3 || !names(req.Tools)[messages.DefaultSearchTool] {
		t.Errorf("count_tokens counted %d tools", len(req.Tools))
	}
	if api.keys[0] != "sk-client-key|" {
		t.Errorf("upstream saw key|token %q", api.keys[0])
	}
}

// What a turn sends upstream, with and without the proxy, for Claude
// Code's request shape carrying the built-in catalog: the numbers in
// docs/benchmarks.md (go test -run TestTokensPerTurn -v ./proxy).
func TestTokensPerTurn(t *testing.T) {
	api := newFakeAPI(t, func(messages.Request) (int, string) { return 200, reply("end_turn", 1, 1, text("ok")) })
	url := startProxy(t, api, nil)
	body := request(t, builtinTools(), `[{"role":"user","content":"Open an issue about the crash."}]`, "")
	if status, _, got := post(t, url+"/v1/messages", body, nil); status != 200 {
		t.Fatalf("%d %s", status, got)
	}
	count := func(b []byte) (chars, tokens int) {
		var req messages.Request
		json.Unmarshal(b, &req)
		tb, _ := json.Marshal(req.Tools)
		all := string(tb) + string(req.Extra["system"])
		n, err := policy.CL100K(all)
		if err != nil {
			t.Fatal(err)
		}
		return len(all), n
	}
	c0, t0 := count(body)
	c1, t1 := count(api.bodies[0])
	t.Logf("tools and system per turn: without the proxy %d chars, %d cl100k tokens; with it %d chars, %d tokens (%.1f%%)", c0, t0, c1, t1, 100*float64(t1)/float64(t0))
	testenv.DocSays(t, "docs/benchmarks.md",
		fmt.Sprintf("| without the proxy | %s | %s |", testenv.Thousands(c0), testenv.Thousands(t0)),
		fmt.Sprintf("| %s | %s (%.1f%%) |", testenv.Thousands(c1), testenv.Thousands(t1), 100*float64(t1)/float64(t0)))
	if t1*10 > t0 {
		t.Errorf("the proxy sent %d of %d tokens", t1, t0)
	}
}

// A stream that breaks off, an upstream that fails after the stream has
// started, and a model that searches without end, when the client
// streams: each ends the client's stream the way the API would.
func TestStreamFaults(t *testing.T) {
	search := func(messages.Request) (int, string) {
		return 200, reply("tool_use", 10, 1, toolUse("s", messages.DefaultSearchTool, `{"query":"create a github issue"}`))
	}
	streamed := func(t *testing.T, api *fakeAPI, opts *Options) string {
		url := startProxy(t, api, opts)
		status, _, body := post(t, url+"/v1/messages", request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, `,"stream":true`), nil)
		if status != 200 {
			t.Fatalf("%d %s", status, body)
		}
		return string(body)
	}
	cut := streamed(t, newFakeAPI(t, search, func(messages.Request) (int, string) { return 200, "CUT" }), nil)
	if !strings.Contains(cut, "event: error") || !strings.Contains(cut, "broke off") || strings.Contains(cut, "message_stop") {
		t.Errorf("a stream that broke off:\n%s", cut)
	}
	overloaded := streamed(t, newFakeAPI(t, search, func(messages.Request) (int, string) {
		return 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`
	}), nil)
	if !strings.Contains(overloaded, "event: error") || !strings.Contains(overloaded, "overloaded_error") {
		t.Errorf("an upstream overloaded in round 2:\n%s", overloaded)
	}
	endless := streamed(t, newFakeAPI(t, search, search, search), &Options{MaxRounds: 2})
	if !strings.Contains(endless, "still searching for tools after 2 searches") || !strings.Contains(endless, `"stop_reason":"end_turn"`) ||
		!strings.HasSuffix(strings.TrimSpace(endless), `data: {"type":"message_stop"}`) || strings.Contains(endless, messages.DefaultSearchTool) {
		t.Errorf("a search without end:\n%s", endless)
	}
}

// Where the API has its own tool search, the proxy uses it: the deferred
// tools go with defer_loading, the API's search tool is added with its
// beta, and the answer passes straight through.
func TestNativeToolSearch(t *testing.T) {
	answer := reply("end_turn", 5, 5, text("native"))
	api := newFakeAPI(t, func(req messages.Request) (int, string) {
		deferred, native := 0, false
		for _, tl := range req.Tools {
			if tl.DeferLoading {
				deferred++
			}
			native = native || tl.Type == "tool_search_tool_bm25_20251119"
		}
		if !native || deferred != len(req.Tools)-4 { // Bash, Read, the one called before, the search tool
			t.Errorf("%d tools, %d deferred, native search %v", len(req.Tools), deferred, native)
		}
		return 200, answer
	})
	url := startProxy(t, api, &Options{Native: NativeAlways})
	history := `[{"role":"user","content":"hi"},{"role":"assistant","content":[` + toolUse("c1", createIssue, `{}`) + `]},
		{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":"ok"}]}]`
	status, _, body := post(t, url+"/v1/messages", request(t, builtinTools(), history, ""), map[string]string{"Anthropic-Beta": "fine-grained-tool-streaming-2025-05-14"})
	if status != 200 || string(body) != answer {
		t.Errorf("%d %s", status, body)
	}
	if api.betas[0] != "fine-grained-tool-streaming-2025-05-14,"+messages.BetaToolSearch {
		t.Errorf("anthropic-beta %q", api.betas[0])
	}

	// auto: only in front of Anthropic's API, for models that take it.
	for _, tc := range []struct {
		upstream, model string
		want            bool
	}{
		{"https://api.anthropic.com", "claude-sonnet-4-5", true},
		{"https://api.anthropic.com", "claude-haiku-4-5", false},
		{"https://gateway.example.com", "claude-sonnet-4-5", false},
	} {
		p, err := New(&Options{Upstream: tc.upstream})
		if err != nil {
			t.Fatal(err)
		}
		if got := p.native(tc.model); got != tc.want {
			t.Errorf("native(%s, %s) = %v", tc.upstream, tc.model, got)
		}
	}
	if _, err := New(&Options{Upstream: "https://api.anthropic.com", Native: "sometimes"}); err == nil {
		t.Error("a bad Native setting was taken")
	}
}

// A setting of auto, always or never that is none of them is refused,
// naming the flag: the proxy does not guess.
func TestUnknownChoiceRefused(t *testing.T) {
	const api = "http://127.0.0.1:1"
	for _, o := range []Options{{Upstream: api, Native: "sometimes"}, {Upstream: api, ToolAdditions: "ALWAYS"}} {
		if _, err := New(&o); err == nil || !strings.Contains(err.Error(), "want auto, always or never") {
			t.Errorf("%+v: %v", o, err)
		}
	}
	s, err := New(&Options{Upstream: api})
	if err != nil {
		t.Fatal(err)
	}
	if s.opts.Native != NativeAuto || s.opts.ToolAdditions != ToolAdditionsAuto {
		t.Errorf("defaults: %q %q", s.opts.Native, s.opts.ToolAdditions)
	}
}
