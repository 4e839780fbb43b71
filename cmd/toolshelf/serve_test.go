package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// stdioSession runs 'toolshelf serve' in-process with pipes for stdin and
// stdout, and exchanges raw JSON-RPC lines with it.
type stdioSession struct {
	t      *testing.T
	in     *io.PipeWriter
	out    *bufio.Scanner
	done   chan int
	stderr *testenv.Buffer

	hangUpOnce sync.Once
}

// hangUp closes serve's stdin and reads what serve still writes until it
// closes stdout, as a client process's pipe would take it: the gateway may
// be sending a notification (a server's prompts or resources changed) as
// the client goes.
func (s *stdioSession) hangUp() {
	s.hangUpOnce.Do(func() {
		s.in.Close()
		go func() {
			for s.out.Scan() {
			}
		}()
	})
}

func startServe(t *testing.T, args ...string) *stdioSession {
	t.Helper()
	return startServeWith(t, nil, args...)
}

// startServeWith is startServe with vars over the process's environment,
// as runCLIWith.
func startServeWith(t *testing.T, vars map[string]string, args ...string) *stdioSession {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	s := &stdioSession{t: t, in: inW, out: bufio.NewScanner(outR), done: make(chan int, 1), stderr: &testenv.Buffer{}}
	s.out.Buffer(make([]byte, 1<<20), 16<<20)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		e := &env{stdin: inR, stdout: outW, stderr: s.stderr, getenv: getenvWith(vars)}
		s.done <- runEnv(ctx, e, append([]string{"serve"}, args...))
		outW.Close()
	}()
	t.Cleanup(func() {
		s.hangUp()
		cancel()
		select {
		case <-s.done:
		case <-time.After(testenv.Timeout(config.DefaultTimeout)):
			t.Error("serve did not stop")
		}
	})
	return s
}

// send writes one line; for requests (with an id) it returns the response.
func (s *stdioSession) send(line string) map[string]any {
	s.t.Helper()
	if _, err := io.WriteString(s.in, line+"\n"); err != nil {
		s.t.Fatal(err)
	}
	if !strings.Contains(line, `"id"`) && strings.Contains(line, `"method"`) {
		return nil
	}
	for s.out.Scan() {
		var m map[string]any
		if err := json.Unmarshal(s.out.Bytes(), &m); err != nil {
			s.t.Fatalf("stdout is not JSON-RPC: %q", s.out.Text())
		}
		if _, ok := m["method"]; ok {
			continue // a notification
		}
		return m
	}
	s.t.Fatalf("stdout ended: %v; stderr:\n%s", s.out.Err(), s.stderr)
	return nil
}

func TestServeStdio(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	cfg := fakeConfig(t, map[string][2]string{"tracker": {"serve", "create_issue,list_issues"}})
	s := startServeWith(t, vars, "--config", cfg, "--log-level", "debug")
	r := s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)

	// Protocol faults are JSON-RPC errors, and the session goes on.
	r = s.send(`{"jsonrpc":"2.0","id":2,"method":"no/such/method","params":{}}`)
	if code(r) != -32601 {
		t.Errorf("unknown method: %v", r)
	}
	r = s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"no_such_tool","arguments":{}}}`)
	if code(r) == 0 {
		t.Errorf("unknown tool name in tools/call: %v", r)
	}
	r = s.send(`{"jsonrpc":"2.0","id":4,"method":"tools/list"}`)
	tools, _ := r["result"].(map[string]any)["tools"].([]any)
	if len(tools) != 2 {
		t.Errorf("tools/list: %v", r)
	}
	// search_tools waits for servers still connecting, then searches.
	r = s.send(`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"list issues"}}}`)
	if !strings.Contains(resultText(r), `"name":"mcp__tracker__list_issues"`) {
		t.Fatalf("search: %v", r)
	}
	r = s.send(`{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__tracker__list_issues","arguments":{"text":"open"}}}}`)
	if got := resultText(r); got != `{"tool":"list_issues","arguments":{"text":"open"}}` {
		t.Errorf("call: %v", r)
	}
	// Nothing but JSON-RPC went to stdout (checked by send), and the call
	// was logged on stderr (at debug: at info a call has no line).
	if !strings.Contains(s.stderr.String(), "msg=call profile=everything tool=mcp__tracker__list_issues server=tracker") {
		t.Errorf("no call log line:\n%s", s.stderr)
	}
}

