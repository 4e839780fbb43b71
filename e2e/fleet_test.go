package e2e

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// Two replicas of serve --http on one PostgreSQL store (a real one from
// the Debian package): what clients teach one replica — two sessions that
// searched and called the tool ranked second — ranks that tool first on
// the other replica, without a restart. Each replica has a state folder
// of its own: only the store connects them.
func TestLearnedAcrossReplicas(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	// A password the store does not need (trust on loopback), as a
	// deployment's URL has one.
	storeURL := strings.Replace(url, "postgres@", "postgres:store-password-0123456789@", 1)
	dir := t.TempDir()
	cfg := serverConfig(t, dir, "notes", "append_entry,list_entries,archive_book", nil)
	replica := func() string {
		return runHTTPScript(t, testenv.ServeScript(t, toolshelf, fleetEnv(t, storeURL), cfg, "--http", "127.0.0.1:0"))
	}
	a, other := replica(), replica()

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	search := func(cs *mcp.ClientSession, query string) []string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": query}})
		if err != nil || res.IsError {
			t.Fatalf("search: %v %s", err, text(res))
		}
		var out struct{ Matches []struct{ Name string } }
		json.Unmarshal([]byte(text(res)), &out)
		var names []string
		for _, m := range out.Matches {
			names = append(names, m.Name)
		}
		return names
	}
	const query = "keep an entry for later"
	var taught string
	for range 2 {
		cs := connectMCP(t, ctx, a)
		found := search(cs, query)
		if len(found) < 2 {
			t.Fatalf("search found %v", found)
		}
		taught = found[1]
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": taught, "arguments": map[string]any{"text": "x"}}})
		if err != nil || res.IsError {
			t.Fatalf("call: %v", err)
		}
		cs.Close()
	}
	cs := connectMCP(t, ctx, other)
	testenv.Eventually(t, 10*time.Second, "the other replica to rank the taught tool first", func() bool {
		found := search(cs, "please "+query)
		return len(found) > 0 && found[0] == taught
	})
}

// With "trust": "approve", a new tool waits for a person on every
// replica; approving it once — with the CLI pointed at the store — lets
// every replica call it within seconds, without a restart. Both replicas
// write their audit records to the store, and 'audit summary store'
// reads the fleet's trail.
func TestApprovalReachesEveryReplica(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	dir := t.TempDir()
	cfg := serverConfig(t, dir, "tracker", "create_ticket", map[string]any{"trust": "approve"})
	env := fleetEnv(t, url)
	replicas := []string{
		runHTTPScript(t, testenv.ServeScript(t, toolshelf, env, cfg, "--http", "127.0.0.1:0", "--audit", "store")),
		runHTTPScript(t, testenv.ServeScript(t, toolshelf, env, cfg, "--http", "127.0.0.1:0", "--audit", "store")),
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	var sessions []*mcp.ClientSession
	for _, u := range replicas {
		sessions = append(sessions, connectMCP(t, ctx, u))
	}
	call := func(cs *mcp.ClientSession) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__tracker__create_ticket", "arguments": map[string]any{}}})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	for i, cs := range sessions {
		if res := call(cs); !res.IsError || !strings.Contains(text(res), "quarantined") {
			t.Fatalf("replica %d called a tool no one approved: %s", i, text(res))
		}
	}
	approve := exec.Command(toolshelf, "tools", "approve", "tracker/create_ticket", "--config", cfg)
	approve.Env = append(os.Environ(), "TOOLSHELF_STORE="+url, "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	if out, err := approve.CombinedOutput(); err != nil {
		t.Fatalf("tools approve: %v\n%s", err, out)
	}
	if _, err := os.Stat(filepath.Join(dir, "toolshelf.lock")); err == nil {
		t.Error("the approval went to a lock file, not the store")
	}
	for i, cs := range sessions {
		testenv.Eventually(t, 5*time.Second, fmt.Sprintf("replica %d to let the approved tool in", i), func() bool { return !call(cs).IsError })
	}

	// Both replicas' calls are in the store's one audit trail.
	testenv.Eventually(t, 10*time.Second, "both replicas' records in the store", func() bool {
		sum := exec.Command(toolshelf, "audit", "summary", "--json", "store")
		sum.Env = append(os.Environ(), "TOOLSHELF_STORE="+url)
		out, err := sum.Output()
		var s struct{ Calls int }
		return err == nil && json.Unmarshal(out, &s) == nil && s.Calls >= 4
	})
}

