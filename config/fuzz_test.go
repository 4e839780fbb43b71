package config

import (
	"strings"
	"testing"
)

// FuzzParseConfig loads any bytes as a configuration: it never panics,
// and an error names the file.
func FuzzParseConfig(f *testing.F) {
	for _, seed := range []string{
		`{"mcpServers": {"a": {"command": "x", "args": ["${HOME}"], "env": {"K": "${V:-d}"}}}}`,
		`{"mcpServers": {"r": {"url": "https://u:p@h/mcp?k=v", "headers": {"Authorization": "Bearer ${T}"}, "timeout": "3s"}}}`,
		`{"mcpServers": {"a": {"command": "x"}, "a": {"command": "y"}}}`,
		"\xEF\xBB\xBF{\"mcpServers\": {}}",
		`{"mcpServers": null}`, `{"servers": {}}`, `{`, `[]`,
		`{"mcpServers": {"a": {"command": "x", "tools": {"allow": ["[a"]}, "alwaysLoad": ["t"]}}}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cfgs, err := ParseConfig(data, "servers.json", func(string) string { return "v" })
		if err != nil {
			if !strings.HasPrefix(err.Error(), "servers.json") {
				t.Errorf("error %q does not name the file", err)
			}
			return
		}
		for _, c := range cfgs {
			if c.Name == "" {
				t.Errorf("a server without a name: %+v", c)
			}
		}
	})
}
