package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// TestSignInThroughTypeScriptSDK: the official TypeScript SDK client
// meets a gateway whose profile people open with the team's identity
// provider (a real oidc-provider). From the gateway's 401 it finds the
// provider, registers a client there, and sends the person's browser
// (Debian's chromium, headless) through the provider's own login and
// consent pages; with the token it searches and calls, and the audit
// record names the person.
func TestSignInThroughTypeScriptSDK(t *testing.T) {
	t.Parallel()
	chrome := testenv.Chromium(t)
	requireClients(t)
	idp := testenv.StartIDP(t, nil)
	dir := t.TempDir()
	memory, _ := filepath.Abs("../testdata/servers/node_modules/@modelcontextprotocol/server-memory/dist/index.js")
	cfg := map[string]any{
		"mcpServers": map[string]any{"memory": map[string]any{
			"command": "node", "args": []string{memory},
			"env":     map[string]string{"MEMORY_FILE_PATH": filepath.Join(testenv.WritableDir(t), "memory.jsonl")},
			"timeout": testenv.Timeout(30 * time.Second).String(),
		}},
		"identity": map[string]any{"issuer": idp.Issuer, "audience": "toolshelf", "scopes": []string{"mcp"}},
		"profiles": map[string]any{"ops": map[string]any{"servers": []string{"memory"}, "claims": map[string]any{"groups": []string{"sre"}}}},
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(dir, "servers.json")
	os.WriteFile(path, b, 0o644)
	auditFile := filepath.Join(dir, "audit.jsonl")
	url := testenv.RunHTTPScript(t, gatewayScript(t, path, "--http", "127.0.0.1:0", "--audit", auditFile)) + "/ops"

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	node22, _ := filepath.Abs(filepath.Join(clientsDir, "node_modules", "node", "bin", "node"))
	cmd := exec.CommandContext(ctx, node22, "signin-client.mjs", url, "read the whole knowledge graph", "mcp__memory__read_graph", "{}")
	cmd.Dir = clientsDir
	var stderr testenv.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := bufio.NewScanner(stdout)
	var authorize string
	for lines.Scan() {
		if u, ok := strings.CutPrefix(lines.Text(), "AUTHORIZE "); ok {
			authorize = u
			break
		}
	}
	if !strings.HasPrefix(authorize, idp.Issuer) {
		cmd.Wait()
		t.Fatalf("the client was not sent to the provider: %q\n%s", authorize, stderr.String())
	}

	// The person, in a browser: the provider's login, then its consent.
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox)
	alloc, stopAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer stopAlloc()
	browser, stopBrowser := chromedp.NewContext(alloc)
	defer stopBrowser()
	if err := chromedp.Do(browser,
		chromedp.Navigate(authorize),
		chromedp.WaitVisible(`input[name=login]`),
		chromedp.SendKeys(`input[name=login]`, "alice"),
		chromedp.SendKeys(`input[name=password]`, "any password"),
		chromedp.Submit(`input[name=login]`),
		// The login page has a submit button too: the consent page is
		// the one after the login form is gone.
		chromedp.WaitNotPresent(`input[name=login]`),
		chromedp.WaitVisible(`button[type=submit]`),
		chromedp.Click(`button[type=submit]`),
		chromedp.WaitVisible(`#done`),
	); err != nil {
		t.Fatalf("signing alice in at the provider: %v\n%s", err, stderr.String())
	}

	var out struct {
		Found, Text string
		IsError     bool
	}
	for lines.Scan() {
		if json.Unmarshal(lines.Bytes(), &out) == nil && out.Found != "" {
			break
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("signin-client: %v\n%s", err, stderr.String())
	}
	if !strings.Contains(out.Found, "mcp__memory__read_graph") || out.IsError || !strings.Contains(out.Text, "entities") {
		t.Fatalf("after signing in: %+v\n%s", out, stderr.String())
	}
	testenv.Eventually(t, 30*time.Second, "the audit record of alice's call", func() bool {
		recs, _, _ := audit.Read(auditFile, time.Time{})
		for _, r := range recs {
			if r.Kind == "call" && r.Tool == "mcp__memory__read_graph" && r.Subject == "alice" && r.Email == "alice@example.com" && r.Profile == "ops" {
				return true
			}
		}
		return false
	})
}