// tools import-lock moves the lock file's pins into the store, and
// export-lock brings the store's back into a lock file.
func TestLockMovesBetweenFileAndStore(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	dir := t.TempDir()
	cfg := serverConfig(t, dir, "tracker", "create_ticket,close_ticket", nil)
	run := func(store bool, args ...string) string {
		t.Helper()
		cmd := exec.Command(toolshelf, args...)
		cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
		if store {
			cmd.Env = append(cmd.Env, "TOOLSHELF_STORE="+url)
		}
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("toolshelf %v: %v\n%s", args, err, out)
		}
		return string(out)
	}
	run(false, "list", "--config", cfg) // pins both tools in the lock file
	lock := filepath.Join(dir, "toolshelf.lock")
	before, err := os.ReadFile(lock)
	if err != nil {
		t.Fatal(err)
	}
	if out := run(true, "tools", "import-lock", "--config", cfg); !strings.Contains(out, "copied 2 pins") {
		t.Errorf("import-lock: %s", out)
	}
	os.Remove(lock)
	if out := run(true, "tools", "export-lock", "--config", cfg); !strings.Contains(out, "copied 2 pins") {
		t.Errorf("export-lock: %s", out)
	}
	after, err := os.ReadFile(lock)
	if err != nil || string(after) != string(before) {
		t.Errorf("the lock file after a round trip through the store:\n%s\nwant\n%s", after, before)
	}
}

// balancer is a round-robin HTTP load balancer in front of replicas: each
// request goes to the next one, and to the one after when a replica
// cannot be reached (a connection refused: the request never arrived).
type balancer struct {
	backends []string
	next     atomic.Int64
	mu       sync.Mutex
	served   map[string]int
}

func (b *balancer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	start := int(b.next.Add(1))
	for i := range b.backends {
		backend := b.backends[(start+i)%len(b.backends)]
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, backend+r.URL.Path, bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			continue // down: try the next replica
		}
		b.mu.Lock()
		b.served[backend]++
		b.mu.Unlock()
		for k, vs := range resp.Header {
			w.Header()[k] = vs
		}
		w.WriteHeader(resp.StatusCode)
		// Event streams pass as they come, as a real balancer's do.
		buf := make([]byte, 32<<10)
		for {
			n, err := resp.Body.Read(buf)
			if n > 0 {
				w.Write(buf[:n])
				http.NewResponseController(w).Flush()
			}
			if err != nil {
				break
			}
		}
		resp.Body.Close()
		return
	}
	http.Error(w, "no replica answers", http.StatusBadGateway)
}

// Three stateless replicas on one store behind a round-robin balancer act
// as one: a client's searches and calls land on every replica and
// succeed; one replica killed mid-run, the next requests succeed on the
// others.
func TestFleetBehindBalancer(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	dir := t.TempDir()
	cfg := serverConfig(t, dir, "tracker", "create_ticket,close_ticket", nil)
	lb, front, replicas := startFleet(t, url, cfg, 3, "--stateless")

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	cs := connectMCP(t, ctx, front+"/mcp")
	work := func(round string) {
		t.Helper()
		for i := range 6 {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "create a ticket"}})
			if err != nil || res.IsError || !strings.Contains(text(res), "mcp__tracker__create_ticket") {
				t.Fatalf("%s, search %d: %v %s", round, i, err, text(res))
			}
			res, err = cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__tracker__create_ticket", "arguments": map[string]any{"text": "x"}}})
			if err != nil || res.IsError {
				t.Fatalf("%s, call %d: %v %s", round, i, err, text(res))
			}
		}
	}
	work("all three up")
	lb.checkEveryReplicaServed(t)

	replicas[1].Process.Kill()
	replicas[1].Wait()
	work("one replica killed")
}

