package upstream

import (
	"context"
	"encoding/json"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"strings"
	"testing"
	"time"
)

// realServers loads examples/servers.json, the pinned npm servers of
// testdata/servers. CI installs them (npm ci); elsewhere the test is
// skipped when they are missing.
func realServers(t *testing.T) []ServerConfig {
	t.Helper()
	testenv.RequireNPM(t, "testdata/servers")
	cfgs, err := LoadConfig("../examples/servers.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := range cfgs {
		cfgs[i].Timeout = testenv.Timeout(DefaultTimeout)
	}
	return cfgs
}

// Tool counts as measured with each pinned version (docs/design.md has the
// list); toolshelf advertises no roots, so server-everything lists 13.
var realToolCounts = map[string]int{
	"everything": 13, "memory": 9, "filesystem": 14, "sequential-thinking": 1, "github": 26,
	"slack": 8, "gitlab": 9, "postgres": 1, "google-maps": 7, "brave-search": 2, "puppeteer": 7,
	"notion": 24, "playwright": 25, "sentry": 22, "stripe": 22, "supabase": 31, "context7": 2,
	"azure": 235, "hubspot": 21, "heroku": 36,
}

func TestRealServers(t *testing.T) {
	cfgs := realServers(t)
	start := time.Now()
	p := startPool(t, cfgs, &Options{RestartDelay: time.Hour})
	took := time.Since(start)

	total := 0
	var slowest time.Duration
	for _, st := range p.Status() {
		if st.State != StateReady {
			t.Errorf("%s: %s: %s", st.Name, st.State, st.Error)
			continue
		}
		if want := realToolCounts[st.Name]; st.Tools != want {
			t.Errorf("%s: %d tools, want %d", st.Name, st.Tools, want)
		}
		total += st.Tools
		slowest = max(slowest, st.ConnectTime)
	}
	t.Logf("%d servers, %d tools in %v (slowest server %v)", len(cfgs), total, took, slowest)
	if total < 500 {
		t.Errorf("%d tools in all, want over 500", total)
	}

	c := p.Catalog()
	for _, name := range []string{
		"mcp__github__create_pull_request", "mcp__github__create_issue", "mcp__gitlab__create_issue",
		"mcp__slack__slack_post_message", "mcp__memory__create_entities", "mcp__filesystem__read_text_file",
		"mcp__notion__API-post-search", "mcp__playwright__browser_navigate", "mcp__stripe__create_customer",
	} {
		if _, ok := c.Lookup(name); !ok {
			t.Errorf("catalog lacks %s", name)
		}
	}
	// A real call: server-memory stores and reads back an entity.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	args := json.RawMessage(`{"entities":[{"name":"toolshelf","entityType":"project","observations":["defers tool definitions"]}]}`)
	if _, err := p.Call(ctx, "mcp__memory__create_entities", args); err != nil {
		t.Fatal(err)
	}
	res, err := p.Call(ctx, "mcp__memory__open_nodes", json.RawMessage(`{"names":["toolshelf"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); !strings.Contains(string(b), "defers tool definitions") {
		t.Errorf("open_nodes result: %s", b)
	}
}
