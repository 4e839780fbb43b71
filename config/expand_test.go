package config

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestFileRefs: every ${file:PATH} of a configuration's strings is found,
// escaped in JSON or not, in keys and values, anchored as Parse anchors
// it, whether or not the file exists; data that is not JSON names none.
func TestFileRefs(t *testing.T) {
	home, _ := os.UserHomeDir()
	dir := t.TempDir()
	data := []byte(`{"mcpServers": {"a": {"command": "x", "env": {"T": "${file:tok}", "U": "pre-${file:/abs/u}-${file:~/h}"},
		"headers": {"K": "${file:sub\/k}"}}}, "profiles": {"p": {"servers": ["a"], "tokens": ["${file:missing}"]}}}`)
	got := FileRefs(data, filepath.Join(dir, "servers.json"))
	want := []string{filepath.Join(dir, "sub/k"), filepath.Join(dir, "tok"), "/abs/u", filepath.Join(home, "h"), filepath.Join(dir, "missing")}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("FileRefs = %q, want %q", got, want)
	}
	if got := FileRefs([]byte(`{"mcpServers": {"a": {"env": {"T": "${file:tok}"`), "x.json"); got != nil {
		t.Errorf("FileRefs of a half-written file = %q", got)
	}
}
