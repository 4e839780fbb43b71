package e2e

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// TestContainedServerSeesNoHeldFile: a contained server whose
// configuration names no cwd runs in the configuration's folder without
// being given it, so that what lies there (the admin token file, mode
// 644, beside the configuration; a .env; a copy of the configuration; an
// old audit log) is not readable; and files toolshelf holds that are
// inside a folder the server is granted to read (the fleet key, an audit
// log not made yet) are covered there. A server granted such a folder to
// write is refused at start: it could plant a link where the audit log
// will be.
func TestContainedServerSeesNoHeldFile(t *testing.T) {
	needBwrap(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	// Readable by all, as a user's folders are: a server that runs as
	// nobody (toolshelf is root here) is held off by containment alone,
	// as one running as toolshelf's own user would be.
	os.Chmod(filepath.Dir(dir), 0o755)
	os.Chmod(dir, 0o755)
	grant := filepath.Join(dir, "granted")
	os.MkdirAll(grant, 0o777)
	files := map[string]string{
		"admin-token":         "admin-" + strings.Repeat("e5f6", 8) + "\n",
		".env":                "PAYMENTS_KEY=env-secret-0f1e2d3c\n",
		"servers.json.bak":    `{"mcpServers": {"x": {"env": {"KEY": "bak-secret-9a8b7c"}}}}`,
		"audit-old.jsonl":     `{"kind":"call","args":"old-audit-secret-4d5e"}` + "\n",
		"granted/fleet-key":   "Zmxla2V5LWZsZWV0LWtleS0xMjM0NTY3ODkwYWJj\n", // a secret file inside a grant
		"granted/readme.txt":  "a file the server may read",
		"granted/.keep-going": "",
	}
	for name, text := range files {
		os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644)
	}
	audit := filepath.Join(grant, "audit.jsonl") // not made yet
	cfg := map[string]any{"mcpServers": map[string]any{"hostile": map[string]any{
		"command": exe, "env": map[string]string{mcptest.ModeEnv: "hostile"},
		"timeout": testenv.Timeout(20 * time.Second).String(),
		"paths":   map[string]any{"read": []string{grant}},
	}, "planter": map[string]any{
		"command": exe, "env": map[string]string{mcptest.ModeEnv: "hostile"},
		"timeout": testenv.Timeout(20 * time.Second).String(),
		"paths":   map[string]any{"write": []string{grant}},
	}}}
	b, _ := json.Marshal(cfg)
	config := filepath.Join(dir, "servers.json")
	os.WriteFile(config, b, 0o644)
	cmd := exec.Command(toolshelf, "serve", "--config", config, "--http", "127.0.0.1:0",
		"--auth-token-file", filepath.Join(dir, "admin-token"), "--audit", audit)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir(), "TOOLSHELF_FLEET_KEY_FILE="+filepath.Join(grant, "fleet-key"))
	url := testenv.Listening(t, cmd, "the gateway", testenv.URLLine)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: &http.Client{Transport: bearer{strings.TrimSpace(files["admin-token"])}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for _, name := range []string{"admin-token", ".env", "servers.json.bak", "audit-old.jsonl", "servers.json", "granted/fleet-key"} {
		got := call(t, ctx, cs, "read", map[string]any{"path": filepath.Join(dir, name)})
		if !strings.HasPrefix(got, "refused") && strings.TrimSpace(got) != "" && !strings.Contains(got, "listed: ") {
			t.Errorf("the server read %s: %.200s", name, got)
		}
		if text := strings.TrimSpace(files[name]); text != "" && strings.Contains(got, text) {
			t.Errorf("%s's content reached the client: %.200s", name, got)
		}
	}
	if got := call(t, ctx, cs, "read", map[string]any{"path": dir}); strings.Contains(got, "admin-token") || strings.Contains(got, ".env") {
		t.Errorf("the configuration's folder is listed: %s", got)
	}
	if got := call(t, ctx, cs, "read", map[string]any{"path": filepath.Join(grant, "readme.txt")}); !strings.Contains(got, "a file the server may read") {
		t.Errorf("a granted file: %s", got)
	}
	// Where the audit log will be, the server cannot plant a link.
	if got := call(t, ctx, cs, "write", map[string]any{"path": audit, "text": "planted"}); !strings.HasPrefix(got, "refused") {
		t.Errorf("the server wrote where the audit log will be: %s", got)
	}
	// The server that may write the folder does not run, and is told why.
	health := getWith(t, strings.TrimSuffix(url, "/mcp")+"/healthz", strings.TrimSpace(files["admin-token"]))
	if !strings.Contains(health, `grants `+grant+`, which holds `) {
		t.Errorf("a write grant holding toolshelf's files was not refused:\n%.2000s", health)
	}
	if _, err := os.Lstat(audit); err == nil {
		if fi, _ := os.Lstat(audit); fi.Mode()&os.ModeSymlink != 0 {
			t.Errorf("a link was planted where the audit log is")
		}
	}
}

// getWith is the body of a GET with a bearer token.
func getWith(t testing.TB, url, token string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
