package config

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func TestParseConfig(t *testing.T) {
	env := map[string]string{"GITHUB_TOKEN": "ghp_secret", "HOME": "/home/u"}
	getenv := func(k string) string { return env[k] }
	data := `{
  "mcpServers": {
    "github": {
      "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}", "LOG": "${LOG_LEVEL:-info}"},
      "alwaysLoad": ["create_issue"], "timeout": 30, "autoApprove": ["list_issues"],
      "tools": {"allow": ["*_issue*"], "deny": ["delete_*"]}
    },
    "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"Authorization": "Bearer ${GITHUB_TOKEN}"}, "alwaysLoad": true, "timeout": "1m30s"},
    "legacy": {"type": "sse", "url": "http://127.0.0.1:9/sse", "disabled": true},
    "local": {"command": "./server", "cwd": "sub", "prefix": false}
  }
}`
	got, err := ParseConfig([]byte(data), "/etc/toolshelf/servers.json", getenv)
	if err != nil {
		t.Fatal(err)
	}
	want := []ServerConfig{
		{Name: "github", Command: "npx", Args: []string{"-y", "@modelcontextprotocol/server-github"}, Cwd: "/etc/toolshelf",
			Env:        map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_secret", "LOG": "info"},
			AlwaysLoad: []string{"create_issue"}, Timeout: 30 * time.Second, AutoApprove: []string{"list_issues"},
			Allow: []string{"*_issue*"}, Deny: []string{"delete_*"},
			Expanded: []string{"ghp_secret"}, Vars: []string{"GITHUB_TOKEN"}, CwdDefault: true},
		{Name: "legacy", Type: "sse", URL: "http://127.0.0.1:9/sse", Disabled: true},
		{Name: "local", Command: "./server", Cwd: "/etc/toolshelf/sub", NoPrefix: true},
		{Name: "remote", Type: "http", URL: "https://example.com/mcp", Headers: map[string]string{"Authorization": "Bearer ghp_secret"},
			AlwaysLoadAll: true, Timeout: 90 * time.Second, Expanded: []string{"ghp_secret"}, Vars: []string{"GITHUB_TOKEN"}},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreUnexported(ServerConfig{}), cmpopts.IgnoreFields(ServerConfig{}, "Dial")); diff != "" {
		t.Errorf("ParseConfig (-want +got):\n%s", diff)
	}
	gh := got[0]
	if !gh.Keeps("create_issue") || gh.Keeps("delete_issue") || gh.Keeps("search_code") {
		t.Error("allow/deny patterns misapplied")
	}
	if !gh.AlwaysLoads("create_issue") || gh.AlwaysLoads("list_issues") || !got[3].AlwaysLoads("anything") {
		t.Error("alwaysLoad misapplied")
	}
}

