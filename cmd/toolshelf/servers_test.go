package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// fakeConfig writes a configuration of subprocess test servers: name →
// mode and tools.
func fakeConfig(t *testing.T, servers map[string][2]string) string {
	t.Helper()
	m := map[string]any{}
	for name, spec := range servers {
		cmd, env := mcptest.Command(spec[0], strings.Split(spec[1], ","))
		// The start timeout scales with the machine's load: a test binary
		// built with -race starts slowly on a busy machine.
		m[name] = map[string]any{"command": cmd, "env": env, "timeout": testenv.Timeout(serverTimeout).String()}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": m})
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestList(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	cfg := fakeConfig(t, map[string][2]string{
		"tracker": {"serve", "create_issue,list_issues"},
		"broken":  {"exit", ""},
	})
	r := runCLIWith(t, vars, "list", "--config", cfg, "--json")
	if r.code != 1 || !strings.Contains(r.stderr, "1 of 2 servers failed: [broken]") {
		t.Fatalf("code %d, stderr %q", r.code, r.stderr)
	}
	var rep listReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil {
		t.Fatalf("list --json: %v\n%s", err, r.stdout)
	}
	if len(rep.Servers) != 2 || rep.Tools != 2 || rep.Tokens <= 0 || rep.Chars <= rep.Tokens {
		t.Fatalf("report: %+v", rep)
	}
	broken, tracker := rep.Servers[0], rep.Servers[1]
	if broken.State != "failed" || !strings.Contains(broken.Error, "API token is not valid") {
		t.Errorf("broken: %+v", broken)
	}
	var names []string
	for _, tc := range tracker.Entries {
		names = append(names, tc.Name)
		if tc.Tokens <= 0 || tc.Chars <= 0 {
			t.Errorf("%s has no cost: %+v", tc.Name, tc)
		}
	}
	if diff := cmp.Diff([]string{"mcp__tracker__create_issue", "mcp__tracker__list_issues"}, names); diff != "" {
		t.Errorf("tools (-want +got):\n%s", diff)
	}
	if tracker.State != "ready" || tracker.ProtocolVersion == "" {
		t.Errorf("tracker: %+v", tracker.Status)
	}

	r = runCLIWith(t, vars, "list", "--config", cfg)
	for _, want := range []string{"SERVER", "TOKENS", "tracker", "mcp__tracker__create_issue", "error: ", "API token is not valid"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plain list lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestListErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	os.WriteFile(bad, []byte("{\"mcpServers\": {\n  \"a\": {\"comand\": \"x\"}}}"), 0o644)
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"list", "--config", bad}, bad + `:2: server "a": unknown key "comand" (did you mean "command"?)`},
		{[]string{"list", "--config", "nope.json"}, "nope.json: no such file"},
		{[]string{"list", "extra"}, "unexpected arguments"},
		{[]string{"catalog", "import"}, "want 'toolshelf catalog export'"},
		{[]string{"catalog"}, "catalog needs a command: 'toolshelf catalog export"},
	} {
		r := runCLI(t, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%v: code %d, stderr %q, want 2 and %q", tt.args, r.code, r.stderr, tt.stderr)
		}
	}
}

// The built-in catalog stands in when nothing is configured.
func TestListBuiltin(t *testing.T) {
	r := runCLI(t, "list", "--json")
	var rep listReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("code %d: %v\n%s", r.code, err, r.stderr)
	}
	if rep.Source != "the built-in catalog" || len(rep.Servers) != 20 || rep.Tools < 500 {
		t.Errorf("report: source %q, %d servers, %d tools", rep.Source, len(rep.Servers), rep.Tools)
	}
}

