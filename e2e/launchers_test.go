package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// fakeServerJS is an MCP server over stdio in plain Node, with no
// dependencies, so that npx installs it offline: one tool.
const fakeServerJS = `#!/usr/bin/env node
const rl = require("readline").createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + "\n");
rl.on("line", (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === "initialize") {
    send({ jsonrpc: "2.0", id: m.id, result: { protocolVersion: m.params.protocolVersion, capabilities: { tools: {} }, serverInfo: { name: "fake", version: "1.0.0" } } });
  } else if (m.method === "tools/list") {
    send({ jsonrpc: "2.0", id: m.id, result: { tools: [{ name: "whoami_uid", description: "Says the user id it runs as", inputSchema: { type: "object" } }] } });
  } else {
    send({ jsonrpc: "2.0", id: m.id, error: { code: -32601, message: "no such method" } });
  }
});
`

// TestNpxServersRunContained: the most common line of all, "npx -y
// PACKAGE", runs contained, also when toolshelf is root (the server then
// runs as nobody, and npm refuses a cache root owns): each server gets a
// package cache of its own, where npx looks for one, so that npx writes
// it and no server can change what another runs. The package is a
// tarball npm packs here, installed offline.
func TestNpxServersRunContained(t *testing.T) {
	needBwrap(t)
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("needs npx")
	}
	pkg := t.TempDir()
	os.WriteFile(filepath.Join(pkg, "package.json"), []byte(`{"name": "fake-mcp-server", "version": "1.0.0", "bin": {"fake-mcp-server": "index.js"}}`), 0o644)
	os.WriteFile(filepath.Join(pkg, "index.js"), []byte(fakeServerJS), 0o755)
	pack := exec.Command("npm", "pack", "--pack-destination", pkg)
	pack.Dir = pkg
	if out, err := pack.CombinedOutput(); err != nil {
		t.Fatalf("npm pack: %v\n%s", err, out)
	}
	tgz := filepath.Join(pkg, "fake-mcp-server-1.0.0.tgz")
	server := map[string]any{"command": npx, "args": []string{"-y", "--package=" + tgz, "fake-mcp-server"},
		"env": map[string]string{"npm_config_offline": "true"}, "paths": map[string]any{"read": []string{pkg}},
		"timeout": testenv.Timeout(60 * time.Second).String()}
	dir := t.TempDir()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"one": server, "two": server}})
	cfg := filepath.Join(dir, "servers.json")
	os.WriteFile(cfg, b, 0o644)
	cache := t.TempDir()
	// The user's own npm cache, as any use of npm leaves it (root's,
	// when toolshelf is root): no server writes it, or reads another's
	// packages from it.
	home := t.TempDir()
	userCache := filepath.Join(home, ".npm", "_cacache")
	os.MkdirAll(userCache, 0o755)
	cmd := exec.Command(toolshelf, "list", "--config", cfg)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache, "HOME="+home)
	out, err := cmd.CombinedOutput()
	if err != nil || strings.Count(string(out), "whoami_uid") != 2 {
		t.Fatalf("toolshelf list: %v\n%s", err, out)
	}
	// Each server's cache is its own, and holds what npx put there.
	caches, _ := filepath.Glob(filepath.Join(cache, "toolshelf", "servers", "*", ".npm", "_npx"))
	if len(caches) != 2 {
		t.Errorf("npx caches: %v, want one for each server", caches)
	}
	if entries, _ := os.ReadDir(userCache); len(entries) > 0 {
		t.Errorf("a server wrote the user's npm cache: %v", entries)
	}
}

// TestShimmedRuntimeRunsContained: a server whose command is a version
// manager's shim (pyenv's, asdf's, mise's: ROOT/shims/NAME runs the
// manager, which runs the real program from under ROOT) runs contained:
// the manager's root is given read-only.
func TestShimmedRuntimeRunsContained(t *testing.T) {
	needBwrap(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir() // the manager's root, as ~/.pyenv
	os.Chmod(filepath.Dir(root), 0o755)
	os.Chmod(root, 0o755)
	versions := filepath.Join(root, "versions", "1.0", "bin")
	os.MkdirAll(versions, 0o755)
	os.MkdirAll(filepath.Join(root, "shims"), 0o755)
	real := copyExecutable(t, exe, versions)
	// The shim, as pyenv writes one: it runs the manager under its root.
	os.WriteFile(filepath.Join(root, "libexec-run"), []byte("#!/bin/sh\nexec \""+real+"\" \"$@\"\n"), 0o755)
	os.WriteFile(filepath.Join(root, "shims", "fakepython"), []byte("#!/bin/sh\nexec \""+filepath.Join(root, "libexec-run")+"\" \"$@\"\n"), 0o755)
	dir := t.TempDir()
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"shimmed": map[string]any{
		"command": "fakepython", "env": map[string]string{"PATH": filepath.Join(root, "shims") + ":/usr/bin:/bin", mcptest.ModeEnv: "serve", mcptest.ToolsEnv: "ping"},
		"timeout": testenv.Timeout(30 * time.Second).String()}}})
	cfg := filepath.Join(dir, "servers.json")
	os.WriteFile(cfg, b, 0o644)
	out, err := exec.Command(toolshelf, "list", "--config", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "mcp__shimmed__ping") {
		t.Fatalf("a server started through a shim: %v\n%s", err, out)
	}
}
