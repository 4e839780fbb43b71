package e2e

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// serve follows its configuration file: a server added to it is started
// and its tools reach the client's list (with list_changed), one removed
// leaves it, a half-written save changes nothing and is said at WARN,
// and the client's session, and the other servers, serve on throughout.
func TestServeFollowsItsConfiguration(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	server := func(tool string) map[string]any {
		cmd, env := mcptest.Command("serve", []string{tool})
		return map[string]any{"command": cmd, "env": env, "contain": false, "timeout": testenv.Timeout(10 * time.Second).String()}
	}
	// save writes the file as an editor does: a new file renamed over the
	// old one.
	save := func(servers map[string]any) {
		t.Helper()
		b, _ := json.Marshal(map[string]any{"mcpServers": servers})
		tmp := cfg + ".tmp"
		if err := os.WriteFile(tmp, b, 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, cfg); err != nil {
			t.Fatal(err)
		}
	}
	save(map[string]any{"a": server("alpha")})

	// The servers run uncontained, so /mcp on loopback needs the token.
	const token = "live-config-token-0123456789abcdef"
	os.WriteFile(filepath.Join(dir, "token"), []byte(token+"\n"), 0o600)
	stderr := &testenv.Buffer{}
	cmd := exec.Command(toolshelf, "serve", "--config", cfg, "--http", "127.0.0.1:0", "--mode", "all", "--auth-token-file", filepath.Join(dir, "token"))
	cmd.Env = append(os.Environ(), "XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	cmd.Stderr = stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(os.Interrupt); cmd.Wait() })
	var url string
	testenv.Eventually(t, time.Minute, "serve to listen", func() bool {
		if m := testenv.URLLine.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		return url != ""
	})

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(3*time.Minute))
	defer cancel()
	changed := make(chan struct{}, 64)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "live", Version: "1"}, &mcp.ClientOptions{
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tools := func() []string {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return names
	}
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

	save(map[string]any{"b": changedB})
	testenv.Eventually(t, time.Minute, "the removed server's tool to leave", func() bool { return !has("alpha")() })
	callOK("beta")
	if !strings.Contains(stderr.String(), "removed=a") {
		t.Errorf("the log does not say what changed:\n%s", stderr.String())
	}
}