func TestParseConfigErrors(t *testing.T) {
	tests := []struct {
		name, data, want string
	}{
		{"syntax", "{\n  \"mcpServers\": {\n    \"a\": {\"command\": \"x\",}\n  }\n}", "servers.json:3: invalid JSON"},
		{"no servers", `{"servers": {}}`, `servers.json: no "mcpServers" object (a VS Code mcp.json? convert it with: toolshelf import vscode --from servers.json)`},
		{"a section twice", "{\"mcpServers\": {},\n \"policies\": [\"team.cedar\"],\n \"policies\": []}", `servers.json:3: "policies" is given twice, at lines 2 and 3: JSON keeps only the last`},
		{"a server's key twice", "{\"mcpServers\": {\"a\": {\"command\": \"x\",\n \"contain\": true,\n \"contain\": false}}}", `servers.json:2: server "a": "contain" is given twice: JSON keeps only the last`},
		{"learn not a boolean", `{"mcpServers": {}, "learn": "yes"}`, `servers.json:1: "learn" must be true or false`},
		{"unknown top key", "{\"mcpServers\": {},\n \"mcpServer\": {}}", `servers.json:2: unknown key "mcpServer" (did you mean "mcpServers"?)`},
		{"unknown server key", "{\"mcpServers\": {\"a\": {\n\"command\": \"x\",\n\"arg\": []}}}", `servers.json:3: server "a": unknown key "arg" (did you mean "args"?)`},
		{"wrong type", `{"mcpServers": {"a": {"command": "x", "args": "one"}}}`, `server "a": "args" has the wrong type`},
		{"unknown grant", `{"mcpServers": {"a": {"url": "https://x/mcp", "oauth": {"grant": "password"}}}}`, `unknown grant "password"`},
		{"client credentials without a secret", `{"mcpServers": {"a": {"url": "https://x/mcp", "oauth": {"grant": "client_credentials", "clientId": "c"}}}}`, `needs "clientId" and "clientSecret"`},
		{"oauth on a stdio server", `{"mcpServers": {"a": {"command": "x", "oauth": {}}}}`, `"oauth" is for remote servers`},
		{"prefix not a boolean", `{"mcpServers": {"a": {"command": "x", "prefix": "no"}}}`, `server "a": "prefix" has the wrong type: want bool`},
		{"neither", `{"mcpServers": {"a": {"env": {}}}}`, `server "a": needs "command" (a stdio server) or "url" (a remote server)`},
		{"both", `{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}`, `has both "command" and "url"`},
		{"bad type", `{"mcpServers": {"a": {"type": "websocket", "url": "ws://h"}}}`, `unknown type "websocket" (want stdio, http or sse)`},
		{"bad timeout", `{"mcpServers": {"a": {"command": "x", "timeout": "soon"}}}`, `"timeout" "soon" is not a positive duration`},
		{"negative timeout", `{"mcpServers": {"a": {"command": "x", "timeout": -1}}}`, `"timeout" must be positive`},
		{"bad alwaysLoad", `{"mcpServers": {"a": {"command": "x", "alwaysLoad": "yes"}}}`, `"alwaysLoad" must be true, false or a list of tool names`},
		{"bad pattern", `{"mcpServers": {"a": {"command": "x", "tools": {"allow": ["[a"]}}}}`, `tools pattern "[a" is malformed`},
		{"server not object", `{"mcpServers": {"a": 3}}`, `server "a" must be an object`},
		{"null servers", `{"mcpServers": null}`, `servers.json:1: "mcpServers" must be an object of servers by name`},
		{"signin unknown", `{"mcpServers": {"a": {"url": "https://x/mcp", "signin": "per-user"}}}`, `"signin": unknown "per-user" (want shared, per-person or exchange)`},
		{"signin on a stdio server", `{"mcpServers": {"a": {"command": "x", "signin": "per-person"}}}`, `"signin": "per-person" is for remote servers`},
		{"network of another kind", `{"mcpServers": {"a": {"command": "x", "network": "lan"}}}`, `"network": want true (a network of its own), false (none), "host"`},
		{"host port privileged", `{"mcpServers": {"a": {"command": "x", "network": {"hostPorts": [80]}}}}`, `"hostPorts": 80: want a port from 1024 to 65535`},
		{"host ports none", `{"mcpServers": {"a": {"command": "x", "network": {"hostPorts": []}}}}`, `grants no port`},
		{"host ports twice", `{"mcpServers": {"a": {"command": "x", "network": {"hostPorts": [5432, 5432]}}}}`, `5432 is listed twice`},
		{"host ports unknown key", `{"mcpServers": {"a": {"command": "x", "network": {"ports": [5432]}}}}`, `unknown field "ports"`},
		{"host ports uncontained", `{"mcpServers": {"a": {"command": "x", "contain": false, "network": {"hostPorts": [5432]}}}}`, `with "contain": false they would not hold`},
		{"per-person without identity", `{"mcpServers": {"a": {"url": "https://x/mcp", "signin": "per-person"}}}`, `server a: "signin": "per-person" needs "identity" with the gateway's "clientId"`},
		{"per-person without the gateway's client", `{"mcpServers": {"a": {"url": "https://x/mcp", "signin": "per-person"}}, "identity": {"issuer": "https://idp.example.com", "audience": "toolshelf"}}`, `whoever opens a person's sign-in link must sign in there as that person`},
		{"audience without exchange", `{"mcpServers": {"a": {"url": "https://x/mcp", "audience": "api"}}}`, `"audience" is the audience of a token exchange`},
		{"identity without issuer", `{"mcpServers": {}, "identity": {"audience": "toolshelf"}}`, `identity: "issuer" is required`},
		{"identity over http", `{"mcpServers": {}, "identity": {"issuer": "http://idp.example.com", "audience": "toolshelf"}}`, `must be an https URL (http only on loopback)`},
		{"identity without audience", `{"mcpServers": {}, "identity": {"issuer": "https://idp.example.com"}}`, `"audience" is required`},
		{"identity unknown key", "{\"mcpServers\": {},\n \"identity\": {\"issuer\": \"https://idp.example.com\", \"audience\": \"t\",\n \"claim\": {}}}", `servers.json:3: identity: unknown key "claim" (did you mean "claims"?)`},
		{"identity HS256", `{"mcpServers": {}, "identity": {"issuer": "https://idp.example.com", "audience": "t", "algorithms": ["HS256"]}}`, `"algorithms": "HS256" is not accepted`},
		{"identity secret without id", `{"mcpServers": {}, "identity": {"issuer": "https://idp.example.com", "audience": "t", "clientSecret": "s"}}`, `"clientId" and "clientSecret" go together`},
		{"identity console without act", `{"mcpServers": {}, "identity": {"issuer": "https://idp.example.com", "audience": "t", "clientId": "c", "clientSecret": "s", "console": {"view": {"groups": ["dev"]}}}}`, `"console" needs "act"`},
		{"identity console without client", `{"mcpServers": {}, "identity": {"issuer": "https://idp.example.com", "audience": "t", "console": {"act": {"groups": ["sre"]}}}}`, `"console" signs people in as the gateway's client`},
		{"identity claims empty", `{"mcpServers": {}, "identity": {"issuer": "https://idp.example.com", "audience": "t", "claims": {"groups": []}}}`, `claim "groups" lists no values`},
		{"profile claims wrong type", `{"mcpServers": {"a": {"command": "x"}}, "profiles": {"ops": {"servers": ["a"], "claims": {"groups": "sre"}}}}`, `profile "ops": "claims" has the wrong type: want []string`},
		{"describe empty", `{"mcpServers": {"a": {"command": "x", "describe": {"read": {}}}}}`, `"describe": "read" says nothing`},
		{"describe unknown key", `{"mcpServers": {"a": {"command": "x", "describe": {"read": {"words": "x"}}}}}`, `want a description, or {"description"`},
		{"search results", "{\"mcpServers\": {},\n \"search\": {\"results\": \"short\"}}", `servers.json:2: "search": "results" is "short": want "compact"`},
		{"search unknown key", `{"mcpServers": {}, "search": {"result": "full"}}`, `"search" must be an object with "results"`},
		{"search budget", `{"mcpServers": {}, "search": {"budget": -5}}`, `"budget" must be a number of tokens`},
		{"budgets not a list", "{\"mcpServers\": {},\n \"budgets\": {\"usd\": 5}}", `servers.json:2: "budgets" must be a list of budgets`},
		{"budget unknown key", "{\"mcpServers\": {},\n \"budgets\": [\n {\"for\": \"everyone\", \"usd\": 5, \"per\": \"day\"},\n {\"for\": \"everyone\", \"limit\": 5, \"per\": \"day\"}]}", `servers.json:4: budget 2: json: unknown field "limit"`},
		{"budget for whom", "{\"mcpServers\": {},\n \"budgets\": [{\"for\": \"alice\", \"usd\": 5, \"per\": \"day\"}]}", `servers.json:2: budget 1: "for" is "alice": want "person:NAME"`},
		{"budget per", "{\"mcpServers\": {},\n \"budgets\": [{\"for\": \"everyone\", \"usd\": 5, \"per\": \"fortnight\"}]}", `budget 1: "per" is "fortnight"`},
		{"budget of nothing", "{\"mcpServers\": {},\n \"budgets\": [{\"for\": \"everyone\", \"per\": \"day\"}]}", `budget 1: it limits nothing`},
		{"budget warnAt", "{\"mcpServers\": {},\n \"budgets\": [{\"for\": \"everyone\", \"usd\": 1, \"per\": \"day\", \"warnAt\": 80}]}", `budget 1: "warnAt" is 80`},
		{"budget usd a string", "{\"mcpServers\": {},\n \"budgets\": [{\"for\": \"everyone\", \"usd\": \"5\", \"per\": \"day\"}]}", `budget 1: json: cannot unmarshal string`},
		{"price negative", "{\"mcpServers\": {},\n \"prices\": {\n \"m\": {\"input\": -1}}}", `servers.json:3: price of "m": a price is negative`},
		{"price unknown key", "{\"mcpServers\": {},\n \"prices\": {\"m\": {\"in\": 1}}}", `price of "m": json: unknown field "in"`},
		{"group name", "{\"mcpServers\": {},\n \"groups\": {\n \"Release_Notes\": {\"description\": \"x\", \"tools\": [\"*\"]}}}", `servers.json:3: group "Release_Notes": a name is 1 to 64 lowercase letters`},
		{"group without description", `{"mcpServers": {}, "groups": {"ops": {"tools": ["mcp__k8s__*"]}}}`, `group "ops" has no description`},
		{"group empty", `{"mcpServers": {}, "groups": {"ops": {"description": "Run things"}}}`, `group "ops" names no tools and no skills`},
		{"group unknown key", `{"mcpServers": {}, "groups": {"ops": {"description": "x", "tool": ["a"]}}}`, `unknown field "tool"`},
		{"group bad pattern", `{"mcpServers": {}, "groups": {"ops": {"description": "x", "tools": ["[a"]}}}`, `tool pattern "[a" is not a pattern`},
		{"groups not an object", `{"mcpServers": {}, "groups": ["ops"]}`, `"groups" must be an object of groups by name`},
		{"twice", "{\"mcpServers\": {\n \"a\": {\"command\": \"x\"},\n \"b\": {\"command\": \"y\"},\n \"a\": {\"command\": \"z\"}}}",
			`servers.json:4: server "a" is defined twice, at lines 2 and 4: JSON keeps only the last`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseConfig([]byte(tt.data), "servers.json", func(string) string { return "" })
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to contain %q", err, tt.want)
			}
		})
	}
}

