package upstream

import (
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
)

// A stdio server gets a minimal environment and its own "env", never
// toolshelf's settings, its tokens or the variables other servers' secrets
// come from, even when it asks for them.
func TestServerEnv(t *testing.T) {
	environ := []string{
		"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C.UTF-8", "TMPDIR=/tmp/x",
		"TOOLSHELF_AUTH_TOKEN=admin-token-0123456789", "OPS_TOKEN=ops-token-0123456789",
		"GITHUB_TOKEN=ghp_other_servers_secret", "AWS_PROFILE=dev", "DATABASE_URL=postgres://u:ghp_other_servers_secret@db/x",
		"UNRELATED=value-of-something", "SHARED=plain",
	}
	own := config.Secrets{Values: []string{"admin-token-0123456789", "ops-token-0123456789"}, Vars: []string{"TOOLSHELF_AUTH_TOKEN", "OPS_TOKEN"}}
	configs := []config.ServerConfig{
		{Name: "github", Command: "x", Env: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_other_servers_secret"},
			Expanded: []string{"ghp_other_servers_secret"}, Vars: []string{"GITHUB_TOKEN"}},
		{Name: "plain", Command: "x", Env: map[string]string{"MODE": "test"}},
		{Name: "named", Command: "x", InheritEnv: []string{"AWS_PROFILE", "GITHUB_TOKEN", "OPS_TOKEN", "TOOLSHELF_AUTH_TOKEN", "DATABASE_URL"}},
		{Name: "all", Command: "x", InheritAllEnv: true, Env: map[string]string{"SHARED": "mine"}},
	}
	w := newWithheld(own, configs)
	basic := []string{"PATH=/usr/bin", "HOME=/home/u", "LC_ALL=C.UTF-8", "TMPDIR=/tmp/x"}
	for _, tc := range []struct {
		server string
		want   []string
	}{
		{"github", append(slices.Clone(basic), "GITHUB_PERSONAL_ACCESS_TOKEN=ghp_other_servers_secret")},
		{"plain", append(slices.Clone(basic), "MODE=test")},
		{"named", append(slices.Clone(basic), "AWS_PROFILE=dev")},
		{"all", append(slices.Clone(basic), "AWS_PROFILE=dev", "UNRELATED=value-of-something", "SHARED=mine")},
	} {
		i := slices.IndexFunc(configs, func(c config.ServerConfig) bool { return c.Name == tc.server })
		got := serverEnv(&configs[i], environ, w, nil)
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s's environment (-want +got):\n%s", tc.server, diff)
		}
	}
}

// "inheritEnv" is true, false or a list of variable names, for stdio
// servers only.
func TestParseInheritEnv(t *testing.T) {
	for _, tc := range []struct {
		entry string
		all   bool
		names []string
		err   string
	}{
		{entry: `{"command": "x", "inheritEnv": ["AWS_PROFILE"]}`, names: []string{"AWS_PROFILE"}},
		{entry: `{"command": "x", "inheritEnv": true}`, all: true},
		{entry: `{"command": "x", "inheritEnv": false}`},
		{entry: `{"command": "x", "inheritEnv": "AWS"}`, err: `"inheritEnv" must be true, false or a list of variable names`},
		{entry: `{"command": "x", "inheritEnv": ["A B"]}`, err: `"inheritEnv": "A B" is not a variable name`},
		{entry: `{"url": "http://127.0.0.1:1/mcp", "inheritEnv": true}`, err: `"inheritEnv" is for stdio servers`},
	} {
		cfgs, err := config.ParseConfig([]byte(`{"mcpServers": {"s": `+tc.entry+`}}`), "servers.json", func(string) string { return "" })
		if tc.err != "" {
			if err == nil || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("%s: error %v, want %q", tc.entry, err, tc.err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.entry, err)
		}
		if cfgs[0].InheritAllEnv != tc.all || !slices.Equal(cfgs[0].InheritEnv, tc.names) {
			t.Errorf("%s: all %v names %v", tc.entry, cfgs[0].InheritAllEnv, cfgs[0].InheritEnv)
		}
	}
}

// A real subprocess server sees the environment the pool gives it, and a
// tool result that carries one of toolshelf's tokens reaches the caller
// with the token cut out (the second wall, for a server that learned it
// some other way).
func TestPoolKeepsOwnSecrets(t *testing.T) {
	const admin = "admin-token-0123456789abcdef"
	secrets := config.Secrets{Values: []string{admin}, Vars: []string{"TOOLSHELF_AUTH_TOKEN"}}
	t.Setenv("TOOLSHELF_AUTH_TOKEN", admin)
	p := startPool(t, []config.ServerConfig{fake("a", "serve", []string{"echo"})}, &Options{Secrets: secrets})
	res, err := p.Scope(nil).Call(context.Background(), "mcp__a__echo", json.RawMessage(`{"text":"the token is `+admin+`"}`))
	if err != nil {
		t.Fatal(err)
	}
	text := res.Content[0].(*mcp.TextContent).Text
	structured, _ := json.Marshal(res.StructuredContent)
	for _, got := range []string{text, string(structured)} {
		if strings.Contains(got, admin) || !strings.Contains(got, "the token is "+Redacted) {
			t.Errorf("result %s: want the token redacted", got)
		}
	}
}
