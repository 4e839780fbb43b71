package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/oauthtest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/upstream"
)

// A remote server behind OAuth, end to end: before sign-in it is
// needs-auth with the command to run; auth login completes headlessly;
// serve then searches and calls its tool, refreshing the token when the
// server stops taking it; auth logout forgets it.
func TestAuthEndToEnd(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "test"}, nil)
	srv.AddTool(&mcp.Tool{Name: "read_secret_note", Description: "Read the secret note", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "behind sign-in"}}}, nil
		})
	as := oauthtest.New(t, srv)

	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"remote": map[string]any{
		"type": "http", "url": as.URL, "timeout": testenv.Timeout(upstream.DefaultTimeout).String()}}})
	os.WriteFile(cfg, data, 0o644)
	tokens := filepath.Join(dir, "tokens.json")
	t.Setenv(envTokens, tokens)
	t.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache"))
	// The "browser" is this test binary, following the URL headlessly.
	exe, _ := os.Executable()
	browser := filepath.Join(dir, "browser")
	testenv.WriteScript(t, browser, fmt.Sprintf("#!/bin/sh\n%s=browse exec %q \"$@\"\n", mcptest.ModeEnv, exe))
	t.Setenv("BROWSER", browser)

	r := runCLI(t, "list", "--config", cfg, "--json")
	if r.code == 0 || !strings.Contains(r.stdout, `"needs-auth"`) || !strings.Contains(r.stdout, "toolshelf auth login remote") {
		t.Fatalf("list before sign-in: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}

	r = runCLI(t, "auth", "login", "remote", "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "Signed in to remote") || !strings.Contains(r.stderr, as.AS.URL+"/authorize?") {
		t.Fatalf("auth login: code %d\n%s\n%s", r.code, r.stdout, r.stderr)
	}
	r = runCLI(t, "auth", "status", "--config", cfg, "--json")
	var status []authEntry
	if json.Unmarshal([]byte(r.stdout), &status); len(status) != 1 || status[0].State != "signed-in" || !status[0].Refreshing || strings.Contains(r.stdout, "access-") {
		t.Errorf("auth status: %s", r.stdout)
	}

	s := startServe(t, "--config", cfg)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	found := resultText(s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"read the secret note"}}}`))
	if !strings.Contains(found, "mcp__remote__read_secret_note") {
		t.Fatalf("search_tools: %s", found)
	}
	callTool := `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__remote__read_secret_note"}}}`
	if got := resultText(s.send(fmt.Sprintf(callTool, 3))); got != "behind sign-in" {
		t.Fatalf("call_tool: %s", got)
	}
	as.Expire()
	if got := resultText(s.send(fmt.Sprintf(callTool, 4))); got != "behind sign-in" {
		t.Fatalf("call_tool after the token expired: %s", got)
	}
	if as.Refreshs != 1 {
		t.Errorf("%d refreshes, want 1", as.Refreshs)
	}
	s.hangUp()

	r = runCLI(t, "auth", "logout", "remote")
	if r.code != 0 || !strings.Contains(r.stdout, "Signed out of remote") {
		t.Errorf("auth logout: %s %s", r.stdout, r.stderr)
	}
	r = runCLI(t, "auth", "status", "--config", cfg)
	if !strings.Contains(r.stdout, "not-signed-in") {
		t.Errorf("auth status after logout: %s", r.stdout)
	}
	if b, _ := os.ReadFile(tokens); strings.Contains(string(b), "access-") {
		t.Errorf("a token is still in the file: %s", b)
	}

	// Signed out, the server's tools are still found (from the cache),
	// and calling one says how to sign in.
	s = startServe(t, "--config", cfg)
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if found := resultText(s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"read the secret note"}}}`)); !strings.Contains(found, "mcp__remote__read_secret_note") {
		t.Errorf("search_tools after logout: %s", found)
	}
	if got := resultText(s.send(fmt.Sprintf(callTool, 5))); !strings.Contains(got, "toolshelf auth login remote") {
		t.Errorf("call_tool after logout: %s", got)
	}
	s.hangUp()
}
