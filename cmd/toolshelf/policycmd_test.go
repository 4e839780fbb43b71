package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// policyConfig writes a configuration of one fixture server with tools
// write and remove, a ci profile, and the rules given.
func policyConfig(t *testing.T, rules string) string {
	t.Helper()
	dir := t.TempDir()
	cmd, env := mcptest.Command("serve", []string{"write", "remove"})
	b, _ := json.Marshal(map[string]any{
		"mcpServers": map[string]any{"files": map[string]any{"command": cmd, "env": env, "timeout": testenv.Timeout(serverTimeout).String()}},
		"profiles":   map[string]any{"ci": map[string]any{"servers": []string{"files"}}},
		"policies":   []string{"rules"},
	})
	os.Mkdir(filepath.Join(dir, "rules"), 0o755)
	os.WriteFile(filepath.Join(dir, "rules", "team.cedar"), []byte(rules), 0o644)
	cfg := filepath.Join(dir, "servers.json")
	os.WriteFile(cfg, b, 0o644)
	return cfg
}

const ciRules = `@message("ci writes only under /srv/ci")
forbid (principal == Profile::"ci", action == Action::"call", resource)
when { resource.name == "write" && !(context.args.text like "/srv/ci/*") };

@ask("Remove it?")
forbid (principal, action, resource) when { resource.name == "remove" };
`

func TestPolicyCheck(t *testing.T) {
	t.Parallel() // in-process, and sets no process variable
	cfg := policyConfig(t, ciRules)
	for _, c := range []struct {
		args []string
		code int
		out  string
	}{
		{[]string{"--profile", "ci", "--tool", "mcp__files__write", "--args", `{"text": "/etc/passwd"}`}, 1, "FORBID: mcp__files__write\n  by " + filepath.Join(filepath.Dir(cfg), "rules", "team.cedar") + ":1\n  ci writes only under /srv/ci\n"},
		{[]string{"--profile", "ci", "--tool", "mcp__files__write", "--args", `{"text": "/srv/ci/out"}`}, 0, "PERMIT: mcp__files__write\n"},
		{[]string{"--tool", "mcp__files__write", "--args", `{"text": "/etc/passwd"}`}, 0, "PERMIT"},
		{[]string{"--tool", "mcp__files__remove"}, 3, "ASK: mcp__files__remove"},
		// What the call path would refuse or rename, policy check says the
		// same of: two keys one server reads as one, a declared key in
		// another case.
		{[]string{"--profile", "ci", "--tool", "mcp__files__write", "--args", `{"text": "/srv/ci/out", "TEXT": "/etc/passwd"}`}, 1, "FORBID: mcp__files__write\n  by the arguments' one form\n  the arguments are refused: the keys \"text\" and \"TEXT\""},
		{[]string{"--profile", "ci", "--tool", "mcp__files__write", "--args", `{"TEXT": "/etc/passwd"}`}, 1, "ci writes only under /srv/ci"},
	} {
		r := runCLI(t, append([]string{"policy", "check", "--config", cfg}, c.args...)...)
		if r.code != c.code || !strings.Contains(r.stdout, c.out) {
			t.Errorf("%v: code %d\n%s%s\nwant %d and %q", c.args, r.code, r.stdout, r.stderr, c.code, c.out)
		}
	}
	// The rules' warnings are said beside the verdict: the README's rule
	// compares a raw argument with a path.
	if r := runCLI(t, "policy", "check", "--config", cfg, "--profile", "ci", "--tool", "mcp__files__write", "--args", `{"text": "/srv/ci/out"}`); !strings.Contains(r.stderr, "toolshelf: warning:") || !strings.Contains(r.stderr, "context.clean") {
		t.Errorf("policy check said no warning of the rules:\n%s", r.stderr)
	}
	if r := runCLI(t, "policy", "check", "--config", cfg, "--tool", "mcp__files__nope"); r.code != 2 || !strings.Contains(r.stderr, "unknown tool") {
		t.Errorf("an unknown tool: %d %s", r.code, r.stderr)
	}
	// A tool the profile's filter hides is refused by the filter (exit
	// 1, the reason named), not unknown.
	hidden := policyConfig(t, ciRules)
	b, _ := os.ReadFile(hidden)
	os.WriteFile(hidden, []byte(strings.Replace(string(b), `"servers":["files"]`, `"servers":["files"],"tools":{"deny":["mcp__files__rem*"]}`, 1)), 0o644)
	if r := runCLI(t, "policy", "check", "--config", hidden, "--profile", "ci", "--tool", "mcp__files__remove"); r.code != 1 ||
		!strings.Contains(r.stdout, `FORBID: mcp__files__remove`) || !strings.Contains(r.stdout, `deny pattern "mcp__files__rem*"`) {
		t.Errorf("a tool the profile denies: %d %s%s", r.code, r.stdout, r.stderr)
	}
	bad := policyConfig(t, "forbid (principal, action, resource)\nwhen { resource.name == };\n")
	if r := runCLI(t, "list", "--config", bad); r.code != 2 || !strings.Contains(r.stderr, "team.cedar:2:") {
		t.Errorf("a bad rules file: %d %s", r.code, r.stderr)
	}
}