func code(r map[string]any) int {
	e, _ := r["error"].(map[string]any)
	c, _ := e["code"].(float64)
	return int(c)
}

func resultText(r map[string]any) string {
	res, _ := r["result"].(map[string]any)
	content, _ := res["content"].([]any)
	var b strings.Builder
	for _, c := range content {
		if m, ok := c.(map[string]any); ok {
			s, _ := m["text"].(string)
			b.WriteString(s)
		}
	}
	return b.String()
}

func TestServeErrors(t *testing.T) {
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"serve", "--http", "0.0.0.0:0"}, `--http "0.0.0.0:0" listens beyond this machine; set --auth-token-file FILE (or $TOOLSHELF_AUTH_TOKEN_FILE)`},
		{[]string{"serve", "--http", ":8080"}, "listens beyond this machine"},
		{[]string{"serve", "--http", "nonsense"}, "want HOST:PORT"},
		{[]string{"serve", "--mode", "most"}, `--mode "most": want true, false, auto or auto:N`},
		{[]string{"serve", "--mode", "auto:100"}, "must be 0 to 99 percent"},
		{[]string{"serve", "--engine", "vector"}, `unknown engine "vector"`},
		{[]string{"serve", "--log-level", "loud"}, `--log-level "loud"`},
		{[]string{"serve", "--context-window", "0"}, "--context-window must be a positive integer"},
		{[]string{"serve", "extra"}, "unexpected arguments"},
	} {
		r := runCLI(t, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%v: code %d stderr %q, want 2 and %q", tt.args, r.code, r.stderr, tt.stderr)
		}
	}
}

// Stopping serve leaves nothing behind: every server process it started
// has exited, and every goroutine it started has ended.
func TestServeShutdownLeavesNothing(t *testing.T) {
	testenv.RequireNPM(t, "testdata/servers")
	before := runtime.NumGoroutine()
	s := startServe(t, "--config", realServersConfig(t, "memory", "filesystem", "sequential-thinking"))
	r := s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	if r["result"] == nil {
		t.Fatalf("initialize: %v", r)
	}
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r = s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__memory__read_graph"}}}`)
	if resultText(r) == "" || strings.Contains(resultText(r), "error") {
		t.Fatalf("call through the gateway: %v", r)
	}
	children := descendants(os.Getpid())
	if len(children) < 3 {
		t.Fatalf("want at least 3 server processes, found %v", children)
	}

	s.hangUp() // the client goes away: serve returns
	select {
	case code := <-s.done:
		s.done <- code // for the cleanup
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Fatal("serve did not return after stdin closed")
	}
	// serve waited for each server's process; a contained server's
	// sandbox (bwrap's init in its PID namespace) ends with it, a moment
	// after.
	for _, pid := range children {
		testenv.Eventually(t, 10*time.Second, fmt.Sprintf("server process %d to end after serve returned", pid), func() bool {
			return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH)
		})
	}
	if left := descendants(os.Getpid()); len(left) > 0 {
		t.Errorf("processes left behind: %v", left)
	}
	// The SDK's and the pipes' goroutines end a moment after their
	// connections close; wait for them, then name any that did not.
	deadline := time.Now().Add(testenv.Timeout(config.DefaultTimeout))
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		buf := make([]byte, 1<<20)
		t.Errorf("%d goroutines before serve, %d after it returned:\n%s", before, n, buf[:runtime.Stack(buf, true)])
	}
}

// descendants returns the pids of every process below pid, read from
// /proc (Linux).
func descendants(pid int) []int {
	children := map[int][]int{}
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		p, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", d.Name(), "stat"))
		if err != nil {
			continue
		}
		// pid (comm) state ppid ...: comm may hold spaces, so read after
		// the last ')'.
		fields := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(fields) < 2 || fields[0] == "Z" {
			continue
		}
		ppid, _ := strconv.Atoi(fields[1])
		children[ppid] = append(children[ppid], p)
	}
	var out []int
	var walk func(int)
	walk = func(p int) {
		for _, c := range children[p] {
			out = append(out, c)
			walk(c)
		}
	}
	walk(pid)
	return out
}