// An unset variable stops only its server, and no error text carries a
// secret's value.
// "search" says what matches carry and the answers' budget.
func TestParseSearch(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {}, "search": {"results": "full", "budget": 2500}}`), "servers.json", nil)
	if err != nil || cfg.Search.Results != "full" || cfg.Search.Budget != 2500 {
		t.Fatalf("%+v (%v)", cfg, err)
	}
	if cfg, err := Parse([]byte(`{"mcpServers": {}}`), "servers.json", nil); err != nil || cfg.Search != (SearchConfig{}) {
		t.Errorf("without \"search\": %+v (%v)", cfg.Search, err)
	}
}

// "groups" are sets of tools and skills, by name.
func TestParseGroups(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {}, "groups": {"release": {"description": "Ship a release", "tools": ["mcp__github__*_release"], "skills": ["release-notes"]}, "ops": {"description": "Run things", "tools": ["mcp__k8s__*"]}}}`), "servers.json", nil)
	if err != nil || len(cfg.Groups) != 2 || cfg.Groups[0].Name != "ops" || cfg.Groups[1].Name != "release" {
		t.Fatalf("%+v (%v)", cfg.Groups, err)
	}
	r := cfg.Groups[1]
	if !r.HasTool("mcp__github__create_release") || r.HasTool("mcp__github__create_issue") || !r.HasSkill("release-notes", "skill://docs/release-notes/SKILL.md") || r.HasSkill("other", "skill://docs/other/SKILL.md") {
		t.Errorf("membership: %+v", r)
	}
}

