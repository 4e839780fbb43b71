package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// TestUncontainedSaid: list and doctor say which servers run uncontained
// and why, once for each reason.
func TestUncontainedSaid(t *testing.T) {
	cmd, env := mcptest.Command("serve", []string{"echo"})
	servers := map[string]any{}
	for _, name := range []string{"open1", "open2"} {
		servers[name] = map[string]any{"command": cmd, "env": env, "contain": false, "timeout": testenv.Timeout(serverTimeout).String()}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, b, 0o644)
	for _, c := range []string{"list", "doctor"} {
		r := runCLI(t, c, "--config", cfg)
		want := "  open1, open2: \"contain\": false in its configuration\n"
		if r.code != 0 || !strings.Contains(r.stdout, "Uncontained (these servers can read everything your user can") || strings.Count(r.stdout, want) != 1 {
			t.Errorf("%s: code %d\n%s%s", c, r.code, r.stdout, r.stderr)
		}
	}
}

// A gateway over HTTP on loopback without a token is open only while no
// server can reach loopback: with a server that shares the host's
// network (here uncontained), /mcp needs the admin token, which serve
// keeps in the state folder (mode 600) and uses again on the next run.
func TestLoopbackClosedWhenAServerSharesTheNetwork(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	cmd, env := mcptest.Command("serve", []string{"echo"})
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"open": map[string]any{"command": cmd, "env": env, "contain": false, "timeout": testenv.Timeout(serverTimeout).String()},
	}})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, b, 0o644)
	tokenFile := filepath.Join(state, "toolshelf", httpTokenName)
	var first string
	for run := range 2 {
		url := startServeHTTP(t, "--config", cfg)
		if code := postStatus(t, url, ""); code != 401 {
			t.Fatalf("run %d: /mcp without a token: %d, want 401", run, code)
		}
		st, err := os.Lstat(tokenFile)
		if err != nil || st.Mode().Perm() != 0o600 {
			t.Fatalf("run %d: the kept token file: %v %v", run, st, err)
		}
		token, _ := os.ReadFile(tokenFile)
		if code := postStatus(t, url, strings.TrimSpace(string(token))); code != 200 {
			t.Errorf("run %d: /mcp with the kept token: %d", run, code)
		}
		if run == 0 {
			first = string(token)
		} else if string(token) != first {
			t.Errorf("the kept token changed between runs")
		}
	}
	// A link planted where the token is kept is not followed: serve
	// refuses to start, naming the file.
	os.Remove(tokenFile)
	os.Symlink(filepath.Join(t.TempDir(), "elsewhere"), tokenFile)
	r := runCLI(t, "serve", "--config", cfg, "--http", "127.0.0.1:0")
	if r.code == 0 || !strings.Contains(r.stderr, tokenFile) {
		t.Errorf("a link where the token is kept: code %d\n%s", r.code, r.stderr)
	}
}

// postStatus is the status of an initialize request posted to url with
// token as bearer ("" for none).
func postStatus(t *testing.T, url, token string) int {
	t.Helper()
	req, _ := http.NewRequest("POST", url, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// A kept token that cannot be read as one is an error naming the file,
// never a token: a link, a FIFO (not waited on), a folder, too short, too
// long. No file is no token (one is made).
func TestKeptTokenRefusesWhatItCannotRead(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good")
	os.WriteFile(good, []byte(strings.Repeat("ab", 32)+"\n"), 0o600)
	if v, err := keptToken(good); err != nil || v != strings.Repeat("ab", 32) {
		t.Fatalf("a good token: %q %v", v, err)
	}
	if v, err := keptToken(filepath.Join(dir, "none")); err != nil || v != "" {
		t.Errorf("no file: %q %v", v, err)
	}
	link := filepath.Join(dir, "link")
	os.Symlink(good, link)
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	short := filepath.Join(dir, "short")
	os.WriteFile(short, []byte("abc\n"), 0o600)
	long := filepath.Join(dir, "long")
	os.WriteFile(long, []byte(strings.Repeat("a", maxKeptToken+1)), 0o600)
	for name, path := range map[string]string{"a link": link, "a FIFO": fifo, "a folder": dir, "too short": short, "too long": long} {
		if v, err := keptToken(path); err == nil || v != "" || !strings.Contains(err.Error(), path) {
			t.Errorf("%s: %q %v", name, v, err)
		}
	}
}

// No grant leads back to the gateway: a server granted a port of the
// host's loopback ("hostPorts") makes /mcp need a token, whatever the
// port, and serve refuses to listen on a port a server is granted.
func TestPortGrantLeadsNotToTheGateway(t *testing.T) {
	state := t.TempDir()
	t.Setenv("XDG_STATE_HOME", state)
	cmd, env := mcptest.Command("serve", []string{"echo"})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"ported": map[string]any{"command": cmd, "env": env, "network": map[string]any{"hostPorts": []int{port}}, "timeout": testenv.Timeout(serverTimeout).String()},
	}})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, b, 0o644)
	url := startServeHTTP(t, "--config", cfg)
	if code := postStatus(t, url, ""); code != 401 {
		t.Fatalf("/mcp without a token, a server granted a host port: %d, want 401", code)
	}
	r := runCLI(t, "serve", "--config", cfg, "--http", "127.0.0.1:"+strconv.Itoa(port))
	if r.code == 0 || !strings.Contains(r.stderr, "port "+strconv.Itoa(port)+" is granted to ported") {
		t.Errorf("serving on a granted port: code %d\n%s", r.code, r.stderr)
	}
}

// list and doctor say what serve says before a contained server runs: a
// folder its arguments name that it is not granted, with the exact
// "paths" line.
func TestGrantHintsSaid(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	if _, err := exec.LookPath("bwrap"); err != nil {
		t.Skip("needs bubblewrap: only a contained server is told")
	}
	cmd, env := mcptest.Command("serve", []string{"echo"})
	folder := t.TempDir()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs": map[string]any{"command": cmd, "args": []string{folder}, "env": env, "timeout": testenv.Timeout(serverTimeout).String()},
	}})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, b, 0o644)
	want := fmt.Sprintf(`its argument %s names a path the contained server is not granted, so it will not find it: add "paths": {"write": [%q]}`, folder, folder)
	for _, c := range []string{"list", "doctor"} {
		r := runCLIWith(t, vars, c, "--config", cfg)
		if !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "No warnings") {
			t.Errorf("%s: code %d\n%s%s", c, r.code, r.stdout, r.stderr)
		}
	}
}
