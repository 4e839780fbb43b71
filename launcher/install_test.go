package launcher

import (
	"testing"
)

func TestNPXPackage(t *testing.T) {
	for _, tc := range []struct {
		command string
		args    []string
		want    string
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-memory@2026.1.26"}, "@modelcontextprotocol/server-memory@2026.1.26"},
		{"/usr/bin/npx", []string{"--yes", "pkg@1.0.0", "/data"}, "pkg@1.0.0"},
		{"npx", []string{"-y", "--package", "pkg@2", "--", "pkg-bin"}, "pkg@2"},
		{"npx", []string{"--package=pkg@3", "bin"}, "pkg@3"},
		{"npx", []string{"-y", "--", "pkg@4"}, "pkg@4"},
		{"node", []string{"server.js"}, ""},
		{"npx", []string{"-y"}, ""},
	} {
		if got := npxPackage(tc.command, tc.args); got != tc.want {
			t.Errorf("%s %v: %q, want %q", tc.command, tc.args, got, tc.want)
		}
	}
	for spec, want := range map[string]bool{"pkg": true, "pkg@1.2.3": true, "@scope/pkg@1": true, "/tmp/x/pkg-1.0.0.tgz": false,
		"./local": false, "github:user/repo": false, "git+https://x/y.git": false, "https://x/y.tgz": false, "npm:pkg@1": false, "user/repo": false, "@scope": false} {
		if got := fromRegistry(spec); got != want {
			t.Errorf("fromRegistry(%s) = %v", spec, got)
		}
	}
	for spec, name := range map[string]string{"@scope/name@1.2.3": "@scope/name", "name@1.0": "name", "name": "name", "@scope/name": "@scope/name"} {
		if got := packageName(spec); got != name {
			t.Errorf("packageName(%s) = %s", spec, got)
		}
	}
}

// Two servers whose names clean to the same text (a.b and a_b) have
// caches of their own: one cannot change what the other runs.
func TestServerCachesApart(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", t.TempDir())
	if a, b := CacheDir(nil, "a.b"), CacheDir(nil, "a_b"); a == b || a == "" {
		t.Errorf("one cache for two servers: %s", a)
	}
}
