package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/launcher"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/mcptest"
)

func TestMain(m *testing.M) {
	mcptest.MaybeServe()
	os.Exit(m.Run())
}

// fake returns the configuration of a subprocess test server.
func fake(name, mode string, tools []string, extra ...string) config.ServerConfig {
	cmd, env := mcptest.Command(mode, tools, extra...)
	// Uncontained: these tests are about the protocol and supervision,
	// and the fixture writes markers and process ids into the test's
	// temporary folder, which a contained server does not see.
	// contain_test.go runs it contained.
	return config.ServerConfig{Name: name, Command: cmd, Env: env, Timeout: testenv.Timeout(5 * time.Second), NoContain: true}
}

// startPool starts a pool, waits for every first attempt, and closes it
// when the test ends.
func startPool(t *testing.T, cfgs []config.ServerConfig, opts *Options) *Pool {
	t.Helper()
	if opts == nil {
		opts = &Options{}
	}
	if opts.RestartDelay == 0 {
		opts.RestartDelay = 20 * time.Millisecond
	}
	p := NewPool(cfgs, opts)
	run(t, p)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(3*config.DefaultTimeout))
	defer cancel()
	if err := p.Wait(ctx); err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return p
}

// run runs p until the test ends and returns stop, which ends Run early
// and returns once it has.
func run(t *testing.T, p *Pool) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		if err := p.Run(ctx); err != nil {
			t.Error(err)
		}
	}()
	stop = func() { cancel(); <-done }
	t.Cleanup(stop)
	return stop
}

func statusOf(p *Pool, name string) Status {
	for _, s := range p.Status() {
		if s.Name == name {
			return s
		}
	}
	return Status{}
}

func toolNames(c *catalog.Catalog, server string) []string {
	var names []string
	for e := range c.All() {
		if e.Server == server {
			names = append(names, e.Tool)
		}
	}
	return names
}

// eventually polls cond until it holds, or fails with a timeout after the
// servers' default timeout (scaled by testenv).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testenv.Eventually(t, config.DefaultTimeout, what, cond)
}

func textOf(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("result has %d content blocks, want 1", len(res.Content))
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content is %T, want text", res.Content[0])
	}
	return tc.Text
}

