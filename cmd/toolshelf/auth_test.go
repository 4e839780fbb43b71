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
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/oauthtest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/signin"
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
		"type": "http", "url": as.URL, "timeout": testenv.Timeout(config.DefaultTimeout).String()}}})
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

// auth status lists each person's sign-in of a per-person server beside
// the gateway's own, and auth logout --person forgets one person's only.
func TestAuthPerPerson(t *testing.T) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {"notes": {"url": "https://notes.example.com/mcp", "signin": "per-person"}},
		"identity": {"issuer": "https://idp.example.com", "audience": "toolshelf", "clientId": "toolshelf", "clientSecret": "s"}}`), 0o644)
	tokens := filepath.Join(dir, "tokens.json")
	t.Setenv(envTokens, tokens)
	store := signin.Open(tokens)
	for _, who := range []string{"", "alice", "bob"} {
		if err := store.Put(&signin.Record{Server: "notes", Resource: "https://notes.example.com/mcp", Subject: who, AccessToken: "secret-of-" + who, RefreshToken: "r"}); err != nil {
			t.Fatal(err)
		}
	}
	r := runCLI(t, "auth", "status", "--config", cfg, "--json")
	var status []authEntry
	if err := json.Unmarshal([]byte(r.stdout), &status); err != nil {
		t.Fatalf("%v: %s", err, r.stdout)
	}
	var people []string
	for _, s := range status {
		people = append(people, s.Server+":"+s.Person+":"+s.State)
	}
	if got, want := strings.Join(people, " "), "notes::signed-in notes:alice:signed-in notes:bob:signed-in"; got != want || strings.Contains(r.stdout, "secret-of") {
		t.Errorf("auth status: %q, want %q\n%s", got, want, r.stdout)
	}
	r = runCLI(t, "auth", "status", "--config", cfg)
	if !strings.Contains(r.stdout, "PERSON") || !strings.Contains(r.stdout, "alice") || !strings.Contains(r.stdout, "(gateway)") {
		t.Errorf("auth status table:\n%s", r.stdout)
	}

	r = runCLI(t, "auth", "logout", "notes", "--person", "alice", "--config", cfg)
	if r.code != 0 || !strings.Contains(r.stdout, "Signed out of notes for alice") {
		t.Errorf("logout --person alice: %d %s %s", r.code, r.stdout, r.stderr)
	}
	recs, _ := store.List()
	var left []string
	for _, rec := range recs {
		left = append(left, rec.Subject)
	}
	if got := strings.Join(left, ","); got != ",bob" {
		t.Errorf("sign-ins left after alice's logout: %q", got)
	}
	r = runCLI(t, "auth", "logout", "notes", "--everyone", "--config", cfg)
	if recs, _ := store.List(); r.code != 0 || len(recs) != 0 {
		t.Errorf("logout --everyone: %d %s, %d sign-ins left", r.code, r.stdout, len(recs))
	}
}