// "describe" takes a description, or an object with search words.
func TestParseDescribe(t *testing.T) {
	cfg, err := Parse([]byte(`{"mcpServers": {"a": {"command": "x", "describe": {"read": "Read a ledger entry.", "write": {"searchWords": "save store"}}}}}`), "servers.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]Describe{"read": {Description: "Read a ledger entry."}, "write": {SearchWords: "save store"}}
	if got := cfg.Servers[0].Describe; !reflect.DeepEqual(got, want) {
		t.Errorf("describe: %+v", got)
	}
}

func TestParseConfigUnsetVariable(t *testing.T) {
	data := `{"mcpServers": {
		"a": {"command": "x", "env": {"TOKEN": "${MISSING_TOKEN}"}},
		"b": {"command": "y", "args": ["--key=${PRESENT}"]}}}`
	cfgs, err := ParseConfig([]byte(data), "c.json", func(k string) string {
		if k == "PRESENT" {
			return "s3cr3t-value"
		}
		return ""
	})
	if err != nil {
		t.Fatal(err)
	}
	if cfgs[0].Err == nil || !strings.Contains(cfgs[0].Err.Error(), "MISSING_TOKEN is not set (used in env.TOKEN") {
		t.Errorf("a: err = %v", cfgs[0].Err)
	}
	if cfgs[1].Err != nil || cfgs[1].Args[0] != "--key=s3cr3t-value" {
		t.Errorf("b: %+v", cfgs[1])
	}
}

func TestExpand(t *testing.T) {
	env := map[string]string{"A": "1", "EMPTY": ""}
	x := expander{getenv: func(k string) string { return env[k] }}
	for in, want := range map[string]string{
		"${A}":            "1",
		"x${A}y${A}":      "x1y1",
		"${B:-def}":       "def",
		"${EMPTY:-d}":     "d",
		"${A:-d}":         "1",
		"$A ${ not a var": "$A ${ not a var",
		"${1A}":           "${1A}",
		"plain":           "plain",
	} {
		if got := x.expand(in, "test"); got != want {
			t.Errorf("expand(%q) = %q, want %q", in, got, want)
		}
	}
	if x.err != nil {
		t.Errorf("unexpected error %v", x.err)
	}
}

// Editors on Windows write a byte order mark before the JSON.
func TestParseConfigBOM(t *testing.T) {
	cfgs, err := ParseConfig([]byte("\xEF\xBB\xBF"+`{"mcpServers": {"a": {"command": "x"}}}`), "servers.json", func(string) string { return "" })
	if err != nil || len(cfgs) != 1 || cfgs[0].Name != "a" {
		t.Errorf("ParseConfig with a BOM = %+v, %v", cfgs, err)
	}
}

// "store" is a postgres:// URL, ${VAR} expanded; it and its password are
// secrets (withheld from servers, cut from output); anything else is an
// error naming the key.
func TestConfigStore(t *testing.T) {
	getenv := func(k string) string { return map[string]string{"PGPASS": "s3cret-store-password"}[k] }
	c, err := Parse([]byte(`{"mcpServers": {}, "store": "postgres://toolshelf:${PGPASS}@db:5432/toolshelf"}`), "c.json", getenv)
	if err != nil {
		t.Fatal(err)
	}
	if c.Store != "postgres://toolshelf:s3cret-store-password@db:5432/toolshelf" {
		t.Errorf("store %q", c.Store)
	}
	sec := c.Secrets()
	if !slices.Contains(sec.Values, "s3cret-store-password") || !slices.Contains(sec.Values, c.Store) || !slices.Contains(sec.Vars, "PGPASS") {
		t.Errorf("secrets %+v", sec)
	}
	for _, bad := range []string{`"store": 5`, `"store": "mysql://x"`, `"store": "postgres://u:${NOPE}@h/db"`} {
		if _, err := Parse([]byte(`{"mcpServers": {}, `+bad+`}`), "c.json", getenv); err == nil || !strings.Contains(err.Error(), "c.json:1") {
			t.Errorf("%s: %v", bad, err)
		}
	}
}

// TestFileSecrets: ${file:PATH} reads a secret from a file (relative to
// the configuration's folder), trims its newline, counts it a secret and
// the file one no server sees; a missing file names itself, not a value.
func TestFileSecrets(t *testing.T) {
	dir := t.TempDir()
	os.MkdirAll(filepath.Join(dir, "secrets"), 0o700)
	os.WriteFile(filepath.Join(dir, "secrets", "gh"), []byte("ghp_fromafile0123456789\n"), 0o600)
	os.WriteFile(filepath.Join(dir, "secrets", "ci"), []byte("ci-token-from-a-file-0123\n"), 0o600)
	data := []byte(`{"mcpServers": {"gh": {"command": "x", "env": {"GITHUB_TOKEN": "${file:secrets/gh}"}}},
		"profiles": {"ci": {"servers": ["gh"], "tokens": ["${file:` + filepath.Join(dir, "secrets", "ci") + `}"]}}}`)
	cfg, err := Parse(data, filepath.Join(dir, "servers.json"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if got := cfg.Servers[0].Env["GITHUB_TOKEN"]; got != "ghp_fromafile0123456789" {
		t.Errorf("env = %q", got)
	}
	if got := cfg.Profiles[0].Tokens; len(got) != 1 || got[0] != "ci-token-from-a-file-0123" {
		t.Errorf("tokens = %q", got)
	}
	s := cfg.Secrets()
	if !slices.Contains(s.Values, "ci-token-from-a-file-0123") || !slices.Contains(s.Files, filepath.Join(dir, "secrets", "gh")) || !slices.Contains(s.Files, filepath.Join(dir, "secrets", "ci")) {
		t.Errorf("secrets = %+v", s)
	}
	if !slices.Contains(cfg.Servers[0].SecretValues(), "ghp_fromafile0123456789") {
		t.Errorf("the server's secrets miss the file's value")
	}
	bad := []byte(`{"mcpServers": {"gh": {"command": "x", "env": {"T": "${file:secrets/missing}"}}}}`)
	cfg, err = Parse(bad, filepath.Join(dir, "servers.json"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	if e := cfg.Servers[0].Err; e == nil || !strings.Contains(e.Error(), "secrets/missing") || !strings.Contains(e.Error(), "env.T") {
		t.Errorf("missing file: %v", e)
	}
}

// "identity" and a profile's "claims" are read, and the client secret,
// from a file, is one of toolshelf's secrets.
func TestParseIdentity(t *testing.T) {
	dir := t.TempDir()
	secretFile := filepath.Join(dir, "idp-secret")
	os.WriteFile(secretFile, []byte("client-secret-of-the-gateway\n"), 0o600)
	data := `{"mcpServers": {"notes": {"url": "https://notes.example.com/mcp", "signin": "exchange", "audience": "notes-api"}},
		"identity": {"issuer": "https://idp.example.com", "audience": "toolshelf", "scopes": ["mcp"],
			"clientId": "toolshelf", "clientSecret": "${file:idp-secret}", "claims": {"groups": ["admins"]},
			"console": {"view": {"groups": ["sre", "dev"]}, "act": {"groups": ["sre"]}}},
		"profiles": {"ops": {"servers": ["notes"], "claims": {"groups": ["sre", "ops"], "email_verified": ["true"]}}}}`
	cfg, err := Parse([]byte(data), filepath.Join(dir, "servers.json"), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	id := cfg.Identity
	if id == nil || id.Issuer != "https://idp.example.com" || id.Audience != "toolshelf" || id.ClientSecret != "client-secret-of-the-gateway" || id.Claims["groups"][0] != "admins" {
		t.Fatalf("identity: %+v", id)
	}
	if len(id.ConsoleView["groups"]) != 2 || id.ConsoleAct["groups"][0] != "sre" {
		t.Errorf("console rules: %v %v", id.ConsoleView, id.ConsoleAct)
	}
	if ops, _ := cfg.Profile("ops"); len(ops.Claims) != 2 {
		t.Errorf("ops claims: %v", ops.Claims)
	}
	if s := cfg.Servers[0]; s.Signin != SigninExchange || s.Audience != "notes-api" {
		t.Errorf("notes: signin %q audience %q", s.Signin, s.Audience)
	}
	secrets := cfg.Secrets()
	if !slices.Contains(secrets.Values, "client-secret-of-the-gateway") || !slices.Contains(secrets.Files, secretFile) {
		t.Errorf("the client secret is not one of toolshelf's secrets: %+v", secrets)
	}
}

// doctor's warning of secret-looking files in a server's grants.
func TestSecretLooking(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{".env", "admin-token", "server.pem", "id_ed25519", "id_ed25519.pub", "readme.md", "data.json", "stripe_api_key.txt"} {
		os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600)
	}
	cfg := ServerConfig{Name: "s", Command: "node", Cwd: dir, ReadPaths: []string{dir}}
	var names []string
	for _, f := range cfg.SecretLooking() {
		names = append(names, filepath.Base(f))
	}
	if got := strings.Join(names, " "); got != ".env admin-token id_ed25519 server.pem stripe_api_key.txt" {
		t.Errorf("secret-looking: %s", got)
	}
	cfg.NoContain = true
	if got := cfg.SecretLooking(); got != nil {
		t.Errorf("an uncontained server (it sees everything anyway): %v", got)
	}
}

// TestGrantsRefusedAtLoad: a grant of "paths" that is, holds or leads
// through a link to the system, the home folder, a hidden folder of it
// or toolshelf's own folders is refused when the configuration is read,
// naming the grant; "~" is the home folder.
func TestGrantsRefusedAtLoad(t *testing.T) {
	dir, home := t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.MkdirAll(filepath.Join(home, "work"), 0o755)
	os.Symlink("/etc", filepath.Join(dir, "etc-link"))
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(dir, "keys"))
	getenv := func(k string) string {
		return map[string]string{"HOME": home}[k]
	}
	for _, tc := range []struct{ paths, err string }{
		{`{"write": ["/etc"]}`, `"paths": {"write"}[0]: /etc is a folder of the system`},
		{`{"write": ["/usr/local/lib/x"]}`, "in a folder of the system"},
		{`{"read": ["/etc/ssl/private"]}`, "in a folder of the system (/etc)"},
		{`{"read": ["/"]}`, "the whole file system"},
		{`{"write": ["~"]}`, "is the home folder"},
		{`{"read": ["` + filepath.Dir(home) + `"]}`, "holds the home folder"},
		{`{"read": ["~/.ssh"]}`, "hidden file or folder"},
		{`{"write": ["./etc-link/cron.d"]}`, "it leads to /etc/cron.d"},
		{`{"read": ["keys"]}`, "it leads to " + home + "/.ssh"},
		{`{"write": ["~/.local/state/toolshelf/x"]}`, "toolshelf's own"},
		{`{"write": ["/tmp"]}`, "every user shares"},
		{`{"write": ["~/work", "data"], "read": ["/usr/share/doc"]}`, ""},
	} {
		_, err := ParseConfig([]byte(`{"mcpServers": {"s": {"command": "srv", "paths": `+tc.paths+`}}}`), filepath.Join(dir, "servers.json"), getenv)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.paths, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.paths, err, tc.err)
		}
	}
	// toolshelf's own configuration folder is in ~/.config: a folder of
	// it is the person's, though under a hidden folder of the home.
	own := filepath.Join(home, ".config", "toolshelf")
	os.MkdirAll(filepath.Join(own, "data"), 0o755)
	if _, err := ParseConfig([]byte(`{"mcpServers": {"s": {"command": "srv", "paths": {"write": ["data"]}}}}`), filepath.Join(own, "servers.json"), getenv); err != nil {
		t.Errorf("a folder of the configuration's own folder: %v", err)
	}
	if _, err := ParseConfig([]byte(`{"mcpServers": {"s": {"command": "srv", "paths": {"read": ["~/.config/gh"]}}}}`), filepath.Join(own, "servers.json"), getenv); err == nil {
		t.Error("a hidden folder of the home beside the configuration's was granted")
	}
	cfgs, err := ParseConfig([]byte(`{"mcpServers": {"s": {"command": "srv", "paths": {"write": ["~/work"]}}}}`), filepath.Join(dir, "servers.json"), getenv)
	if err != nil || cfgs[0].WritePaths[0] != home+"/work" {
		t.Errorf("~ not expanded: %v %v", cfgs, err)
	}
	// Uncontained, "paths" are refused as before; nothing to check.
}

func TestParseBudgetsAndPrices(t *testing.T) {
	c, err := Parse([]byte(`{"mcpServers": {},
 "budgets": [{"for": "group:sre", "tokens": 2000000, "per": "month", "calendar": true, "warnAt": 0.9},
             {"for": "profile:ci", "requests": 500, "toolCalls": 1000, "per": "hour"}],
 "prices": {"my-model": {"input": 3, "output": 15, "cacheRead": 0.3, "cacheWrite": 3.75}}}`), "servers.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Budgets) != 2 || c.Budgets[0].Tokens != 2_000_000 || !c.Budgets[0].Calendar || c.Budgets[0].WarnAt != 0.9 || c.Budgets[1].ToolCalls != 1000 {
		t.Errorf("budgets %+v", c.Budgets)
	}
	if p := c.Prices["my-model"]; p.Output != 15 || p.CacheWrite != 3.75 {
		t.Errorf("prices %+v", c.Prices)
	}
}