func TestPoolListsAndCalls(t *testing.T) {
	cfgs := []config.ServerConfig{
		fake("alpha", "serve", []string{"create_issue", "list_issues"}),
		fake("paged", "serve", []string{"a1", "a2", "a3", "a4", "a5"}, mcptest.PageEnv+"=2"),
		fake("noisy", "serve", []string{"echo"}, mcptest.BannerEnv+"=No X display available. Running in headless mode.\nstarting up"),
	}
	cfgs[0].AlwaysLoad = []string{"list_issues"}
	p := startPool(t, cfgs, nil)

	c := p.Catalog()
	for server, want := range map[string][]string{
		"alpha": {"create_issue", "list_issues"},
		"paged": {"a1", "a2", "a3", "a4", "a5"},
		"noisy": {"echo"},
	} {
		if diff := cmp.Diff(want, toolNames(c, server)); diff != "" {
			t.Errorf("%s tools (-want +got):\n%s", server, diff)
		}
		if st := statusOf(p, server); st.State != StateReady || st.Source != SourceLive {
			t.Errorf("%s: state %s source %s (%s), want ready/live", server, st.State, st.Source, st.Error)
		}
	}
	if e, _ := c.Lookup("mcp__alpha__list_issues"); e == nil || !e.AlwaysLoad {
		t.Errorf("alwaysLoad from the configuration was not applied: %+v", e)
	}
	if got := p.Pending(); len(got) != 0 {
		t.Errorf("Pending = %v, want none", got)
	}
	if srv, _ := c.Server("alpha"); srv.Instructions != "A scripted test server." || srv.ProtocolVersion == "" {
		t.Errorf("server info = %+v", srv)
	}

	res, err := p.Scope(nil).Call(context.Background(), "mcp__noisy__echo", json.RawMessage(`{"text":"hi"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := textOf(t, res), `{"tool":"echo","arguments":{"text":"hi"}}`; got != want {
		t.Errorf("call result %s, want %s", got, want)
	}
	if _, err := p.Scope(nil).Call(context.Background(), "mcp__alpha__nope", nil); !errors.Is(err, ErrUnknownTool) {
		t.Errorf("unknown tool: err = %v, want ErrUnknownTool", err)
	}
}

// A server on protocol 2024-11-05 that sends fields the go-sdk does not
// model: they must survive in the catalog's raw JSON.
func TestPoolKeepsRawTools(t *testing.T) {
	p := startPool(t, []config.ServerConfig{fake("raw", "raw", nil)}, nil)
	if st := statusOf(p, "raw"); st.State != StateReady || st.ProtocolVersion != "2024-11-05" {
		t.Fatalf("status = %+v", st)
	}
	e, ok := p.Catalog().Lookup("mcp__raw__create_issue")
	if !ok {
		t.Fatal("create_issue missing")
	}
	for _, field := range []string{`"execution":{"taskSupport":"optional"}`, `"outputSchema"`, `"annotations":{"readOnlyHint":false}`, `"$schema"`} {
		if !strings.Contains(string(e.Raw), field) {
			t.Errorf("raw tool lost %s: %s", field, e.Raw)
		}
	}
	q, _ := p.Catalog().Lookup("mcp__raw__query")
	if q == nil || !q.AlwaysLoad || !strings.Contains(string(q.Raw), `"vendor/x":1`) || !strings.Contains(string(q.Raw), `"$ref":"#/$defs/q"`) {
		t.Errorf("query tool = %+v", q)
	}
	res, err := p.Scope(nil).Call(context.Background(), "mcp__raw__query", json.RawMessage(`{"sql":"select 1"}`))
	if err != nil {
		t.Fatal(err)
	}
	if got := textOf(t, res); !strings.Contains(got, `"sql":"select 1"`) {
		t.Errorf("call result %s", got)
	}
}

func TestPoolFaults(t *testing.T) {
	refused := refusedURL(t)
	// Short timeouts, for servers that never answer; scaled, because the
	// printer must have printed its tools within its timeout. Not 500 ms:
	// the printer is this test binary started again, and a binary just
	// built (-race) took longer than that to start, idle.
	short := testenv.Timeout(2 * time.Second)
	hang := fake("hang", "hang", nil)
	hang.Timeout = short
	approved := fake("approved", "exit", nil)
	approved.AutoApprove = []string{"send_message"}
	cfgs := []config.ServerConfig{
		fake("good", "serve", []string{"ping_me"}),
		fake("exits", "exit", nil),
		hang,
		{Name: "missing", Command: "toolshelf-no-such-command-xyz"},
		{Name: "refused", URL: refused, Timeout: testenv.Timeout(2 * time.Second)},
		fake("printer", "functions", []string{"search_docs", "fetch_doc"}),
		approved,
		{Name: "unset", Command: "x", Err: errors.New("environment variable TOKEN is not set")},
	}
	cfgs[5].Timeout = short
	p := startPool(t, cfgs, &Options{RestartDelay: time.Hour})

	if st := statusOf(p, "good"); st.State != StateReady {
		t.Fatalf("good server: %+v", st)
	}
	want := map[string]string{
		"exits":   "API token is not valid",
		"hang":    fmt.Sprintf("no answer within %v; stopped it (a slow server, or a busy machine, may need a longer \"timeout\" in its configuration); stderr: connecting to the backend...", short),
		"missing": `command "toolshelf-no-such-command-xyz" not found`,
		"refused": "",
		"unset":   "TOKEN is not set",
	}
	for name, msg := range want {
		st := statusOf(p, name)
		if st.State != StateFailed || !strings.Contains(st.Error, msg) {
			t.Errorf("%s: state %s error %q, want failed with %q", name, st.State, st.Error, msg)
		}
	}

	// Fallbacks: tools the server printed, then autoApprove names.
	c := p.Catalog()
	if diff := cmp.Diff([]string{"fetch_doc", "search_docs"}, toolNames(c, "printer")); diff != "" {
		t.Errorf("printer tools (-want +got):\n%s", diff)
	}
	if st := statusOf(p, "printer"); st.Source != SourceOutput {
		t.Errorf("printer source = %q", st.Source)
	}
	e, _ := c.Lookup("mcp__printer__search_docs")
	if e == nil || !e.Unverified || e.Description != "Listed in the functions shape: search_docs" || len(e.Params) != 1 {
		t.Errorf("printed tool = %+v", e)
	}
	if _, err := p.Scope(nil).Call(context.Background(), "mcp__printer__search_docs", nil); !errors.Is(err, ErrUnverified) {
		t.Errorf("call to an unverified tool: %v", err)
	}
	if diff := cmp.Diff([]string{"send_message"}, toolNames(c, "approved")); diff != "" {
		t.Errorf("approved tools (-want +got):\n%s", diff)
	}
	if st := statusOf(p, "approved"); st.Source != SourceAutoApprove {
		t.Errorf("approved source = %q", st.Source)
	}
	if _, err := p.Scope(nil).Call(context.Background(), "mcp__good__ping_me", nil); err != nil {
		t.Errorf("the good server stopped working: %v", err)
	}
}

// refusedURL returns a loopback URL where nothing listens.
func refusedURL(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + "/mcp"
}

func TestPoolRestartsCrashedServer(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	cfg := fake("crashy", "serve", []string{"crash", "echo"}, mcptest.PIDEnv+"="+pidFile)
	var mu sync.Mutex
	var snapshots []*catalog.Catalog
	p := NewPool([]config.ServerConfig{cfg}, &Options{RestartDelay: 20 * time.Millisecond})
	p.published = func(c *catalog.Catalog) {
		mu.Lock()
		snapshots = append(snapshots, c)
		mu.Unlock()
	}
	run(t, p)
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	firstPID := readPID(t, pidFile)

	if _, err := p.Scope(nil).Call(context.Background(), "mcp__crashy__crash", nil); err == nil {
		t.Fatal("call to a crashing tool succeeded")
	}
	eventually(t, "a restart", func() bool {
		st := statusOf(p, "crashy")
		return st.Restarts >= 1 && st.State == StateReady
	})
	if pid := readPID(t, pidFile); pid == firstPID {
		t.Errorf("no new process after the crash (pid %d)", pid)
	}
	res, err := p.Scope(nil).Call(context.Background(), "mcp__crashy__echo", json.RawMessage(`{"text":"again"}`))
	if err != nil {
		t.Fatalf("call after restart: %v", err)
	}
	if !strings.Contains(textOf(t, res), "again") {
		t.Errorf("result %v", textOf(t, res))
	}
	// While the server was away its tools stayed searchable, marked stale.
	mu.Lock()
	defer mu.Unlock()
	sawStale := false
	for _, c := range snapshots {
		if e, ok := c.Lookup("mcp__crashy__echo"); ok && e.Stale {
			sawStale = true
		}
	}
	if !sawStale {
		t.Error("no snapshot marked the crashed server's tools stale")
	}
}

// Killing the process from outside is a crash too.
func TestPoolRestartsKilledProcess(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "pid")
	p := startPool(t, []config.ServerConfig{fake("victim", "serve", []string{"echo"}, mcptest.PIDEnv+"="+pidFile)}, nil)
	pid := readPID(t, pidFile)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	eventually(t, "a restart after SIGKILL", func() bool {
		st := statusOf(p, "victim")
		return st.Restarts >= 1 && st.State == StateReady
	})
	if _, err := p.Scope(nil).Call(context.Background(), "mcp__victim__echo", nil); err != nil {
		t.Fatalf("call after restart: %v", err)
	}
}

func readPID(t *testing.T, file string) int {
	t.Helper()
	var pid int
	eventually(t, "the pid file", func() bool {
		b, err := os.ReadFile(file)
		pid, _ = strconv.Atoi(string(b))
		return err == nil && pid > 0
	})
	return pid
}

func TestPoolListChanged(t *testing.T) {
	p := startPool(t, []config.ServerConfig{fake("dyn", "serve", []string{"add_tool", "remove_tool", "old_tool"})}, nil)
	changed := p.Changed()
	before := p.Catalog().Version()
	if _, err := p.Scope(nil).Call(context.Background(), "mcp__dyn__add_tool", json.RawMessage(`{"name":"new_tool"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := p.Scope(nil).Call(context.Background(), "mcp__dyn__remove_tool", json.RawMessage(`{"name":"old_tool"}`)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the new snapshot", func() bool {
		names := toolNames(p.Catalog(), "dyn")
		return slices.Contains(names, "new_tool") && !slices.Contains(names, "old_tool")
	})
	if p.Catalog().Version() == before {
		t.Error("version did not change")
	}
	select {
	case <-changed:
	default:
		t.Error("Changed was not closed")
	}
	if _, err := p.Scope(nil).Call(context.Background(), "mcp__dyn__new_tool", nil); err != nil {
		t.Errorf("calling the added tool: %v", err)
	}
}

func TestPoolCancelsCalls(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	p := startPool(t, []config.ServerConfig{fake("slow", "serve", []string{"wait"})}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		_, err := p.Scope(nil).Call(ctx, "mcp__slow__wait", json.RawMessage(`{"marker":`+strconv.Quote(marker)+`}`))
		errc <- err
	}()
	eventually(t, "the call to reach the server", func() bool {
		b, _ := os.ReadFile(marker)
		return string(b) == "started"
	})
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	eventually(t, "the server to see the cancellation", func() bool {
		b, _ := os.ReadFile(marker)
		return string(b) == "cancelled"
	})
}

func TestPoolDiskCache(t *testing.T) {
	dir := t.TempDir()
	// The cache key is the command, arguments and folder, not the
	// environment: the second pool runs the same command, which now hangs.
	good := fake("svc", "serve", []string{"one", "two"})
	p := NewPool([]config.ServerConfig{good}, &Options{CacheDir: dir})
	stop := run(t, p)
	if err := p.Wait(context.Background()); err != nil {
		t.Fatal(err)
	}
	stop()
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("cache files: %v", files)
	}

	hung := good
	hung.Env = map[string]string{mcptest.ModeEnv: "hang"}
	hung.Timeout = 3 * time.Second
	p2 := NewPool([]config.ServerConfig{hung}, &Options{CacheDir: dir})
	// Before Start, the cached tools are already searchable, and stale.
	c := p2.Catalog()
	if diff := cmp.Diff([]string{"one", "two"}, toolNames(c, "svc")); diff != "" {
		t.Fatalf("cached tools (-want +got):\n%s", diff)
	}
	if e, _ := c.Lookup("mcp__svc__one"); !e.Stale {
		t.Error("cached tool not marked stale")
	}
	run(t, p2)
	if got := p2.Pending(); !slices.Equal(got, []string{"svc"}) {
		t.Errorf("Pending = %v, want [svc]", got)
	}
	if st := statusOf(p2, "svc"); st.Source != SourceCache {
		t.Errorf("source = %q", st.Source)
	}
}

func TestPoolCloseLeavesNothing(t *testing.T) {
	before := runtime.NumGoroutine()
	dir := t.TempDir()
	var cfgs []config.ServerConfig
	for i := range 4 {
		mode := "serve"
		if i == 3 {
			mode = "hang" // ignores stdin EOF; needs signals
		}
		cfgs = append(cfgs, fake("s"+strconv.Itoa(i), mode, []string{"t"}, mcptest.PIDEnv+"="+filepath.Join(dir, strconv.Itoa(i))))
	}
	p := NewPool(cfgs, nil)
	stop := run(t, p)
	var pids []int
	for i := range cfgs {
		pids = append(pids, readPID(t, filepath.Join(dir, strconv.Itoa(i))))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, s := range p.list()[:3] {
		select {
		case <-s.settled:
		case <-ctx.Done():
			t.Fatal("servers did not connect")
		}
	}
	stop()
	for _, pid := range pids {
		if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
			t.Errorf("process %d is still there after Close (kill 0: %v)", pid, err)
		}
	}
	eventually(t, "goroutines to end", func() bool { return runtime.NumGoroutine() <= before })
}

// Remote servers over streamable HTTP and legacy SSE, on loopback, with
// configured headers.
func TestPoolRemote(t *testing.T) {
	srv, err := mcptest.NewServer("remote", mcptest.SimpleTools("lookup"), nil)
	if err != nil {
		t.Fatal(err)
	}
	auth := func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer sekrit" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	}
	streamable := httptest.NewServer(auth(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(streamable.Close) // after the pool's cleanup, which comes later
	sse := httptest.NewServer(auth(mcp.NewSSEHandler(func(*http.Request) *mcp.Server { return srv }, nil)))
	t.Cleanup(sse.Close)
	hdr := map[string]string{"Authorization": "Bearer sekrit"}
	p := startPool(t, []config.ServerConfig{
		{Name: "http", Type: "http", URL: streamable.URL, Headers: hdr},
		{Name: "sse", Type: "sse", URL: sse.URL, Headers: hdr},
		{Name: "noauth", Type: "http", URL: streamable.URL, Timeout: testenv.Timeout(2 * time.Second)},
	}, &Options{RestartDelay: time.Hour})
	for _, name := range []string{"http", "sse"} {
		if st := statusOf(p, name); st.State != StateReady || st.Tools != 1 {
			t.Errorf("%s: %+v", name, st)
		}
		res, err := p.Scope(nil).Call(context.Background(), "mcp__"+name+"__lookup", json.RawMessage(`{"text":"x"}`))
		if err != nil {
			t.Errorf("%s call: %v", name, err)
			continue
		}
		if !strings.Contains(textOf(t, res), `"text":"x"`) {
			t.Errorf("%s result %s", name, textOf(t, res))
		}
	}
	if st := statusOf(p, "noauth"); st.State != StateFailed || strings.Contains(st.Error, "sekrit") {
		t.Errorf("noauth: %+v", st)
	}
}

func TestPoolInProcessAndDisabled(t *testing.T) {
	srv, err := mcptest.NewServer("mem", mcptest.SimpleTools("a", "b"), nil)
	if err != nil {
		t.Fatal(err)
	}
	dial := func(ctx context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		go srv.Run(ctx, st)
		return ct, nil
	}
	p := startPool(t, []config.ServerConfig{
		{Name: "mem", Dial: dial, Deny: []string{"b"}},
		{Name: "off", Command: "never-run", Disabled: true},
	}, nil)
	if diff := cmp.Diff([]string{"a"}, toolNames(p.Catalog(), "mem")); diff != "" {
		t.Errorf("deny pattern not applied (-want +got):\n%s", diff)
	}
	if st := statusOf(p, "off"); st.State != StateDisabled {
		t.Errorf("off: %+v", st)
	}
}

// No moment during start-up shows a server that is neither pending nor in
// the catalog: the gateway relies on it to know when a search is complete.
func TestPoolReadyImpliesPublished(t *testing.T) {
	var cfgs []config.ServerConfig
	for i := range 6 {
		cfgs = append(cfgs, fake("s"+strconv.Itoa(i), "serve", []string{"t"}))
	}
	p := NewPool(cfgs, nil)
	run(t, p)
	done := make(chan struct{})
	go func() { p.Wait(context.Background()); close(done) }()
	for polling := true; polling; {
		select {
		case <-done:
			polling = false
		default:
		}
		pending := p.Pending()
		c := p.Catalog()
		for _, st := range p.Status() {
			if st.State == StateReady && !slices.Contains(pending, st.Name) {
				// Pending was read before the catalog: a server that was
				// not pending then must have its tools in this catalog.
				if _, ok := c.Lookup("mcp__" + st.Name + "__t"); !ok {
					t.Fatalf("%s is ready and not pending, but its tools are not in the catalog", st.Name)
				}
			}
		}
	}
}

// A server that leaves a grandchild in a session of its own, holding its
// stdout and stderr, and exits: the pool reaps it at once (no zombie),
// fails it with its reason, and stops without waiting for the grandchild's
// pipes to close. Where servers run in PID namespaces, the grandchild
// ends with the server; it never outlives the pool.
func TestPoolDetachedGrandchild(t *testing.T) {
	dir := t.TempDir()
	childPID, grandchildPID := filepath.Join(dir, "child"), filepath.Join(dir, "grandchild")
	cfg := fake("detacher", "detach", nil, mcptest.PIDEnv+"="+childPID, mcptest.GrandchildEnv+"="+grandchildPID)
	p := NewPool([]config.ServerConfig{cfg}, &Options{RestartDelay: time.Hour})
	stop := run(t, p)
	child := readPID(t, childPID)
	eventually(t, "the server to fail", func() bool { return statusOf(p, "detacher").State == StateFailed })
	if st := statusOf(p, "detacher"); !strings.Contains(st.Error, "detached a worker") {
		t.Errorf("error %q does not carry the server's stderr", st.Error)
	}
	eventually(t, "the exited server to be reaped", func() bool { return gone(child) })
	stop()
	if b, err := os.ReadFile(grandchildPID); err == nil {
		grandchild, _ := strconv.Atoi(string(b))
		t.Cleanup(func() { syscall.Kill(grandchild, syscall.SIGKILL) })
		if launcher.NoPIDNamespaces() {
			return // a daemon outlives its server here, as the log says
		}
		eventually(t, "the grandchild to end with its server", func() bool { return gone(grandchild) })
	}
}

// gone reports whether a process has ended (exited, or a zombie not yet
// reaped).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err != nil || strings.Contains(string(b), ") Z ")
}

// When the pool stops a server, nothing the server started survives it:
// not even a daemon it double-forked into a session of its own (as
// `heroku update --autoupdate` leaves), which its process group does not
// hold. Servers run in a PID namespace of their own (process_linux.go).
func TestStoppedServerLeavesNoDaemon(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("PID namespaces are Linux's")
	}
	dir := t.TempDir()
	daemonPID := filepath.Join(dir, "daemon")
	p := NewPool([]config.ServerConfig{fake("autoupdater", "daemon", []string{"t"}, mcptest.GrandchildEnv+"="+daemonPID)}, &Options{RestartDelay: time.Hour})
	stop := run(t, p)
	eventually(t, "the server to be ready", func() bool { return statusOf(p, "autoupdater").State == StateReady })
	daemon := readPID(t, daemonPID)
	t.Cleanup(func() { syscall.Kill(daemon, syscall.SIGKILL) })
	if launcher.NoPIDNamespaces() {
		t.Skip("this system refuses PID namespaces")
	}
	if gone(daemon) {
		t.Fatal("the daemon ended while its server ran")
	}
	stop()
	eventually(t, "the daemon to end with its server", func() bool { return gone(daemon) })
}

// A configuration whose server's package was never installed fails with
// one line that says so and what to do, not Node's stack trace.
func TestMissingPackageHint(t *testing.T) {
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed")
	}
	dir := t.TempDir()
	p := NewPool([]config.ServerConfig{{Name: "memory", Command: "node", Args: []string{"node_modules/@modelcontextprotocol/server-memory/dist/index.js"}, Cwd: dir, Timeout: testenv.Timeout(10 * time.Second)}}, &Options{RestartDelay: time.Hour})
	run(t, p)
	eventually(t, "the server to fail", func() bool { return statusOf(p, "memory").State == StateFailed })
	st := statusOf(p, "memory")
	if !strings.Contains(st.Error, "its Node package is not installed") || !strings.Contains(st.Error, "npm ci") || !strings.Contains(st.Error, dir) {
		t.Errorf("error: %s", st.Error)
	}
	if strings.Contains(st.Error, "Module._resolveFilename") || strings.Count(st.Error, "\n") > 0 {
		t.Errorf("the error carries Node's stack trace: %s", st.Error)
	}
}