// fleetEnv is the environment of a replica of the fleet whose store is
// at url: the store, and the fleet's key in a file.
func fleetEnv(t *testing.T, url string) map[string]string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "fleet-key")
	if err := os.WriteFile(file, []byte("MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return map[string]string{"TOOLSHELF_STORE": url, "TOOLSHELF_FLEET_KEY_FILE": file}
}

// startFleet starts n replicas of serve --http on the store at url (none
// when empty) with
// the configuration cfg and flags, behind a round-robin balancer whose
// URL it returns with the replicas' processes.
func startFleet(t *testing.T, url, cfg string, n int, flags ...string) (*balancer, string, []*exec.Cmd) {
	t.Helper()
	lb := &balancer{served: map[string]int{}}
	var replicas []*exec.Cmd
	for range n {
		var env map[string]string
		if url != "" {
			env = fleetEnv(t, url)
		}
		cmd := exec.Command(testenv.ServeScript(t, toolshelf, env, cfg, append([]string{"--http", "127.0.0.1:0"}, flags...)...))
		u := testenv.Listening(t, cmd, "a replica", testenv.URLLine)
		lb.backends = append(lb.backends, strings.TrimSuffix(u, "/mcp"))
		replicas = append(replicas, cmd)
	}
	front := httptest.NewServer(lb)
	t.Cleanup(front.Close)
	return lb, front.URL, replicas
}

// checkEveryReplicaServed fails the test when a replica got no request.
func (b *balancer) checkEveryReplicaServed(t *testing.T) {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, backend := range b.backends {
		if b.served[backend] == 0 {
			t.Errorf("replica %s served nothing: %v", backend, b.served)
		}
	}
}

// serverConfig writes a configuration of one server, this test binary in
// mcptest's "serve" mode with the given tools, under name, with the
// top-level settings of extra, and returns its path. The server may write
// markers in dir/markers alone.
func serverConfig(t *testing.T, dir, name, tools string, extra map[string]any) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// Contained without a network (a server that shares the host's would
	// close /mcp on loopback to callers without a token): its tools write
	// their markers in dir/markers, which it is granted.
	markers := filepath.Join(dir, "markers")
	if err := os.MkdirAll(markers, 0o777); err != nil {
		t.Fatal(err)
	}
	os.Chmod(markers, 0o777) // as root, the server runs as nobody
	cfg := map[string]any{"mcpServers": map[string]any{name: map[string]any{
		"command": exe, "timeout": testenv.Timeout(20 * time.Second).String(), "network": false,
		"paths": map[string]any{"write": []string{markers}},
		"env":   map[string]string{mcptest.ModeEnv: "serve", mcptest.ToolsEnv: tools},
	}}}
	for k, v := range extra {
		cfg[k] = v
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "servers.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// withSessions is the newest MCP revision with sessions, which the fleet
// tests are about: a client that asks for it gets one.
const withSessions = "2025-11-25"

// connectMCP connects a go-sdk client to a gateway's /mcp URL with a
// session; the session closes when the test ends.
func connectMCP(t *testing.T, ctx context.Context, url string) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fleet-test", Version: "1"}, nil).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, &mcp.ClientSessionOptions{ProtocolVersion: withSessions})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// Two replicas on PostgreSQL, each following its own configuration file,
// each pick up a change of it while they serve: a server added to one
// replica's file is called through that replica's session, and not
// through the other's, until the other's file says so too.
func TestReplicasFollowTheirFiles(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	env := fleetEnv(t, url)
	var cfgs, replicas []string
	for range 2 {
		cfg := serverConfig(t, t.TempDir(), "tracker", "create_ticket", nil)
		cfgs = append(cfgs, cfg)
		replicas = append(replicas, runHTTPScript(t, testenv.ServeScript(t, toolshelf, env, cfg, "--http", "127.0.0.1:0")))
	}
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	var sessions []*mcp.ClientSession
	for _, u := range replicas {
		sessions = append(sessions, connectMCP(t, ctx, u))
	}
	addNotes := func(cfg string) {
		t.Helper()
		b, _ := os.ReadFile(cfg)
		var doc map[string]map[string]map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		notes := maps.Clone(doc["mcpServers"]["tracker"])
		notes["env"] = map[string]string{mcptest.ModeEnv: "serve", mcptest.ToolsEnv: "add_note"}
		doc["mcpServers"]["notes"] = notes
		b, _ = json.Marshal(doc)
		os.WriteFile(cfg+".new", b, 0o644)
		if err := os.Rename(cfg+".new", cfg); err != nil {
			t.Fatal(err)
		}
	}
	callNote := func(cs *mcp.ClientSession) bool {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__notes__add_note", "arguments": map[string]any{}}})
		return err == nil && !res.IsError
	}
	for i := range 2 {
		addNotes(cfgs[i])
		testenv.Eventually(t, time.Minute, fmt.Sprintf("replica %d to serve the server added to its file", i), func() bool { return callNote(sessions[i]) })
		if i == 0 && callNote(sessions[1]) {
			t.Error("replica 1 serves a server only replica 0's file names")
		}
	}
}
