package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// TestUncontainedSaid: list and doctor say which servers run uncontained
// and why, once for each reason.
func TestUncontainedSaid(t *testing.T) {
	cmd, env := mcptest.Command("serve", []string{"echo"})
	servers := map[string]any{}
	for _, name := range []string{"open1", "open2"} {
		servers[name] = map[string]any{"command": cmd, "env": env, "contain": false, "timeout": testenv.Timeout(5 * time.Second).String()}
	}
	b, _ := json.Marshal(map[string]any{"mcpServers": servers})
	cfg := filepath.Join(t.TempDir(), "servers.json")
	os.WriteFile(cfg, b, 0o644)
	for _, c := range []string{"list", "doctor"} {
		r := runCLI(t, c, "--config", cfg)
		want := "  open1, open2: \"contain\": false in its configuration\n"
		if r.code != 0 || !strings.Contains(r.stdout, "Uncontained (these servers can read everything your user can") || strings.Count(r.stdout, want) != 1 {
			t.Errorf("%s: code %d\n%s%s", c, r.code, r.stdout, r.stderr)
		}
	}
}
