package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

// startProxyCmd runs toolshelf proxy in front of upstream and returns its
// base URL.
func startProxyCmd(t *testing.T, upstream string, args ...string) string {
	t.Helper()
	stderr := &lockedWriter{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, append([]string{"proxy", "--listen", "127.0.0.1:0", "--upstream", upstream}, args...), strings.NewReader(""), io.Discard, stderr)
	}()
	t.Cleanup(func() { cancel(); <-done })
	var url string
	line := regexp.MustCompile(`url=(http://\S+)`)
	testenv.Eventually(t, 10*time.Second, "the proxy to listen", func() bool {
		if m := line.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	return url
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
	url := startProxyCmd(t, api.URL)

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