// Without a configuration, export writes the built-in catalog, as the
// other commands use it.
func TestCatalogExportBuiltin(t *testing.T) {
	r := runCLI(t, "catalog", "export")
	if r.code != 0 || !strings.Contains(r.stderr, "exporting the built-in catalog (519 tools of 20 servers)") {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	c, err := catalog.Decode(strings.NewReader(r.stdout))
	if err != nil || c.Version() != builtin.Catalog().Version() {
		t.Errorf("the export is not the built-in catalog: %v", err)
	}
}

func TestCatalogExport(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	cfg := fakeConfig(t, map[string][2]string{"docs": {"serve", "search_docs,fetch_page"}})
	r := runCLIWith(t, vars, "catalog", "export", "--config", cfg)
	if r.code != 0 {
		t.Fatalf("export: %d %s", r.code, r.stderr)
	}
	file := filepath.Join(t.TempDir(), "catalog.json")
	os.WriteFile(file, []byte(r.stdout), 0o644)
	r = runCLIWith(t, vars, "search", "--catalog", file, "fetch", "page")
	if r.code != 0 || !strings.HasPrefix(strings.TrimSpace(r.stdout), "1  mcp__docs__fetch_page") {
		t.Errorf("search of the export: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The server's protocol version and instructions are in the file.
	if !strings.Contains(string(mustRead(t, file)), `"instructions": "A scripted test server."`) {
		t.Error("export lost the server's instructions")
	}
}

func mustRead(t *testing.T, file string) []byte {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestImport(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		os.WriteFile(p, []byte(body), 0o644)
		return p
	}
	desktop := write("claude_desktop_config.json", `{"globalShortcut": "x", "mcpServers": {
		"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"], "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x"}}}}`)
	vscode := write("mcp.json", `{"inputs": [{"type": "promptString", "id": "api-key", "password": true}],
		"servers": {"fs": {"type": "stdio", "command": "node", "args": ["${workspaceFolder}/srv.js"], "env": {"KEY": "${input:api-key}", "HOME2": "${env:HOME}"}, "envFile": ".env"},
		            "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${input:token}"}}}}`)
	cursor := write("cursor.json", `{"mcpServers": {"r": {"url": "http://127.0.0.1:9/sse", "type": "sse"}}}`)
	cwd, _ := os.Getwd()
	tests := []struct {
		client, file string
		want         map[string]any
		stderr       string
	}{
		{"claude-desktop", desktop, map[string]any{"github": map[string]any{
			"command": "npx", "args": []any{"-y", "@modelcontextprotocol/server-github"}, "env": map[string]any{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_x"}}}, "1 servers from"},
		{"vscode", vscode, map[string]any{
			"fs":     map[string]any{"type": "stdio", "command": "node", "args": []any{cwd + "/srv.js"}, "env": map[string]any{"KEY": "${API_KEY}", "HOME2": "${HOME}"}},
			"remote": map[string]any{"type": "http", "url": "https://example.com/mcp", "headers": map[string]any{"Authorization": "Bearer ${TOKEN}"}},
		}, `fs: dropped "envFile"`},
		{"cursor", cursor, map[string]any{"r": map[string]any{"url": "http://127.0.0.1:9/sse", "type": "sse"}}, ""},
	}
	for _, tt := range tests {
		r := runCLI(t, "import", tt.client, "--from", tt.file)
		if r.code != 0 || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%s: code %d stderr %q", tt.client, r.code, r.stderr)
			continue
		}
		var got struct {
			MCPServers map[string]any `json:"mcpServers"`
		}
		if err := json.Unmarshal([]byte(r.stdout), &got); err != nil {
			t.Fatalf("%s: %v", tt.client, err)
		}
		if diff := cmp.Diff(tt.want, got.MCPServers); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.client, diff)
		}
		// What import writes, list reads.
		cfg := write(tt.client+".out.json", r.stdout)
		if r := runCLI(t, "help", "list"); r.code != 0 {
			t.Fatal(r.stderr)
		}
		if _, err := loadConfig(&env{getenv: func(string) string { return "x" }}, cfg); err != nil {
			t.Errorf("%s: the import does not load: %v", tt.client, err)
		}
	}
	for _, tt := range []struct {
		args   []string
		stderr string
	}{
		{[]string{"import", "claude"}, `unknown client "claude"`},
		{[]string{"import"}, "name one client"},
		{[]string{"import", "cursor", "--from", vscode}, `no "mcpServers" object`},
		{[]string{"import", "vscode", "--from", desktop}, `no "servers" object`},
		{[]string{"import", "cursor", "--from", filepath.Join(dir, "none.json")}, "no such file"},
	} {
		r := runCLI(t, tt.args...)
		if r.code != 2 || !strings.Contains(r.stderr, tt.stderr) {
			t.Errorf("%v: code %d stderr %q, want %q", tt.args, r.code, r.stderr, tt.stderr)
		}
	}
}

// list in front of real npm servers: each ready, with the tools the
// built-in catalog has of it. Five servers of the twenty, of every kind
// (a reference server, a large one, ones that need no network); all
// twenty are started once, by internal/builtin's TestMatchesLiveServers.
func TestListRealServers(t *testing.T) {
	t.Parallel() // waits on processes of its own
	testenv.RequireNPM(t, "testdata/servers")
	names := []string{"everything", "memory", "filesystem", "github", "notion"}
	r := runCLI(t, "list", "--config", realServersConfig(t, names...), "--json")
	var rep listReport
	if err := json.Unmarshal([]byte(r.stdout), &rep); err != nil || r.code != 0 {
		t.Fatalf("code %d: %v\n%s", r.code, err, r.stderr)
	}
	for _, s := range rep.Servers {
		want := 0
		for e := range builtin.Catalog().All() {
			if e.Server == s.Name {
				want++
			}
		}
		if s.State != "ready" || s.Tools != want {
			t.Errorf("%s: %s with %d tools (want ready with %d) %s", s.Name, s.State, s.Tools, want, s.Error)
		}
	}
	if len(rep.Servers) != len(names) {
		t.Errorf("%d servers, want %d", len(rep.Servers), len(names))
	}
}

// realServersConfig writes a copy of examples/servers.json, the pinned npm
// servers, keeping only the named ones (all when none are named).
func realServersConfig(t *testing.T, names ...string) string {
	t.Helper()
	return scaledConfig(t, filepath.Join(testenv.Root(t), "examples", "servers.json"), names...)
}

// scaledConfig writes a copy of the configuration file src, keeping only
// the named servers (all when none are named), with relative folders made
// absolute and each server's start timeout the product default scaled for
// this machine (testenv).
func scaledConfig(t *testing.T, src string, names ...string) string {
	return testenv.ScaledConfig(t, src, config.DefaultTimeout, names...)
}

// Claude Code's settings are found in $CLAUDE_CONFIG_DIR, and the
// client's entry for toolshelf itself is not imported.
func TestImportClaudeConfigDir(t *testing.T) {
	dir := t.TempDir()
	os.WriteFile(filepath.Join(dir, ".claude.json"), []byte(`{"mcpServers": {
		"memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
		"toolshelf": {"command": "/usr/local/bin/toolshelf", "args": ["serve"]},
		"shelf-npx": {"command": "npx", "args": ["-y", "toolshelf@latest", "serve"]}}}`), 0o644)
	t.Setenv("CLAUDE_CONFIG_DIR", dir)
	r := runCLI(t, "import", "claude-code")
	var got struct {
		MCPServers map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &got); err != nil || r.code != 0 {
		t.Fatalf("code %d: %v\n%s", r.code, err, r.stderr)
	}
	if len(got.MCPServers) != 1 || got.MCPServers["memory"] == nil {
		t.Errorf("imported %v, want memory alone", got.MCPServers)
	}
	for _, name := range []string{"toolshelf", "shelf-npx"} {
		if !strings.Contains(r.stderr, `skipped "`+name+`": it is toolshelf itself`) {
			t.Errorf("stderr does not say %s was skipped: %s", name, r.stderr)
		}
	}
}