// A failed server says when it is tried again, and Retry tries it now:
// here its backoff is an hour, so only the retry can count.
func TestPoolRetryNow(t *testing.T) {
	failing := config.ServerConfig{Name: "down", Command: "false", NoContain: true, Timeout: testenv.Timeout(5 * time.Second)}
	p := startPool(t, []config.ServerConfig{failing, fake("up", "serve", []string{"echo"})}, &Options{RestartDelay: time.Hour, MaxRestartDelay: time.Hour})
	var st Status
	testenv.Eventually(t, 10*time.Second, "the failed server to wait for its next try", func() bool {
		st = p.Status()[0]
		return !st.RetryAt.IsZero()
	})
	if st.State != StateFailed || st.Restarts != 0 || time.Until(st.RetryAt) < 50*time.Minute {
		t.Fatalf("before the retry: %+v", st)
	}
	if err := p.Retry("down"); err != nil {
		t.Fatal(err)
	}
	testenv.Eventually(t, 10*time.Second, "the retry to be tried", func() bool {
		st = p.Status()[0]
		return st.Restarts == 1 && !st.RetryAt.IsZero()
	})
	if err := p.Retry("up"); err == nil || !strings.Contains(err.Error(), "server up is ready: no try is waiting") {
		t.Errorf("a ready server: %v", err)
	}
	if err := p.Retry("nope"); err == nil || !strings.Contains(err.Error(), `no server "nope"`) {
		t.Errorf("an unknown server: %v", err)
	}
	// A server whose configuration is at fault is not tried again: a
	// retry cannot mend it, and says so.
	broken := fake("broken", "serve", nil)
	broken.Err = errors.New(`${API_KEY} is not set (used in env.KEY)`)
	q := startPool(t, []config.ServerConfig{broken}, nil)
	if err := q.Retry("broken"); err == nil || !strings.Contains(err.Error(), "its configuration is at fault") {
		t.Errorf("a server whose configuration is at fault: %v", err)
	}
}
