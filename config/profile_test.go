package config

import (
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/pin"
)

func TestParseProfiles(t *testing.T) {
	env := func(k string) string {
		if k == "OPS_TOKEN" {
			return "ops-token-0123456789abcdef"
		}
		return ""
	}
	data := `{"mcpServers": {"a": {"command": "x"}, "b": {"command": "y"}},
  "trust": "approve",
  "profiles": {
    "ops": {"servers": ["a"], "tools": {"deny": ["*delete*"]}, "tokens": ["${OPS_TOKEN}"]},
    "ro": {"servers": ["a", "b"], "tools": {"allow": ["*__get_*"]}, "load": ["mcp__b__get_x"]}
  }}`
	cfg, err := Parse([]byte(data), "servers.json", env)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Trust != pin.TrustApprove || len(cfg.Profiles) != 2 {
		t.Fatalf("%+v", cfg)
	}
	ops, _ := cfg.Profile("ops")
	if ops.Tokens[0] != "ops-token-0123456789abcdef" {
		t.Errorf("token not expanded: %q", ops.Tokens)
	}
	entry := func(server, tool string) *catalog.Entry {
		return &catalog.Entry{Name: catalog.Prefix + server + "__" + tool, Server: server, Tool: tool}
	}
	for _, tc := range []struct {
		profile string
		e       *catalog.Entry
		want    bool
	}{
		{"ops", entry("a", "get_x"), true},
		{"ops", entry("a", "delete_x"), false},
		{"ops", entry("b", "get_x"), false},
		{"ro", entry("b", "get_x"), true},
		{"ro", entry("b", "put_x"), false},
	} {
		p, _ := cfg.Profile(tc.profile)
		if got := p.Keeps(tc.e); got != tc.want {
			t.Errorf("%s keeps %s = %v, want %v", tc.profile, tc.e.Name, got, tc.want)
		}
	}
	c := catalog.New([]catalog.Entry{*entry("a", "get_x"), *entry("b", "get_x"), *entry("b", "put_x")}, nil)
	ro, _ := cfg.Profile("ro")
	v := ro.Narrow(c)
	if v.Len() != 2 {
		t.Errorf("the ro view has %v", v.Names())
	}
	if e, ok := v.Lookup("mcp__b__get_x"); !ok || !e.AlwaysLoad {
		t.Errorf("the load tool is not alwaysLoad in the view: %+v", e)
	}
	if w := ops.Unmatched(c); len(w) != 1 || !strings.Contains(w[0], `"*delete*"`) {
		t.Errorf("unmatched: %q", w)
	}
}

func TestParseProfilesErrors(t *testing.T) {
	servers := `"mcpServers": {"a": {"command": "x"}}`
	for _, tc := range []struct{ name, profiles, want string }{
		{"unknown server", `{"p": {"servers": ["b"]}}`, `servers.json:3: profile "p": unknown server "b"`},
		{"no servers", `{"p": {}}`, `profile "p": needs "servers"`},
		{"default name", `{"everything": {"servers": ["a"]}}`, `taken by the default profile`},
		{"bad name", `{"a/b": {"servers": ["a"]}}`, `URL path`},
		{"unknown key", `{"p": {"servers": ["a"], "tool": {}}}`, `unknown key "tool" (did you mean "tools"?)`},
		{"bad pattern", `{"p": {"servers": ["a"], "tools": {"allow": ["["]}}}`, `pattern "[" is malformed`},
		{"short token", `{"p": {"servers": ["a"], "tokens": ["short"]}}`, `shorter than 16`},
		{"unset token", `{"p": {"servers": ["a"], "tokens": ["${NOPE}"]}}`, `NOPE`},
		{"shared token", `{"p": {"servers": ["a"], "tokens": ["0123456789abcdefXYZ"]}, "q": {"servers": ["a"], "tokens": ["0123456789abcdefXYZ"]}}`, `profile "q": tokens[0] is also a token of profile "p"`},
		{"twice", `{"p": {"servers": ["a"]}, "p": {"servers": ["a"]}}`, `profile "p" is defined twice`},
		{"wrong type", `{"p": {"servers": "a"}}`, `"servers" has the wrong type`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			data := "{" + servers + ",\n\n\"profiles\": " + tc.profiles + "}"
			_, err := Parse([]byte(data), "servers.json", func(string) string { return "" })
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error = %v, want %q", err, tc.want)
			}
			if err != nil && strings.Contains(err.Error(), "0123456789abcdefXYZ") {
				t.Errorf("the error shows a token: %v", err)
			}
		})
	}
	if _, err := Parse([]byte(`{"mcpServers": {}, "trust": "sometimes"}`), "s.json", nil); err == nil || !strings.Contains(err.Error(), `"trust" must be`) {
		t.Errorf("bad trust: %v", err)
	}
}
