package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// liveGateway runs serve --mode all over the configuration file cfg
// (servers written by save, as an editor saves), and connects a client
// whose list_changed notifications come on changed.
type liveGateway struct {
	cfg     string
	url     string   // the gateway's /mcp
	env     []string // serve's environment (its state folder)
	stderr  *testenv.Buffer
	cs      *mcp.ClientSession
	changed chan struct{}
}

// fixtureServer is a fixture server with one tool, uncontained.
func fixtureServer(tool string) map[string]any {
	cmd, env := mcptest.Command("serve", []string{tool})
	return map[string]any{"command": cmd, "env": env, "contain": false, "timeout": testenv.Timeout(10 * time.Second).String()}
}

// save writes the servers as an editor does: a new file renamed over the
// old one.
func (g *liveGateway) save(t testing.TB, servers map[string]any) {
	t.Helper()
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	tmp := g.cfg + ".tmp"
	if err := os.WriteFile(tmp, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, g.cfg); err != nil {
		t.Fatal(err)
	}
}

// tools lists the client's tools.
func (g *liveGateway) tools(t testing.TB, ctx context.Context) []string {
	t.Helper()
	res, err := g.cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatalf("tools/list: %v", err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// liveToken opens the live gateway's /mcp and its /healthz details: its
// servers run uncontained, so /mcp on loopback needs a token.
const liveToken = "live-config-token-0123456789abcdef"

func startLiveGateway(t testing.TB, ctx context.Context, servers map[string]any) *liveGateway {
	dir := t.TempDir()
	g := &liveGateway{cfg: filepath.Join(dir, "servers.json")}
	g.save(t, servers)
	g.start(t)
	g.connect(t, ctx)
	return g
}

// startLiveGatewayFrom runs serve over a copy of the configuration file
// src, without a client of its own.
func startLiveGatewayFrom(t testing.TB, src string) *liveGateway {
	g := &liveGateway{cfg: filepath.Join(t.TempDir(), "servers.json")}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	os.WriteFile(g.cfg, b, 0o644)
	g.start(t)
	return g
}

// start runs serve over g.cfg and waits for its address.
func (g *liveGateway) start(t testing.TB) {
	dir := filepath.Dir(g.cfg)
	g.stderr, g.changed = &testenv.Buffer{}, make(chan struct{}, 1024)
	os.WriteFile(filepath.Join(dir, "token"), []byte(liveToken+"\n"), 0o600)
	cmd := exec.Command(toolshelf, "serve", "--config", g.cfg, "--http", "127.0.0.1:0", "--mode", "all", "--auth-token-file", filepath.Join(dir, "token"))
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	g.env = cmd.Env
	cmd.Stderr = g.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	var url string
	testenv.Eventually(t, time.Minute, "serve to listen", func() bool {
		if m := testenv.URLLine.FindStringSubmatch(g.stderr.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	g.url = url
}

// connect connects the gateway's go-sdk client, whose list_changed
// notifications come on g.changed.
func (g *liveGateway) connect(t testing.TB, ctx context.Context) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "live", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
			select {
			case g.changed <- struct{}{}:
			default:
			}
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: g.url, HTTPClient: &http.Client{Transport: bearer{liveToken}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	g.cs = cs
}

// serve follows its configuration file: a server added to it is started
// and its tools reach the client's list (with list_changed), one removed
// leaves it, a half-written save changes nothing and is said at WARN,
// and the client's session, and the other servers, serve on throughout.
func TestServeFollowsItsConfiguration(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(3*time.Minute))
	defer cancel()
	server := fixtureServer
	g := startLiveGateway(t, ctx, map[string]any{"a": server("alpha")})
	stderr, cfg, changed, cs := g.stderr, g.cfg, g.changed, g.cs
	save := func(servers map[string]any) { g.save(t, servers) }
	tools := func() []string { return g.tools(t, ctx) }
	has := func(name string) func() bool {
		return func() bool {
			return slices.ContainsFunc(tools(), func(n string) bool { return strings.HasSuffix(n, name) })
		}
	}
	callOK := func(tool string) {
		t.Helper()
		for _, n := range tools() {
			if strings.HasSuffix(n, tool) {
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: n, Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("calling %s: %v %+v", n, err, res)
				}
				return
			}
		}
		t.Fatalf("%s is not listed: %v", tool, tools())
	}
	testenv.Eventually(t, time.Minute, "a's tool to be listed", has("alpha"))

	save(map[string]any{"a": server("alpha"), "b": server("beta")})
	testenv.Eventually(t, time.Minute, "the added server's tool to be listed", has("beta"))
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("no list_changed for the added server")
	}
	callOK("alpha") // the same session, the other server untouched
	callOK("beta")

	// Half a file, as an editor that writes in place leaves it a moment:
	// nothing changes, and the log says where it is wrong.
	if err := os.WriteFile(cfg, []byte(`{"mcpServers": {"b": {"command": `), 0o644); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, time.Minute, "the broken change to be said", func() bool {
		return strings.Contains(stderr.String(), "does not load; serving it as it was")
	})
	if !has("alpha")() || !has("beta")() {
		t.Fatalf("a change that does not load changed the tools: %v", tools())
	}
	// /healthz says it, with the file and line, to the admin.
	req, _ := http.NewRequestWithContext(ctx, "GET", strings.TrimSuffix(g.url, "/mcp")+"/healthz", nil)
	resp, err := (&http.Client{Transport: bearer{liveToken}}).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var health struct {
		Status      string `json:"status"`
		ConfigError string `json:"configError"`
	}
	json.NewDecoder(resp.Body).Decode(&health)
	resp.Body.Close()
	if health.Status != "degraded" || !strings.Contains(health.ConfigError, "servers.json:1") {
		t.Errorf("/healthz while the file does not load: %+v", health)
	}

	// A server whose environment changed is started again with it.
	changedB := server("beta")
	changedB["env"].(map[string]string)["MODE_OF_B"] = "two"
	save(map[string]any{"a": server("alpha"), "b": changedB})
	testenv.Eventually(t, time.Minute, "the changed server to be restarted", func() bool {
		return strings.Contains(stderr.String(), "restarted=b")
	})
	testenv.Eventually(t, time.Minute, "the restarted server's tool to be listed", has("beta"))
	callOK("beta")
	callOK("alpha")

	// toolshelf remove, beside the running gateway, says it took it.
	rm := exec.CommandContext(ctx, toolshelf, "remove", "--config", cfg, "a")
	rm.Env = g.env
	out, err := rm.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "took the change") {
		t.Fatalf("toolshelf remove beside a running gateway: %v\n%s", err, out)
	}
	testenv.Eventually(t, time.Minute, "the removed server's tool to leave", func() bool { return !has("alpha")() })
	callOK("beta")
	if !strings.Contains(stderr.String(), "removed=a") {
		t.Errorf("the log does not say what changed:\n%s", stderr.String())
	}
}

