package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/telemetry"
)

// Tokens of the profiles in profilesConfig.
const (
	opsToken      = "ops-0123456789abcdef0123456789abcdef"
	readonlyToken = "ro-0123456789abcdef0123456789abcdef"
	adminToken    = "admin-0123456789abcdef0123456789"
)

// profilesConfig has two servers and two profiles: ops (the tracker's
// tools) and readonly (the list and read tools of both, with files' read
// listed directly).
func profilesConfig(t *testing.T) string {
	t.Helper()
	servers := map[string]any{}
	for name, tools := range map[string][]string{"tracker": {"create_issue", "list_issues"}, "files": {"read", "write"}} {
		cmd, env := mcptest.Command("serve", tools)
		servers[name] = map[string]any{"command": cmd, "env": env, "timeout": testenv.Timeout(serverTimeout).String()}
	}
	cfg := map[string]any{
		"mcpServers": servers,
		"profiles": map[string]any{
			"ops": map[string]any{"servers": []string{"tracker"}, "tokens": []string{opsToken}},
			"readonly": map[string]any{
				"servers": []string{"tracker", "files"},
				"tools":   map[string]any{"allow": []string{"*__list_*", "*__read"}},
				"load":    []string{"mcp__files__read"},
				"tokens":  []string{"${READONLY_TOKEN}"},
			},
		},
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

type profileRun struct {
	Refused string
	Listed  []string
	Found   []string
	Calls   map[string]struct {
		Error bool
		Text  string
	}
}

// probe runs the TypeScript SDK client against one profile's URL.
func probe(t *testing.T, url, token, query string, tools ...string) profileRun {
	t.Helper()
	out, err := node(t, "node", append([]string{"profile-client.mjs", url, token, query}, tools...)...)
	if err != nil {
		t.Fatalf("profile client: %v\n%s", err, out)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var r profileRun
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("profile client output: %v\n%s", err, out)
	}
	return r
}

// Two profiles over HTTP, each used by a real client (the TypeScript
// SDK): each sees and finds only its tools, a call by exact name to a
// tool outside it fails, and a token opens its own profile only.
func TestProfilesOverHTTP(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	script := gatewayScript(t, profilesConfig(t), "--http", "127.0.0.1:0", "--auth-token", adminToken, "--audit", auditFile)
	// The readonly profile's token comes from the environment.
	data, _ := os.ReadFile(script)
	testenv.WriteScript(t, script, strings.Replace(string(data), "exec ", "export READONLY_TOKEN="+readonlyToken+"\nexec ", 1))
	url := runHTTPScript(t, script)

	ops := probe(t, url+"/ops", opsToken, "issue", "mcp__tracker__create_issue", "mcp__files__read")
	if ops.Refused != "" {
		t.Fatalf("ops refused: %s", ops.Refused)
	}
	if want := []string{"call_tool", "search_tools"}; !slices.Equal(ops.Listed, want) {
		t.Errorf("ops lists %v, want %v", ops.Listed, want)
	}
	if want := []string{"mcp__tracker__create_issue", "mcp__tracker__list_issues"}; !slices.Equal(ops.Found, want) {
		t.Errorf("ops finds %v, want %v", ops.Found, want)
	}
	if c := ops.Calls["mcp__tracker__create_issue"]; c.Error || !strings.Contains(c.Text, `"tool":"create_issue"`) {
		t.Errorf("ops calling its tool: %+v", c)
	}
	if c := ops.Calls["mcp__files__read"]; !c.Error || strings.Contains(c.Text, `"tool":"read"`) {
		t.Errorf("ops called a tool outside its profile: %+v", c)
	}

	ro := probe(t, url+"/readonly", readonlyToken, "issue file", "mcp__files__read", "mcp__tracker__create_issue", "mcp__files__write")
	if ro.Refused != "" {
		t.Fatalf("readonly refused: %s", ro.Refused)
	}
	if want := []string{"call_tool", "mcp__files__read", "search_tools"}; !slices.Equal(ro.Listed, want) {
		t.Errorf("readonly lists %v, want %v (its load tool beside the meta tools)", ro.Listed, want)
	}
	for _, name := range ro.Found {
		if name != "mcp__tracker__list_issues" && name != "mcp__files__read" {
			t.Errorf("readonly finds %s, outside its profile", name)
		}
	}
	if c := ro.Calls["mcp__files__read"]; c.Error {
		t.Errorf("readonly calling its tool: %+v", c)
	}
	for _, name := range []string{"mcp__tracker__create_issue", "mcp__files__write"} {
		if c := ro.Calls[name]; !c.Error {
			t.Errorf("readonly called %s, outside its profile: %+v", name, c)
		}
	}

	// A token opens its own profile and no other; the admin token opens
	// everything at /mcp.
	if r := probe(t, url+"/readonly", opsToken, "issue"); !strings.Contains(r.Refused, "403") {
		t.Errorf("the ops token on readonly: %+v", r)
	}
	if r := probe(t, url+"/ops", "", "issue"); !strings.Contains(r.Refused, "401") {
		t.Errorf("no token on ops: %+v", r)
	}
	if r := probe(t, url, readonlyToken, "issue"); !strings.Contains(r.Refused, "403") {
		t.Errorf("the readonly token on everything: %+v", r)
	}
	all := probe(t, url, adminToken, "issue file", "mcp__files__write")
	if c := all.Calls["mcp__files__write"]; c.Error {
		t.Errorf("everything with the admin token: %+v", all)
	}

	// Metrics carry the profile.
	metrics := httpGet(t, strings.TrimSuffix(url, "/mcp")+"/metrics", "Bearer "+adminToken)
	// So does the audit log.
	testenv.Eventually(t, time.Minute, "the audit log to hold the ops call", func() bool {
		recs, _, err := audit.Read(auditFile, time.Time{})
		return err == nil && slices.ContainsFunc(recs, func(r audit.Record) bool {
			return r.Profile == "ops" && r.Tool == "mcp__tracker__create_issue" && r.Client == "toolshelf-profile-test"
		})
	})
	// doctor --live reads the same /metrics: the ops session called a
	// tool its search ranked (in its top 5: the search returns two).
	var stdout, stderr bytes.Buffer
	getenv := func(k string) string { return map[string]string{envAuthToken: adminToken}[k] }
	if code := runEnv(context.Background(), &env{stdin: strings.NewReader(""), stdout: &stdout, stderr: &stderr, getenv: getenv}, []string{"doctor", "--live", url, "--json"}); code != 0 {
		t.Fatalf("doctor --live: %d %s", code, stderr.String())
	}
	var live liveQuality
	if err := json.Unmarshal(stdout.Bytes(), &live); err != nil {
		t.Fatal(err)
	}
	if i := slices.IndexFunc(live.Servers, func(s liveServer) bool { return s.Profile == "ops" && s.Server == "tracker" }); i < 0 || live.Servers[i].Ranked != 1 || live.Servers[i].RecallAt5 != 1 {
		t.Errorf("doctor --live: %+v", live)
	}
	if r := runCLI(t, "doctor", "--live", url); r.code == 0 || !strings.Contains(r.stderr, "401") || !strings.Contains(r.stderr, envAuthToken) {
		t.Errorf("doctor --live without the token: %d %s", r.code, r.stderr)
	}
	samples, err := telemetry.ReadMetrics(strings.NewReader(metrics))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []map[string]string{{"profile": "ops", "server": "tracker", "outcome": "ok"}, {"profile": "readonly", "server": "files", "outcome": "ok"}} {
		if s, ok := telemetry.Find(samples, "toolshelf_calls_total", want); !ok || s.Value != 1 {
			t.Errorf("metrics lack toolshelf_calls_total%v 1:\n%s", want, metrics)
		}
	}
}

// serve --profile over stdio serves that profile alone, enforced at call
// time; doctor --profile reports on it.
func TestServeAndDoctorProfile(t *testing.T) {
	t.Parallel()
	vars := ownFolders(t)
	vars["READONLY_TOKEN"] = readonlyToken
	cfg := profilesConfig(t)
	s := startServeWith(t, vars, "--config", cfg, "--profile", "ops")
	s.send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
	s.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	r := s.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__tracker__create_issue","arguments":{"text":"x"}}}}`)
	if !strings.Contains(resultText(r), `"tool":"create_issue"`) {
		t.Errorf("ops calling its tool: %v", r)
	}
	r = s.send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__files__write","arguments":{"text":"x"}}}}`)
	if strings.Contains(resultText(r), `"tool":"write"`) || !strings.Contains(resultText(r), "no tool") {
		t.Errorf("ops called a tool outside its profile: %v", r)
	}

	d := runCLIWith(t, vars, "doctor", "--config", cfg, "--profile", "readonly", "--json")
	var rep doctorReport
	if err := json.Unmarshal([]byte(d.stdout), &rep); err != nil {
		t.Fatalf("doctor --profile: %v\n%s%s", err, d.stdout, d.stderr)
	}
	if rep.Profile != "readonly" || rep.PerTurn.Without.Tools != 2 || len(rep.Servers) != 2 {
		t.Errorf("doctor --profile readonly: profile %q, %d tools, %d servers", rep.Profile, rep.PerTurn.Without.Tools, len(rep.Servers))
	}
	if d := runCLIWith(t, vars, "doctor", "--config", cfg, "--profile", "nope"); d.code != exitUsage || !strings.Contains(d.stderr, "has no such profile (it has ops, readonly)") {
		t.Errorf("an unknown profile: %d %s", d.code, d.stderr)
	}
}

// A client of a profile calls server-everything's get-env through the
// gateway: the server's environment holds none of toolshelf's tokens (the
// admin token from $TOOLSHELF_AUTH_TOKEN, any profile's), no other
// server's secret and no variable it did not ask for, and still what it
// asked for by name.
func TestServerEnvironmentHoldsNoSecrets(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	const (
		otherKey  = "other-servers-key-0123456789"
		unrelated = "unrelated-value-0123456789"
	)
	command, env := mcptest.Command("serve", []string{"echo"})
	env["CREDS_KEY"] = "${OTHER_KEY}"
	cfg := map[string]any{
		"mcpServers": map[string]any{
			"everything": map[string]any{
				"command": "node", "args": []string{"node_modules/@modelcontextprotocol/server-everything/dist/index.js", "stdio"},
				"cwd":        filepath.Join(testenv.Root(t), "testdata", "servers"),
				"inheritEnv": []string{"EXTRA_OK", "OTHER_KEY", "OPS_TOKEN"},
				"timeout":    testenv.Timeout(10 * time.Second).String(),
			},
			"creds": map[string]any{"command": command, "env": env, "timeout": testenv.Timeout(serverTimeout).String()},
		},
		"profiles": map[string]any{
			"ops":      map[string]any{"servers": []string{"everything"}, "tokens": []string{"${OPS_TOKEN}"}},
			"readonly": map[string]any{"servers": []string{"creds"}, "tokens": []string{"${READONLY_TOKEN}"}},
		},
	}
	b, _ := json.Marshal(cfg)
	path := filepath.Join(t.TempDir(), "servers.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	script := gatewayScript(t, path, "--http", "127.0.0.1:0")
	data, _ := os.ReadFile(script)
	exports := strings.Join([]string{
		"TOOLSHELF_AUTH_TOKEN=" + adminToken, "OPS_TOKEN=" + opsToken, "READONLY_TOKEN=" + readonlyToken,
		"OTHER_KEY=" + otherKey, "UNRELATED=" + unrelated, "EXTRA_OK=asked-for-by-name",
	}, "\nexport ")
	testenv.WriteScript(t, script, strings.Replace(string(data), "exec ", "export "+exports+"\nexec ", 1))
	url := runHTTPScript(t, script)

	r := probe(t, url+"/ops", opsToken, "environment variables", "mcp__everything__get-env")
	got, ok := r.Calls["mcp__everything__get-env"]
	if r.Refused != "" || !ok || got.Error {
		t.Fatalf("get-env through the ops profile: %+v", r)
	}
	var environ map[string]string
	if err := json.Unmarshal([]byte(got.Text), &environ); err != nil {
		t.Fatalf("get-env's text is not the environment: %v\n%s", err, got.Text)
	}
	for what, secret := range map[string]string{
		"the admin token": adminToken, "the ops profile's token": opsToken, "the readonly profile's token": readonlyToken,
		"another server's env value": otherKey, "a variable no server asked for": unrelated,
	} {
		if strings.Contains(got.Text, secret) {
			t.Errorf("get-env shows %s", what)
		}
	}
	if environ["EXTRA_OK"] != "asked-for-by-name" || environ["PATH"] == "" {
		t.Errorf("the server lacks what it needs or asked for: EXTRA_OK=%q PATH=%q", environ["EXTRA_OK"], environ["PATH"])
	}
}