// A gateway killed with SIGKILL (as some clients stop their servers)
// takes its servers with it: none is left running (Linux's parent-death
// signal).
func TestServeKilledLeavesNoServers(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the parent-death signal is Linux's")
	}
	pidFile := filepath.Join(t.TempDir(), "server.pid")
	// A server that ignores the end of its stdin, as some real ones do.
	command, env := mcptest.Command("hang", nil, mcptest.PIDEnv+"="+pidFile)
	// Uncontained: the test reads the pid the server writes in its
	// temporary folder.
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"child": map[string]any{"command": command, "env": env, "timeout": "1h", "contain": false}}})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gw := exec.Command(exe, "serve", "--config", cfg)
	gw.Env = append(os.Environ(), runMainEnv+"=1")
	stdin, err := gw.StdinPipe() // kept open: the gateway serves until killed
	if err != nil {
		t.Fatal(err)
	}
	defer stdin.Close()
	if err := gw.Start(); err != nil {
		t.Fatal(err)
	}
	var pid int
	testenv.Eventually(t, config.DefaultTimeout, "the server to start", func() bool {
		b, _ := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(string(b))
		return pid > 0
	})
	gw.Process.Kill()
	gw.Wait()
	testenv.Eventually(t, config.DefaultTimeout, fmt.Sprintf("server %d to die with its gateway", pid), func() bool {
		return !alive(pid)
	})
}

// alive reports whether a process exists and is not a zombie.
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	return err == nil && !bytes.Contains(b[bytes.LastIndexByte(b, ')'):], []byte(") Z "))
}

// A client that sends its body slowly, or not at all, loses the
// connection when the read timeout passes; others are served.
func TestServeHTTPSlowClient(t *testing.T) {
	saved := httpTimeouts
	t.Cleanup(func() { httpTimeouts = saved })
	httpTimeouts.read = testenv.Timeout(300 * time.Millisecond)
	url := startServeHTTP(t)
	conn, err := net.Dial("tcp", strings.TrimPrefix(strings.TrimSuffix(url, "/mcp"), "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintf(conn, "POST /mcp HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"jsonrpc\":")
	conn.SetReadDeadline(time.Now().Add(testenv.Timeout(config.DefaultTimeout)))
	_, err = io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the server kept a connection whose body never came")
	}
}

// startServeHTTP runs serve --http on a free loopback port in-process
// and returns its /mcp URL.
func startServeHTTP(t *testing.T, args ...string) string {
	t.Helper()
	return startServeHTTPWith(t, nil, args...)
}

// startServeHTTPWith is startServeHTTP with vars over the process's
// environment, as runCLIWith.
func startServeHTTPWith(t *testing.T, vars map[string]string, args ...string) string {
	t.Helper()
	stderr := &testenv.Buffer{}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan int, 1)
	go func() {
		e := &env{stdin: strings.NewReader(""), stdout: io.Discard, stderr: stderr, getenv: getenvWith(vars)}
		done <- runEnv(ctx, e, append([]string{"serve", "--http", "127.0.0.1:0"}, args...))
	}()
	t.Cleanup(func() { cancel(); <-done })
	var url string
	testenv.Eventually(t, config.DefaultTimeout, "serve to listen", func() bool {
		if m := testenv.URLLine.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})
	return url
}

// JSON-RPC ids come back exactly, or are refused: the SDK reads numbers
// into an int64, so a larger or fractional id would come back changed and
// match no request.
func TestServeJSONRPCIDs(t *testing.T) {
	s := startServe(t)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	for _, id := range []string{"12345678901234567890", "1.5", "9007199254740993", "1e3", "true"} {
		r := s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if code(r) != -32600 || !strings.Contains(fmt.Sprint(r["error"]), "id "+id+" must be") {
			t.Errorf("id %s: %v", id, r)
		}
	}
	for _, id := range []string{"9007199254740991", "-42", `"a-string"`} {
		r := s.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		if b, _ := json.Marshal(r["id"]); string(b) != id || r["error"] != nil {
			t.Errorf("id %s came back as %s: %v", id, b, r)
		}
	}
	// Over HTTP the same ids are refused with 400.
	url := startServeHTTP(t)
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusBadRequest || !strings.Contains(string(b), "id 1.5 must be") {
		t.Errorf("HTTP id 1.5: %d %s", resp.StatusCode, b)
	}
}