// BenchmarkConfigEditToList measures, on a running gateway, the time from
// a saved edit that adds a server to its tool in a client's list (the
// client told by list_changed, then listing), while another client-side
// loop calls a server the edit leaves alone: its refused calls are
// counted (there must be none). Each iteration adds a server and the
// next removes it again. docs/benchmarks.md has the figures.
func BenchmarkConfigEditToList(b *testing.B) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	steady := map[string]any{"steady": fixtureServer("steady_tool")}
	g := startLiveGateway(b, ctx, steady)
	testenv.Eventually(b, time.Minute, "the steady server's tool", func() bool {
		return slices.ContainsFunc(g.tools(b, ctx), func(n string) bool { return strings.HasSuffix(n, "steady_tool") })
	})
	var refused, calls atomic.Int64
	callsDone := make(chan struct{})
	go func() {
		defer close(callsDone)
		for ctx.Err() == nil {
			res, err := g.cs.CallTool(ctx, &mcp.CallToolParams{Name: "mcp__steady__steady_tool", Arguments: map[string]any{}})
			if ctx.Err() != nil {
				return
			}
			calls.Add(1)
			if err != nil || res.IsError {
				refused.Add(1)
			}
		}
	}()
	var took []time.Duration
	for i := 0; i < b.N; i++ {
		name := fmt.Sprintf("added%d", i)
		servers := maps.Clone(steady)
		servers[name] = fixtureServer(name + "_tool")
		for len(g.changed) > 0 {
			<-g.changed
		}
		start := time.Now()
		g.save(b, servers)
		for !slices.ContainsFunc(g.tools(b, ctx), func(n string) bool { return strings.HasSuffix(n, name+"_tool") }) {
			select {
			case <-g.changed:
			case <-time.After(testenv.Timeout(time.Minute)):
				b.Fatalf("%s's tool never reached the list", name)
			}
		}
		took = append(took, time.Since(start))
		g.save(b, steady) // and away again, not timed
	}
	cancel()
	<-callsDone
	slices.Sort(took)
	b.ReportMetric(float64(took[len(took)/2].Milliseconds()), "p50-ms")
	b.ReportMetric(float64(took[len(took)*9/10].Milliseconds()), "p90-ms")
	b.ReportMetric(float64(calls.Load()), "other-calls")
	b.ReportMetric(float64(refused.Load()), "refused")
}

