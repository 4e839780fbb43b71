package main

import (
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/internal/mcptest"
)

// Secrets planted in a configuration (an env value expanded from a
// variable, a URL's password and query, a header) and printed by a
// failing server on its stderr appear in no output of any command, nor
// in the logs, nor on /healthz.
func TestNoSecretInAnyOutput(t *testing.T) {
	planted := map[string]string{
		"env":    "plantedEnvToken1",
		"url":    "plantedUrlPass1",
		"query":  "plantedQueryKey1",
		"header": "plantedHeaderTok1",
		"shape":  "ghp_plantedPlantedPlanted0123",
	}
	t.Parallel()
	vars := ownFolders(t)
	vars["PLANTED_TOKEN"] = planted["env"]
	command, env := mcptest.Command("leak", nil)
	env["LEAK_TOKEN"] = "${PLANTED_TOKEN}"
	env["LEAK_URL"] = "https://bot:" + planted["url"] + "@api.example/v1?key=" + planted["query"] + " " + planted["shape"]
	cfg := map[string]any{"mcpServers": map[string]any{
		"leaky": map[string]any{"command": command, "env": env},
		"good":  map[string]any{"command": command, "env": map[string]string{mcptest.ModeEnv: "serve", mcptest.ToolsEnv: "echo"}},
		"remote": map[string]any{"url": "http://admin:" + planted["url"] + "@127.0.0.1:1/mcp?token=" + planted["query"],
			"headers": map[string]string{"Authorization": "Bearer " + planted["header"]}, "timeout": "2s"},
	}}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}

	var outputs []string
	for _, args := range [][]string{
		{"list", "--config", path},
		{"list", "--config", path, "--json"},
		{"doctor", "--config", path},
		{"doctor", "--config", path, "--json"},
		{"search", "--config", path, "echo"},
		{"catalog", "export", "--config", path},
	} {
		r := runCLIWith(t, vars, args...)
		outputs = append(outputs, strings.Join(args, " ")+"\n"+r.stdout+r.stderr)
	}
	s := startServeWith(t, vars, "--config", path, "--log-level", "debug")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r := s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__leaky__anything"}}}`)
	rb, _ := json.Marshal(r)
	outputs = append(outputs, "serve call_tool\n"+string(rb))
	url := startServeHTTPWith(t, vars, "--config", path, "--auth-token", "tok-for-healthz")
	base := strings.TrimSuffix(url, "/mcp")
	outputs = append(outputs, "healthz\n"+httpGet(t, base+"/healthz", "Bearer tok-for-healthz"))
	outputs = append(outputs, "serve logs\n"+s.stderr.String())

	sawLeak := false
	for _, out := range outputs {
		sawLeak = sawLeak || strings.Contains(out, "cannot log in with")
		for what, secret := range planted {
			if strings.Contains(out, secret) {
				t.Errorf("the %s secret appears in the output of %s", what, out)
			}
		}
	}
	if !sawLeak {
		t.Error("no output carried the failing server's stderr, so the test checked nothing")
	}
}

// httpGet returns the body of a GET, with an Authorization header when
// auth is set.
func httpGet(t *testing.T, url, auth string) string {
	t.Helper()
	req, _ := http.NewRequest("GET", url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
