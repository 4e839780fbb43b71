package e2e

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/registry/registrytest"
)

// TestAddFromRegistry: a real npm server, from a registry on loopback
// (testdata/registry, and the npm registry's side of the pinned
// packages and of an older version, their tarballs from this machine's
// npm cache), added at its older version with toolshelf add: started
// contained (npx installs it in the sandbox, through the one loopback
// port add granted), its tools held until approved, then approved and
// called through the TypeScript SDK client. toolshelf update then moves
// it to the newer version, whose tools differ: at the next start they
// are held, tools diff shows the change, and approved they are called
// again.
func TestAddFromRegistry(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	needBwrap(t)
	if _, err := exec.LookPath("slirp4netns"); err != nil {
		t.Skip("needs slirp4netns (apt install slirp4netns); CI installs it")
	}
	if _, err := exec.LookPath("npx"); err != nil {
		t.Skip("needs npx")
	}
	reg := registrytest.Serve(t, "../testdata/registry/servers.json")
	reg.ServeNPM(t, "../testdata/servers/package-lock.json", "../testdata/registry/npm/package-lock.json")
	for _, v := range []string{older, "2026.8.31"} {
		if !reg.Cached("@modelcontextprotocol/server-memory", v) {
			t.Skipf("this machine's npm cache lacks server-memory %s's tarball: run npm ci in testdata/servers and testdata/registry/npm (scripts/test.sh does)", v)
		}
	}

	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	env := append(os.Environ(), "HOME="+dir, "XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	toolshelfCmd := func(stdin string, args ...string) (string, error) {
		cmd := exec.Command(toolshelf, args...)
		cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	// add installs the package at once, in the server's sandbox, from a
	// cold cache: the next start is the installed program's alone.
	if out, err := toolshelfCmd("\n", "add", "io.github.modelcontextprotocol/server-memory@"+older, "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--yes", "--config", cfg); err != nil ||
		!strings.Contains(out, "installed the server's package") || strings.Contains(out, "not installed yet") {
		t.Fatalf("toolshelf add: %v\n%s", err, out)
	}
	data, _ := os.ReadFile(cfg)
	var doc struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	json.Unmarshal(data, &doc)
	mem := doc.MCPServers["server-memory"]
	if mem["trust"] != "approve" || mem["network"] == nil || mem["contain"] != nil {
		t.Fatalf("the entry add wrote: %s", data)
	}

	token := "registry-test-token-0123456789"
	os.WriteFile(filepath.Join(dir, "token"), []byte(token+"\n"), 0o600)
	serve := func() (url, health string, stop func()) {
		cmd := exec.Command(toolshelf, "serve", "--config", cfg, "--http", "127.0.0.1:0", "--auth-token-file", filepath.Join(dir, "token"))
		cmd.Env = env
		url = testenv.Listening(t, cmd, "the gateway", testenv.URLLine)
		stop = func() {
			cmd.Process.Signal(os.Interrupt)
			cmd.Wait()
		}
		return url, strings.TrimSuffix(url, "/mcp") + "/healthz", stop
	}
	url, health, stop := serve()
	testenv.Eventually(t, 4*time.Minute, "the added server to start, contained, its tools held", func() bool {
		h := getWith(t, health, token)
		return strings.Contains(h, `"quarantined"`) && strings.Contains(h, `"ready"`)
	})
	if h := getWith(t, health, token); !strings.Contains(h, `"contained": true`) {
		t.Errorf("the added server does not run contained:\n%s", h)
	}
	call := func(tool string) (string, error) {
		return node(t, "node", "registry-client.mjs", url, token, "mcp__server-memory__"+tool, "{}")
	}
	if out, err := call("read_graph"); err == nil {
		t.Fatalf("a held tool was called before approval: %s", out)
	}
	if out, err := toolshelfCmd("", "tools", "approve", "server-memory", "--config", cfg); err != nil {
		t.Fatalf("tools approve: %v\n%s", err, out)
	}
	var got string
	var err error
	testenv.Eventually(t, time.Minute, "the approved tool to be called", func() bool {
		got, err = call("read_graph")
		return err == nil
	})
	if !strings.Contains(got, "entities") {
		t.Errorf("read_graph through the TypeScript SDK client: %s", got)
	}
	stop()

	// The newer version: update writes it, the next start installs it,
	// and what changed of its tools is held until approved again.
	if out, err := toolshelfCmd("", "update", "server-memory", "--config", cfg); err != nil || !strings.Contains(out, older+" → 2026.8.31") {
		t.Fatalf("toolshelf update: %v\n%s", err, out)
	}
	url, health, _ = serve()
	testenv.Eventually(t, 4*time.Minute, "the updated server to start with its changed tools held", func() bool {
		h := getWith(t, health, token)
		return strings.Contains(h, `"quarantined"`) && strings.Contains(h, `"ready"`)
	})
	if out, err := call("read_graph"); err == nil {
		t.Fatalf("a changed tool was called before approval: %s", out)
	}
	// Every tool of the newer version gained annotations (readOnlyHint
	// and the like): tools diff names the field.
	diff, _ := toolshelfCmd("", "tools", "diff", "server-memory", "--config", cfg)
	t.Logf("tools diff after the update:\n%s", diff)
	if !strings.Contains(diff, "server-memory/read_graph: changed") || !strings.Contains(diff, "annotations.readOnlyHint: added true") || !strings.Contains(diff, "9 quarantined") {
		t.Errorf("tools diff after the update:\n%s", diff)
	}
	if out, err := toolshelfCmd("", "tools", "approve", "server-memory", "--config", cfg); err != nil {
		t.Fatalf("tools approve after the update: %v\n%s", err, out)
	}
	testenv.Eventually(t, time.Minute, "the changed tool, approved, to be called", func() bool {
		got, err = call("read_graph")
		return err == nil
	})
}

// older is the version of server-memory the registry's entries and
// testdata/registry/npm hold beside the pinned one.
const older = "2026.1.26"

// BenchmarkAddToFirstCall measures what a person waits from `toolshelf
// add` of a registry's server, from a cold cache, to its first tool call
// answered: add (the package installed in the server's sandbox from a
// local npm registry, its share reported apart), then serve until the
// first call returns. The tools are approved between the two, as a person
// would (not timed). docs/benchmarks.md has the figures.
func BenchmarkAddToFirstCall(b *testing.B) {
	requireClients(b)
	needBwrap(b)
	if _, err := exec.LookPath("slirp4netns"); err != nil {
		b.Skip("needs slirp4netns")
	}
	reg := registrytest.Serve(b, "../testdata/registry/servers.json")
	reg.ServeNPM(b, "../testdata/servers/package-lock.json", "../testdata/registry/npm/package-lock.json")
	took := regexp.MustCompile(`installed the server's package.* took=(\S+)`)
	// answer is what the person types at add's prompts ("" takes the
	// defaults; "projects" is a folder of the test's).
	for _, c := range []struct{ server, entry, answer, tool string }{
		{"server-memory", "io.github.modelcontextprotocol/server-memory@2026.8.31", "", "read_graph"},
		{"server-filesystem", "io.github.modelcontextprotocol/server-filesystem@2026.8.31", "projects", "list_allowed_directories"},
	} {
		b.Run(c.server, func(b *testing.B) {
			var add, install, first time.Duration
			for i := 0; i < b.N; i++ {
				dir := b.TempDir()
				projects := filepath.Join(dir, "projects")
				os.Mkdir(projects, 0o777)
				cfg := filepath.Join(dir, "servers.json")
				env := append(os.Environ(), "HOME="+dir, "XDG_STATE_HOME="+filepath.Join(dir, "state"), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
				run := func(stdin string, args ...string) string {
					cmd := exec.Command(toolshelf, args...)
					cmd.Env, cmd.Stdin = env, strings.NewReader(stdin)
					out, err := cmd.CombinedOutput()
					if err != nil {
						b.Fatalf("toolshelf %s: %v\n%s", args[0], err, out)
					}
					return string(out)
				}
				start := time.Now()
				answer := c.answer
				if answer == "projects" {
					answer = projects
				}
				said := run(answer+"\n", "add", c.entry, "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--yes", "--config", cfg)
				add += time.Since(start)
				m := took.FindStringSubmatch(said)
				if m == nil {
					b.Fatalf("add did not install:\n%s", said)
				}
				d, _ := time.ParseDuration(m[1])
				install += d
				run("", "tools", "approve", c.server, "--config", cfg)
				token := "bench-token-0123456789abcdef"
				os.WriteFile(filepath.Join(dir, "token"), []byte(token+"\n"), 0o600)
				start = time.Now()
				serve := exec.Command(toolshelf, "serve", "--config", cfg, "--http", "127.0.0.1:0", "--auth-token-file", filepath.Join(dir, "token"))
				serve.Env = env
				url := testenv.Listening(b, serve, "the gateway", testenv.URLLine)
				testenv.Eventually(b, 4*time.Minute, "the first call answered", func() bool {
					_, err := node(b, "node", "registry-client.mjs", url, token, "mcp__"+c.server+"__"+c.tool, "{}")
					return err == nil
				})
				first += time.Since(start)
				serve.Process.Signal(os.Interrupt)
				serve.Wait()
			}
			n := float64(b.N)
			b.ReportMetric(add.Seconds()/n, "add-s")
			b.ReportMetric(install.Seconds()/n, "install-s")
			b.ReportMetric(first.Seconds()/n, "serve-to-call-s")
			b.ReportMetric((add+first).Seconds()/n, "total-s")
		})
	}
}