// A TypeScript SDK client holds one session while the gateway's file is
// edited under it, with real npm servers (server-memory and
// server-filesystem, contained): a server added, one's environment
// changed, a save that does not load, a server removed. Its tool list
// follows with list_changed, the servers an edit leaves alone answer
// between the edits, and the session lives throughout
// (testdata/clients/live-client.mjs says each check).
func TestTypeScriptClientAcrossEdits(t *testing.T) {
	requireClients(t)
	servers, _ := filepath.Abs("../testdata/servers")
	dir := t.TempDir()
	memDir, root := filepath.Join(dir, "memory"), filepath.Join(dir, "project")
	os.MkdirAll(memDir, 0o755)
	os.MkdirAll(root, 0o755)
	os.Chmod(memDir, 0o777) // a contained server run by root runs as nobody
	timeout := testenv.Timeout(2 * time.Minute).String()
	memory := func(file string) map[string]any {
		return map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, "cwd": servers,
			"env": map[string]string{"MEMORY_FILE_PATH": filepath.Join(memDir, file)}, "paths": map[string]any{"write": []string{memDir}}, "timeout": timeout}
	}
	filesystem := map[string]any{"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-filesystem/dist/index.js", root}, "cwd": servers,
		"paths": map[string]any{"read": []string{root}}, "timeout": timeout}
	version := func(name string, servers map[string]any) string {
		p := filepath.Join(dir, name)
		b, _ := json.Marshal(map[string]any{"mcpServers": servers})
		if servers == nil {
			b = []byte(`{"mcpServers": {"memory": {"command": `)
		}
		os.WriteFile(p, b, 0o644)
		return p
	}
	withMemory := version("a.json", map[string]any{"memory": memory("one.json")})
	g := startLiveGatewayFrom(t, withMemory)
	out, err := node(t, "node", "live-client.mjs", g.url, liveToken, g.cfg, strconv.Itoa(int(testenv.Timeout(2*time.Minute).Milliseconds())),
		withMemory,
		version("b.json", map[string]any{"memory": memory("one.json"), "filesystem": filesystem}),
		version("c.json", map[string]any{"memory": memory("two.json"), "filesystem": filesystem}),
		version("d.json", nil),
		version("e.json", map[string]any{"memory": memory("two.json")}))
	if err != nil {
		t.Fatalf("the TypeScript client across edits: %v\n%s\ngateway:\n%s", err, out, lastLines(g.stderr.String(), 40))
	}
	t.Logf("TypeScript client: %s", strings.TrimSpace(out))
	for _, want := range []string{"added=filesystem", "restarted=memory", "does not load; serving it as it was", "removed=filesystem"} {
		if !strings.Contains(g.stderr.String(), want) {
			t.Errorf("the gateway's log does not say %q", want)
		}
	}
}

// A profile's token taken out of the file ends its use while serve runs:
// the session opened with it is refused from its next request, and the
// new token opens the profile; a profile added is served at its path.
func TestServeFollowsItsProfiles(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	const old, renewed, added = "ro-token-old-0123456789abcdef", "ro-token-new-0123456789abcdef", "ops-token-0123456789abcdef"
	write := func(path string, profiles map[string]any) {
		b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"a": fixtureServer("alpha")}, "profiles": profiles})
		os.WriteFile(path+".swp", b, 0o644)
		os.Rename(path+".swp", path)
	}
	src := filepath.Join(t.TempDir(), "first.json")
	write(src, map[string]any{"ro": map[string]any{"servers": []string{"a"}, "tokens": []string{old}}})
	g := startLiveGatewayFrom(t, src)
	base := strings.TrimSuffix(g.url, "/mcp")
	connect := func(path, token string) (*mcp.ClientSession, error) {
		return mcp.NewClient(&mcp.Implementation{Name: "profile", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: base + path, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	}
	cs, err := connect("/mcp/ro", old)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	write(g.cfg, map[string]any{"ro": map[string]any{"servers": []string{"a"}, "tokens": []string{renewed}},
		"ops": map[string]any{"servers": []string{"a"}, "tokens": []string{added}}})
	// The old token's next request is refused (the SDK's client, whose
	// stream was ended, tries that stream again for a while first).
	testenv.Eventually(t, time.Minute, "the token taken out to be refused", func() bool {
		st, _, _, err := testenv.PostMCP(ctx, g.url+"/ro", old, cs.ID(), []byte(`{"jsonrpc":"2.0","id":9,"method":"tools/list"}`))
		return err == nil && st == http.StatusUnauthorized
	})
	for _, c := range []struct{ path, token string }{{"/mcp/ro", renewed}, {"/mcp/ops", added}} {
		s, err := connect(c.path, c.token)
		if err != nil {
			t.Fatalf("%s with its new token: %v", c.path, err)
		}
		if _, err := s.ListTools(ctx, nil); err != nil {
			t.Errorf("%s: %v", c.path, err)
		}
		s.Close()
	}
	if strings.Contains(g.stderr.String(), "wait for a restart") || strings.Contains(g.stderr.String(), "take effect when it restarts") {
		t.Errorf("profiles were left for a restart:\n%s", g.stderr.String())
	}
}
