package proxy

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/messages"
)

// manyTools is a tool set of n MCP tools of about size bytes each,
// distinct for each seed.
func manyTools(seed string, n, size int) []messages.Tool {
	desc := strings.Repeat("words that describe the tool ", size/29+1)[:size]
	out := make([]messages.Tool, n)
	for i := range out {
		out[i] = messages.Tool{Name: fmt.Sprintf("mcp__%s__tool_%d", seed, i), Description: desc,
			InputSchema: json.RawMessage(`{"type":"object","properties":{"text":{"type":"string"}}}`)}
	}
	return out
}

// A large tool set is planned outside the lock every request takes: while
// three large sets are being built (held mid-build here), a request with
// a small set is answered; requests for a set being built wait for that
// one build; and the cache keeps no more bytes than it may.
func TestPlansDoNotStallOthers(t *testing.T) {
	api := constantAPI(t, reply("end_turn", 1, 1, text("small")))
	p, err := New(&Options{Upstream: api, MaxPlanBytes: 24 << 20})
	if err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	var large, builds atomic.Int32
	started := make(chan struct{}, 16)
	p.plans.building = func(size int64) {
		builds.Add(1)
		if size >= largeToolBytes {
			large.Add(1)
			started <- struct{}{}
			<-release
		}
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)

	var wg sync.WaitGroup
	for i := range 3 {
		body := request(t, manyTools(fmt.Sprintf("big%d", i), 2000, 600), `[{"role":"user","content":"hi"}]`, "")
		for range 2 { // two clients with one tool set: one build
			wg.Go(func() {
				req, _ := http.NewRequest("POST", srv.URL+"/v1/messages", bytes.NewReader(body))
				resp, err := http.DefaultClient.Do(req)
				if err == nil {
					io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
			})
		}
	}
	<-started // a large build is under way, the others wait for a slot or for it
	status, _, out := post(t, srv.URL+"/v1/messages", request(t, builtinTools()[:40], `[{"role":"user","content":"hi"}]`, ""), nil)
	if status != 200 || !bytes.Contains(out, []byte("small")) {
		t.Fatalf("the small request while large ones are planned: %d %s", status, out)
	}
	close(release)
	wg.Wait()
	if n := large.Load(); n != 3 {
		t.Errorf("%d large builds for three tool sets asked for twice each", n)
	}
	if n, size := p.plans.held(); size > 24<<20 || n == 0 {
		t.Errorf("the cache holds %d sets of %d bytes; want at most %d bytes", n, size, 24<<20)
	}
}

// The cache key is unambiguous: moving bytes between a tool's fields,
// NUL bytes included, makes another key.
func TestToolsKeyIsUnambiguous(t *testing.T) {
	schema := json.RawMessage(`{"type":"object"}`)
	a, _ := toolsKey("s", false, []messages.Tool{{Name: "a", Description: "b\x00c", InputSchema: schema}})
	b, _ := toolsKey("s", false, []messages.Tool{{Name: "a\x00b", Description: "c", InputSchema: schema}})
	c, _ := toolsKey("s", false, []messages.Tool{{Name: "a", Description: "b"}, {Name: "c", InputSchema: schema}})
	if a == b || a == c || b == c {
		t.Error("two tool sets share a key")
	}
}

// An upstream that never ends its answer costs the proxy a bounded read
// (502 naming the bound), and a client that hangs up ends the upstream
// request.
func TestEndlessUpstream(t *testing.T) {
	ended, started := make(chan struct{}, 4), make(chan struct{}, 4)
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		started <- struct{}{}
		defer func() { ended <- struct{}{} }()
		w.Header().Set("Content-Type", "application/json")
		chunk := bytes.Repeat([]byte(" "), 64<<10)
		w.Write([]byte(`{"id":"msg_1","content":[`))
		for r.Context().Err() == nil {
			if _, err := w.Write(chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(upstream.Close)
	p, err := New(&Options{Upstream: upstream.URL, MaxResponseBytes: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	body := request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, "")

	status, _, out := post(t, srv.URL+"/v1/messages", body, nil)
	if status != http.StatusBadGateway || !bytes.Contains(out, []byte("over 1048576 bytes")) {
		t.Errorf("an endless answer: %d %.300s", status, out)
	}
	waitFor(t, started, "the upstream request")
	waitFor(t, ended, "the upstream request to end after the bounded read")

	// A client that hangs up mid-answer, on a proxy whose bound it would
	// take hours to reach.
	leave := leaving(t, upstream.URL, body, started)
	leave()
	waitFor(t, ended, "the upstream request to end after the client hung up")
}

// waitFor waits for ch, and fails the test with a timeout naming what it
// waited for.
func waitFor(t *testing.T, ch chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testenv.Timeout(20 * time.Second)):
		t.Fatalf("timed out waiting for %s", what)
	}
}

// leaving sends body, as a client that reads the first byte of the
// answer, to a proxy of upstream whose bound on an answer it would take
// hours to reach, and returns once upstream has the request (started).
// leave ends the client's request and waits for the client.
func leaving(t *testing.T, upstream string, body []byte, started chan struct{}) (leave func()) {
	t.Helper()
	p, err := New(&Options{Upstream: upstream, MaxResponseBytes: 1 << 50})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/v1/messages", bytes.NewReader(body))
	done := make(chan struct{})
	go func() {
		defer close(done)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.CopyN(io.Discard, resp.Body, 1)
			resp.Body.Close()
		}
	}()
	waitFor(t, started, "the upstream request")
	return func() { cancel(); <-done }
}

// Requests the proxy rewrites keep the upstream URL's query
// (?api-version=) as pass-through ones do, beside the client's.
func TestUpstreamQueryKept(t *testing.T) {
	api := newFakeAPI(t, func(messages.Request) (int, string) { return 200, reply("end_turn", 1, 1, text("ok")) })
	var mu sync.Mutex
	var queries []string
	proxied := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		queries = append(queries, r.URL.RawQuery)
		mu.Unlock()
		api.srv.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(proxied.Close)
	p, err := New(&Options{Upstream: proxied.URL + "?api-version=2025-01"})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	if status, _, out := post(t, srv.URL+"/v1/messages?beta=true", request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, ""), nil); status != 200 {
		t.Fatalf("%d %s", status, out)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(queries) == 0 || queries[0] != "api-version=2025-01&beta=true" {
		t.Errorf("the upstream saw queries %q", queries)
	}
}

// A client's 5 MB model name is logged cut.
func TestLongModelNameLoggedCut(t *testing.T) {
	api := newFakeAPI(t, func(messages.Request) (int, string) { return 200, reply("end_turn", 1, 1, text("ok")) })
	var logs bytes.Buffer
	var mu sync.Mutex
	p, err := New(&Options{Upstream: api.srv.URL, Logger: slog.New(slog.NewTextHandler(&lockedBuffer{b: &logs, mu: &mu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	body := request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, "")
	body = bytes.Replace(body, []byte(`"claude-sonnet-4-5"`), []byte(`"`+strings.Repeat("m", 5<<20)+`"`), 1)
	post(t, srv.URL+"/v1/messages", body, nil)
	mu.Lock()
	defer mu.Unlock()
	if logs.Len() == 0 || logs.Len() > 4096 {
		t.Errorf("the log is %d bytes", logs.Len())
	}
}

type lockedBuffer struct {
	b  *bytes.Buffer
	mu *sync.Mutex
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// constantAPI is a model API that answers every request with answer.
func constantAPI(t *testing.T, answer string) string {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, answer)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

var stallFigure = flag.Bool("stall", false, "measure a small request's time while three 20,000-tool requests are planned (docs/reliability.md)")

// The figure behind docs/reliability.md's row: go test ./proxy -run
// TestStallFigure -v -args -stall
func TestStallFigure(t *testing.T) {
	if !*stallFigure {
		t.Skip("a measurement; run with -args -stall")
	}
	p, err := New(&Options{Upstream: constantAPI(t, reply("end_turn", 1, 1, text("small")))})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 8)
	p.plans.building = func(size int64) {
		if size >= largeToolBytes {
			started <- struct{}{}
		}
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	var wg sync.WaitGroup
	begin := time.Now()
	for i := range 3 {
		body := request(t, manyTools(fmt.Sprintf("big%d", i), 20000, 1400), `[{"role":"user","content":"hi"}]`, "")
		if i == 0 {
			t.Logf("a large request is %.1f MiB", float64(len(body))/(1<<20))
		}
		wg.Go(func() {
			resp, err := http.Post(srv.URL+"/v1/messages", "application/json", bytes.NewReader(body))
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
			t.Logf("a large request answered after %v", time.Since(begin))
		})
	}
	<-started
	small := time.Now()
	status, _, _ := post(t, srv.URL+"/v1/messages", request(t, builtinTools()[:40], `[{"role":"user","content":"hi"}]`, ""), nil)
	t.Logf("the small request: %d in %v, while the large ones were planned", status, time.Since(small))
	wg.Wait()
	n, size := p.plans.held()
	t.Logf("the cache holds %d sets, about %d MiB", n, size>>20)
}

// The proxy answers /healthz itself, and a request it passes to an
// upstream that cannot be reached is logged as failed, with the error.
func TestHealthAndPassedFailures(t *testing.T) {
	var logs bytes.Buffer
	var mu sync.Mutex
	p, err := New(&Options{Upstream: "http://127.0.0.1:1", Logger: slog.New(slog.NewTextHandler(&lockedBuffer{b: &logs, mu: &mu}, nil))})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !bytes.Contains(b, []byte(`"status":"ok"`)) {
		t.Errorf("healthz: %d %s", resp.StatusCode, b)
	}
	// Two tools: under the threshold, so the request passes untouched.
	status, _, _ := post(t, srv.URL+"/v1/messages", request(t, builtinTools()[:2], `[{"role":"user","content":"hi"}]`, ""), nil)
	mu.Lock()
	defer mu.Unlock()
	if status != http.StatusBadGateway || !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "status=502") || !strings.Contains(logs.String(), "error=") {
		t.Errorf("a passed request whose upstream failed: %d, logged %s", status, logs.String())
	}
}

// endlessStream is a model API that streams without end, in one of three
// ways: one data: line that never ends, text deltas without a
// message_delta, or the search tool's partial_json without end. It
// counts the requests it started and ended.
func endlessStream(t *testing.T, kind string) (url string, started, ended chan struct{}) {
	started, ended = make(chan struct{}, 8), make(chan struct{}, 8)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		started <- struct{}{}
		defer func() { ended <- struct{}{} }()
		w.Header().Set("Content-Type", "text/event-stream")
		w.WriteHeader(http.StatusOK)
		io.WriteString(w, "event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[],\"usage\":{\"input_tokens\":1,\"output_tokens\":0}}}\n\n")
		var chunk string
		switch kind {
		case "line":
			io.WriteString(w, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"")
			chunk = strings.Repeat("a", 64<<10)
		case "text":
			io.WriteString(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"text\",\"text\":\"\"}}\n\n")
			chunk = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"" + strings.Repeat("b", 32<<10) + "\"}}\n\n"
		case "search":
			io.WriteString(w, "event: content_block_start\ndata: {\"type\":\"content_block_start\",\"index\":0,\"content_block\":{\"type\":\"tool_use\",\"id\":\"toolu_1\",\"name\":\""+messages.DefaultSearchTool+"\",\"input\":{}}}\n\n")
			chunk = "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"input_json_delta\",\"partial_json\":\"" + strings.Repeat("c", 32<<10) + "\"}}\n\n"
		}
		for r.Context().Err() == nil {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	t.Cleanup(srv.Close)
	return srv.URL, started, ended
}

// A model API that never ends its stream costs the streaming path a
// bounded read: one event at most maxEventBytes, one round at most
// MaxResponseBytes, each refused with an error event naming the bound;
// and a client that leaves ends the upstream request, however far the
// bound is.
func TestEndlessStream(t *testing.T) {
	body := request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, `,"stream":true`)
	for _, kind := range []string{"line", "text", "search"} {
		t.Run(kind, func(t *testing.T) {
			url, started, ended := endlessStream(t, kind)
			p, err := New(&Options{Upstream: url, MaxResponseBytes: 8 << 20})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			t.Cleanup(srv.Close)
			status, _, out := post(t, srv.URL+"/v1/messages", body, nil)
			want := map[string]string{
				"line":   fmt.Sprintf("over %d bytes", maxEventBytes),
				"text":   "over 8388608 bytes",
				"search": fmt.Sprintf("input is over %d bytes", maxSearchInput),
			}[kind]
			if status != http.StatusOK || !bytes.Contains(out, []byte("event: error")) || !bytes.Contains(out, []byte(want)) {
				t.Errorf("an endless stream: %d, %d bytes ending %q", status, len(out), out[max(0, len(out)-300):])
			}
			waitFor(t, started, "the upstream request")
			waitFor(t, ended, "the upstream request to end after the bounded read")

			// A client that leaves, on a proxy whose bound it would take
			// hours to reach.
			leave := leaving(t, url, body, started)
			if kind != "text" {
				// The bound of one event, or of the search's input, ends
				// it before the client can.
				waitFor(t, ended, "the upstream request to end at the bound of an event")
				leave()
				return
			}
			left := time.Now()
			leave()
			waitFor(t, ended, "the upstream request to end after the client left")
			t.Logf("the upstream request ended %v after the client left", time.Since(left).Round(time.Millisecond))
		})
	}
}

var streamFigure = flag.Bool("streamfigure", false, "measure the proxy's peak RSS under model APIs that never end their streams (docs/reliability.md)")

// The figure behind docs/reliability.md's row: go test ./proxy -run
// TestEndlessStreamFigure -v -args -streamfigure. With the default
// bounds, eight clients at once stream from each endless API in turn.
func TestEndlessStreamFigure(t *testing.T) {
	if !*streamFigure {
		t.Skip("a measurement; run with -args -streamfigure")
	}
	body := request(t, builtinTools(), `[{"role":"user","content":"hi"}]`, `,"stream":true`)
	for _, clients := range []int{1, 8} {
		for _, kind := range []string{"line", "text", "search"} {
			url, _, _ := endlessStream(t, kind)
			p, err := New(&Options{Upstream: url})
			if err != nil {
				t.Fatal(err)
			}
			srv := httptest.NewServer(p)
			var wg sync.WaitGroup
			begin := time.Now()
			for range clients {
				wg.Go(func() { post(t, srv.URL+"/v1/messages", body, nil) })
			}
			wg.Wait()
			srv.Close()
			t.Logf("%s: %d streams refused after %v; peak RSS so far %s", kind, clients, time.Since(begin).Round(time.Millisecond), testenv.PeakRSS())
		}
	}
}

// What the plan cache charges a set covers what the set keeps on the
// heap, for tools with no text beside a short name (the case that was
// charged 40 times low) and for tools with long descriptions; the
// charges are what the cache bounds.
func TestPlanSizeCoversTheHeap(t *testing.T) {
	const n = 20_000
	for _, kind := range []string{"minimal", "rich"} {
		tools := make([]messages.Tool, n)
		for i := range tools {
			if kind == "minimal" {
				tools[i] = messages.Tool{Name: fmt.Sprintf("mcp__s%d__t%d", i%7, i), InputSchema: json.RawMessage(`{}`)}
			} else {
				tools[i] = manyTools(fmt.Sprint(i), 1, 600)[0]
			}
		}
		s, err := New(&Options{Upstream: "http://127.0.0.1:1"})
		if err != nil {
			t.Fatal(err)
		}
		in := planInput{model: "claude-sonnet-4-5", tools: tools}
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		p := s.planFor(context.Background(), in)
		in.tools, tools = nil, nil
		runtime.GC()
		runtime.ReadMemStats(&after)
		if p == nil {
			t.Fatalf("%s: no plan", kind)
		}
		kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
		_, charged := s.plans.held()
		t.Logf("%s: %d tools keep %d bytes (%d a tool), charged %d (%d a tool)", kind, n, kept, kept/n, charged, charged/n)
		if charged < kept {
			t.Errorf("%s: a set keeping %d bytes is charged %d", kind, kept, charged)
		}
		runtime.KeepAlive(p)
	}
}

// A request with more tools than MaxTools is refused with 413 naming the
// flag, on both APIs, before anything is indexed.
func TestTooManyTools(t *testing.T) {
	p, err := New(&Options{Upstream: constantAPI(t, reply("end_turn", 1, 1, text("small"))), MaxTools: 1000})
	if err != nil {
		t.Fatal(err)
	}
	built := 0
	p.plans.building = func(int64) { built++ }
	srv := httptest.NewServer(p)
	t.Cleanup(srv.Close)
	tools := make([]messages.Tool, 1001)
	for i := range tools {
		tools[i] = messages.Tool{Name: fmt.Sprintf("mcp__sJ__t%d", i), InputSchema: json.RawMessage(`{}`)}
	}
	status, _, out := post(t, srv.URL+"/v1/messages", request(t, tools, `[{"role":"user","content":"hi"}]`, ""), nil)
	if status != http.StatusRequestEntityTooLarge || !bytes.Contains(out, []byte("1001 tools")) || !bytes.Contains(out, []byte("--max-tools")) {
		t.Errorf("messages: %d %s", status, out)
	}
	fns := make([]map[string]any, len(tools))
	for i, tl := range tools {
		fns[i] = map[string]any{"type": "function", "function": map[string]any{"name": tl.Name, "parameters": map[string]any{}}}
	}
	chat, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []any{map[string]any{"role": "user", "content": "hi"}}, "tools": fns})
	status, _, out = post(t, srv.URL+"/v1/chat/completions", chat, nil)
	if status != http.StatusRequestEntityTooLarge || !bytes.Contains(out, []byte("1001 tools")) {
		t.Errorf("chat completions: %d %s", status, out)
	}
	if built != 0 {
		t.Errorf("%d sets built for refused requests", built)
	}
}
