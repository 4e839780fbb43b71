package testenv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// ServeScript writes an executable that runs exe as 'toolshelf serve
// --config cfg' with flags (and the script's own arguments), with env and
// folders of its own for the cache, configuration, state and a memory
// server's file. Clients start it as their stdio server; a script is
// needed because they pass on only a few environment variables of their
// own.
func ServeScript(t testing.TB, exe string, env map[string]string, cfg string, flags ...string) string {
	t.Helper()
	dir := t.TempDir()
	memory := WritableDir(t)
	all := map[string]string{
		"MEMORY_FILE":     filepath.Join(memory, "memory.jsonl"),
		"MEMORY_DIR":      memory,
		"XDG_CACHE_HOME":  filepath.Join(dir, "cache"),
		"XDG_CONFIG_HOME": filepath.Join(dir, "config"),
		"XDG_STATE_HOME":  filepath.Join(dir, "state"),
		"PATH":            os.Getenv("PATH"),
	}
	for k, v := range env {
		all[k] = v
	}
	var b strings.Builder
	b.WriteString("#!/bin/sh\n")
	for k, v := range all {
		fmt.Fprintf(&b, "export %s=%q\n", k, v)
	}
	fmt.Fprintf(&b, "exec %q serve --config %q", exe, cfg)
	for _, f := range flags {
		fmt.Fprintf(&b, " %q", f)
	}
	b.WriteString(` "$@"` + "\n")
	script := filepath.Join(dir, "toolshelf-serve")
	WriteScript(t, script, b.String())
	return script
}

// WritableDir returns a new folder a contained server may write to when
// it is granted it ("paths": {"write": [...]}): when toolshelf runs as
// root, a contained server runs as nobody, which may write only where
// everyone may.
func WritableDir(t testing.TB) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "writable")
	if err := os.Mkdir(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o777); err != nil { // past the umask
		t.Fatal(err)
	}
	return dir
}

// WriteScript writes an executable file. No process is forked while it is
// open for writing: a child forked then (by a parallel test) would hold
// the descriptor until it execs, and running the script meanwhile fails
// with "text file busy" (seen under load). Forks take syscall.ForkLock
// for writing.
func WriteScript(t testing.TB, path, content string) {
	t.Helper()
	syscall.ForkLock.RLock()
	err := os.WriteFile(path, []byte(content), 0o755)
	syscall.ForkLock.RUnlock()
	if err != nil {
		t.Fatal(err)
	}
}

// URLLine finds the /mcp URL in serve's start-up log.
var URLLine = regexp.MustCompile(`url=(http://\S+/mcp)`)

// RunHTTPScript runs a gateway script that serves HTTP, stops it with
// SIGINT when the test ends, and returns its /mcp URL.
func RunHTTPScript(t testing.TB, script string) string {
	t.Helper()
	return Listening(t, exec.Command(script), "the gateway", URLLine)
}

// Listening starts cmd, a toolshelf process that logs the URL it serves
// on stderr, stops it with SIGINT when the test ends, and returns the
// first match of line's group in its log. what names the process in
// failures.
func Listening(t testing.TB, cmd *exec.Cmd, what string, line *regexp.Regexp) string {
	t.Helper()
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(Timeout(10 * time.Second)):
			cmd.Process.Kill()
			t.Errorf("%s did not stop on SIGINT", what)
		}
	})
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() {
			if m := line.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
	}()
	select {
	case u := <-found:
		return u
	case <-time.After(Timeout(20 * time.Second)):
		t.Fatalf("timed out waiting for %s to listen", what)
	}
	return ""
}

// Node runs a Node program in dir and returns its output.
func Node(t testing.TB, dir, node string, args ...string) (string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), Timeout(2*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, node, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ctx.Err() == context.DeadlineExceeded {
		return string(out), fmt.Errorf("timed out after %v: %s %v", Timeout(2*time.Minute), node, args)
	}
	return string(out), err
}

// ScaledConfig writes a copy of the configuration file src, keeping only
// the named servers (all when none are named), with relative folders made
// absolute and each server's start timeout set to start scaled for this
// machine.
func ScaledConfig(t testing.TB, src string, start time.Duration, names ...string) string {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatal(err)
	}
	for name, srv := range cfg.MCPServers {
		if len(names) > 0 && !slices.Contains(names, name) {
			delete(cfg.MCPServers, name)
			continue
		}
		if cwd, ok := srv["cwd"].(string); ok && !filepath.IsAbs(cwd) {
			srv["cwd"] = filepath.Join(filepath.Dir(src), cwd)
		}
		srv["timeout"] = Timeout(start).String()
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), filepath.Base(src))
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// PostMCP posts one JSON-RPC message to an MCP endpoint over streamable
// HTTP, on a session (none when session is ""), with a bearer token when
// token is set, and returns the answer's status, body and session id.
func PostMCP(ctx context.Context, url, token, session string, msg []byte) (int, string, string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(msg))
	if err != nil {
		return 0, "", "", err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
		req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(body), resp.Header.Get("Mcp-Session-Id"), err
}

// PeakRSS is the process's peak resident memory (Linux), or "unknown".
func PeakRSS() string {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return "unknown"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "unknown"
}
