package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/internal/testenv"
)

// TestRealEmbeddingModel drives the semantic and hybrid engines with a
// real sentence encoder (USE-lite, served by scripts/embed-server) over
// part of the built-in catalog (the model embeds in plain JavaScript, a
// second for every dozen tools): requests that share almost no words with
// the tools they need.
func TestRealEmbeddingModel(t *testing.T) {
	t.Parallel() // waits on processes of its own
	dir := filepath.Join("..", "..", "scripts", "embed-server")
	testenv.RequireNPM(t, "scripts/embed-server")
	url := startEmbedServer(t, dir)
	cat := builtin.Catalog().Filter(func(e *catalog.Entry) bool {
		switch e.Server {
		case "google-maps", "slack", "puppeteer", "playwright", "memory", "filesystem", "brave-search":
			return true
		}
		return false
	})
	file := filepath.Join(t.TempDir(), "catalog.json")
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Encode(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	embed := []string{"--embed-url", url, "--embed-model", "use-lite", "--catalog", file, "--limit", "3"}

	for _, c := range []struct{ query, want string }{
		{"how long does it take to drive from Paris to Lyon", "mcp__google-maps__maps_"},
		{"find restaurants nearby", "mcp__google-maps__maps_search_places"},
	} {
		r := runCLI(t, append([]string{"search", "--engine", "semantic"}, append(embed, c.query)...)...)
		if r.code != 0 || !strings.Contains(r.stdout, c.want) {
			t.Errorf("semantic %q: want %s in the top 3, got %d\n%s%s", c.query, c.want, r.code, r.stdout, r.stderr)
		}
	}
	// Hybrid keeps exact names on top, and a two-step request gets a
	// tool for each step.
	r := runCLI(t, append([]string{"search", "--engine", "hybrid"}, append(embed, "take a screenshot of the page, then post it to the slack channel")...)...)
	if r.code != 0 || !strings.Contains(r.stdout, "screenshot") || !strings.Contains(r.stdout, "mcp__slack__") {
		t.Errorf("hybrid two-step request: %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// startEmbedServer starts scripts/embed-server on a free loopback port and
// returns its API base URL.
func startEmbedServer(t *testing.T, dir string) string {
	t.Helper()
	cmd := exec.Command("node", "server.mjs", "0")
	cmd.Dir = dir
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting the embeddings server: %v", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() { // read to the end, so that the server never blocks on stderr
			if m := regexp.MustCompile(`http://127\.0\.0\.1:\d+/v1`).FindString(sc.Text()); m != "" {
				addr <- m
			}
		}
	}()
	select {
	case u := <-addr:
		return u
	case <-time.After(testenv.Timeout(time.Minute)):
		t.Fatalf("the embeddings server did not start within %v", testenv.Timeout(time.Minute))
		return ""
	}
}
