//go:build unix

package audit

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

// The log is never opened through a link planted where it goes (by a
// server whose write grant holds the folder), nor as a FIFO.
func TestLogRefusesLinks(t *testing.T) {
	dir := t.TempDir()
	target := filepath.Join(dir, "elsewhere.txt")
	os.WriteFile(target, []byte("theirs\n"), 0o644)
	link := filepath.Join(dir, "audit.jsonl")
	if err := os.Symlink(target, link); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(link, nil); err == nil {
		t.Fatal("the log was opened through a link")
	}
	fifo := filepath.Join(dir, "fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o644); err != nil {
		t.Skip(err)
	}
	if _, err := Open(fifo, nil); err == nil {
		t.Fatal("the log was opened as a FIFO")
	}
	if b, _ := os.ReadFile(target); string(b) != "theirs\n" {
		t.Errorf("the link's target was written: %q", b)
	}
}
