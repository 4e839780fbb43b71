package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/registry/registrytest"
)

// addEnv runs toolshelf with a state folder and a configuration of a
// test's own, and the answers given on stdin.
func addEnv(t *testing.T, dir string, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	vars := map[string]string{"XDG_STATE_HOME": filepath.Join(dir, "state"), "HOME": dir, "PATH": os.Getenv("PATH")}
	var out, errb bytes.Buffer
	code = runEnv(context.Background(), &env{stdin: strings.NewReader(stdin), stdout: &out, stderr: &errb, getenv: func(k string) string { return vars[k] }, held: &heldPaths{}}, args)
	return code, out.String(), errb.String()
}

// toolshelf add: a registry's server into the configuration at its exact
// version, held until approved, its origin and the package's integrity
// recorded; a secret asked for is kept in a file the configuration
// names, never written into it; a deleted entry, a name taken and a rule
// forbidding the install are refused; search-registry lists with status.
func TestAdd(t *testing.T) {
	t.Parallel()
	if !hasOnPath("npx") {
		t.Skip("add chooses the npm package only where npx is")
	}
	reg := registrytest.Serve(t, "../../testdata/registry/servers.json")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")

	code, out, errs := addEnv(t, dir, "", "add", "io.github.modelcontextprotocol/server-memory", "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--yes", "--config", cfg)
	if code != 0 || !strings.Contains(out, "added server-memory") || !strings.Contains(out, "tools approve server-memory") {
		t.Fatalf("add: %d\n%s\n%s", code, out, errs)
	}
	code, _, errs = addEnv(t, dir, "ghp_abcdefghijklmnop0123456789\n", "add", "io.github.modelcontextprotocol/server-github", "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--yes", "--config", cfg, "--name", "github")
	if code != 0 || !strings.Contains(errs, "deprecated: Development moved") {
		t.Fatalf("add a deprecated server: %d\n%s", code, errs)
	}
	data, _ := os.ReadFile(cfg)
	if strings.Contains(string(data), "ghp_abcdefghijklmnop") {
		t.Fatalf("the secret was written into the configuration:\n%s", data)
	}
	var doc struct {
		MCPServers map[string]struct {
			Command  string            `json:"command"`
			Args     []string          `json:"args"`
			Env      map[string]string `json:"env"`
			Trust    string            `json:"trust"`
			Registry map[string]string `json:"registry"`
		} `json:"mcpServers"`
	}
	json.Unmarshal(data, &doc)
	mem := doc.MCPServers["server-memory"]
	if mem.Command != "npx" || strings.Join(mem.Args, " ") != "-y @modelcontextprotocol/server-memory@2026.8.31" || mem.Trust != "approve" {
		t.Errorf("server-memory: %+v", mem)
	}
	if mem.Registry["version"] != "2026.8.31" || !strings.HasPrefix(mem.Registry["integrity"], "sha512-ljj/3S4aGjxdNSQWw6gucKKGnTLdBPWx") || mem.Registry["url"] != reg.URL {
		t.Errorf("server-memory's origin: %v", mem.Registry)
	}
	ref := doc.MCPServers["github"].Env["GITHUB_PERSONAL_ACCESS_TOKEN"]
	path, ok := strings.CutPrefix(ref, "${file:")
	path = strings.TrimSuffix(path, "}")
	if !ok {
		t.Fatalf("the secret is not a file reference: %q", ref)
	}
	if st, err := os.Stat(path); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("the secret's file: %v %v", st, err)
	}
	if b, _ := os.ReadFile(path); string(b) != "ghp_abcdefghijklmnop0123456789" {
		t.Errorf("the secret's file holds %q", b)
	}
	// The file reads back as a configuration, the added servers held.
	c, err := config.Load(cfg, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range c.Servers {
		if sc.Trust != "approve" || sc.Registry == nil {
			t.Errorf("%s: trust %q, registry %v", sc.Name, sc.Trust, sc.Registry)
		}
	}

	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"add", "io.example/leaky"}, "deleted"},
		{[]string{"add", "io.github.modelcontextprotocol/server-memory"}, `already has a server named "server-memory"`},
		{[]string{"add", "io.example/none"}, "not found"},
		{[]string{"add", "server-memory"}, "not a registry name"},
	} {
		code, _, errs := addEnv(t, dir, "", append(tc.args, "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--config", cfg)...)
		if code == 0 || !strings.Contains(errs, tc.want) {
			t.Errorf("%v: %d %s, want %q", tc.args, code, errs, tc.want)
		}
	}

	// A rule forbidding installs from outside the team's namespace.
	ruled := filepath.Join(dir, "ruled.json")
	os.WriteFile(filepath.Join(dir, "team.cedar"), []byte(`@message("only the team's own servers") forbid (principal, action == Action::"install", resource) unless { resource.name like "com.example/*" };`+"\n"), 0o644)
	os.WriteFile(ruled, []byte(`{"mcpServers": {}, "policies": ["team.cedar"]}`), 0o644)
	code, _, errs = addEnv(t, dir, "", "add", "io.github.modelcontextprotocol/server-memory", "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--yes", "--config", ruled)
	if code == 0 || !strings.Contains(errs, "only the team's own servers") {
		t.Errorf("a forbidden install: %d %s", code, errs)
	}
	code, _, errs = addEnv(t, dir, "Bearer wk_0123456789abcdef\n", "add", "com.example/weather", "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--yes", "--config", ruled)
	if code != 0 {
		t.Errorf("an allowed install: %d %s", code, errs)
	}

	// A rule allowing only the team's own registry.
	other := registrytest.Serve(t, "../../testdata/registry/servers.json")
	teamOnly := filepath.Join(dir, "team-only.json")
	os.WriteFile(filepath.Join(dir, "registry.cedar"), []byte(`@message("only from the team's registry") forbid (principal, action == Action::"install", resource) unless { context.args.registry == "`+reg.URL+`" };`+"\n"), 0o644)
	os.WriteFile(teamOnly, []byte(`{"mcpServers": {}, "policies": ["registry.cedar"]}`), 0o644)
	if code, _, errs := addEnv(t, dir, "", "add", "io.github.modelcontextprotocol/server-memory", "--registry", other.URL, "--npm-registry", other.URL+"/npm", "--yes", "--config", teamOnly); code == 0 || !strings.Contains(errs, "only from the team's registry") {
		t.Errorf("an install from another registry: %d %s", code, errs)
	}
	if code, _, errs := addEnv(t, dir, "", "add", "io.github.modelcontextprotocol/server-memory", "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--yes", "--config", teamOnly); code != 0 {
		t.Errorf("an install from the team's registry: %d %s", code, errs)
	}

	code, out, _ = addEnv(t, dir, "", "search-registry", "memory", "--registry", reg.URL)
	if code != 0 || !strings.Contains(out, "io.github.modelcontextprotocol/server-memory@2026.8.31  (active)") {
		t.Errorf("search-registry: %d\n%s", code, out)
	}
	if _, out, _ := addEnv(t, dir, "", "search-registry", "github", "--registry", reg.URL); !strings.Contains(out, "(deprecated: Development moved") {
		t.Errorf("search-registry shows no status: %s", out)
	}
}

func hasOnPath(name string) bool {
	for _, d := range filepath.SplitList(os.Getenv("PATH")) {
		if _, err := os.Stat(filepath.Join(d, name)); err == nil {
			return true
		}
	}
	return false
}

// outdated names a server with a newer version in its registry, and one
// whose version became deprecated or deleted, and keeps what it found for
// list; update moves a server to the latest version, its inputs kept,
// still held until approved; a deleted latest version is not taken.
func TestOutdatedAndUpdate(t *testing.T) {
	t.Parallel()
	if !hasOnPath("npx") {
		t.Skip("add chooses the npm package only where npx is")
	}
	reg := registrytest.Serve(t, "../../testdata/registry/servers.json")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	if code, _, errs := addEnv(t, dir, "/data/memory.jsonl\n", "add", "io.github.modelcontextprotocol/server-memory@2026.1.26", "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--yes", "--config", cfg, "--name", "memory"); code != 0 {
		t.Fatalf("add an older version: %s", errs)
	}
	if code, _, errs := addEnv(t, dir, "ghp_abcdefghijklmnop0123456789\n", "add", "io.github.modelcontextprotocol/server-github", "--registry", reg.URL, "--npm-registry", reg.URL+"/npm", "--yes", "--config", cfg); code != 0 {
		t.Fatalf("add: %s", errs)
	}
	code, out, errs := addEnv(t, dir, "", "outdated", "--config", cfg)
	if code != 0 || !strings.Contains(out, "memory (io.github.modelcontextprotocol/server-memory): 2026.1.26 → 2026.8.31") ||
		!strings.Contains(out, "2025.4.8 is deprecated: Development moved") {
		t.Errorf("outdated: %d\n%s\n%s", code, out, errs)
	}
	if notes := registryNotes(&env{getenv: func(k string) string { return map[string]string{"XDG_STATE_HOME": filepath.Join(dir, "state")}[k] }}); !strings.Contains(notes["server-github"], "deprecated in its registry") {
		t.Errorf("what list flags: %v", notes)
	}

	code, out, errs = addEnv(t, dir, "", "update", "memory", "--config", cfg)
	if code != 0 || !strings.Contains(out, "updated memory: io.github.modelcontextprotocol/server-memory 2026.1.26 → 2026.8.31") {
		t.Fatalf("update: %d\n%s\n%s", code, out, errs)
	}
	c, err := config.Load(cfg, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	for _, sc := range c.Servers {
		if sc.Name != "memory" {
			continue
		}
		if strings.Join(sc.Args, " ") != "-y @modelcontextprotocol/server-memory@2026.8.31" || sc.Registry.Version != "2026.8.31" || sc.Trust != "approve" ||
			!strings.HasPrefix(sc.Registry.Integrity, "sha512-ljj/") {
			t.Errorf("after update: %v %+v %s", sc.Args, sc.Registry, sc.Trust)
		}
	}
	if code, out, _ := addEnv(t, dir, "", "update", "--config", cfg); code != 0 || !strings.Contains(out, "every server added from a registry runs its latest version") {
		t.Errorf("update with nothing newer: %d %s", code, out)
	}

	// Checked again, each registry is asked what changed since: a server
	// nothing changed of is not asked for by name (memory, updated, is
	// asked once for its new version).
	addEnv(t, dir, "", "outdated", "--config", cfg)
	reg.Asked()
	if code, _, _ := addEnv(t, dir, "", "outdated", "--config", cfg); code != 0 {
		t.Fatal("outdated")
	}
	if asked := reg.Asked(); len(asked) != 0 {
		t.Errorf("servers asked by name though nothing changed: %v", asked)
	}
	// The registry deletes the server: outdated fails, naming it.
	reg.SetStatus("io.github.modelcontextprotocol/server-memory", "deleted", "Withdrawn: it wrote outside its file", time.Now())
	if code, out, _ := addEnv(t, dir, "", "outdated", "--config", cfg); code == 0 || !strings.Contains(out, "is deleted: Withdrawn") {
		t.Errorf("a deleted version: %d\n%s", code, out)
	}
	if asked := reg.Asked(); asked["io.github.modelcontextprotocol/server-memory"] == 0 || asked["io.github.modelcontextprotocol/server-github"] != 0 {
		t.Errorf("asked by name after a change: %v, want the changed server only", asked)
	}
}

// propose_server's candidates are the registries' servers that run here
// without a person's inputs (not deleted, no required value or secret);
// installing one writes it as add does, held.
func TestRegistryProposer(t *testing.T) {
	t.Parallel()
	if !hasOnPath("npx") {
		t.Skip("the candidates are npm packages, run where npx is")
	}
	reg := registrytest.Serve(t, "../../testdata/registry/servers.json")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	os.WriteFile(cfg, []byte(`{"mcpServers": {}}`), 0o644)
	vars := map[string]string{"XDG_STATE_HOME": filepath.Join(dir, "state"), envNPMRegistry: reg.URL + "/npm"}
	e := &env{stdin: strings.NewReader(""), stdout: &bytes.Buffer{}, stderr: &bytes.Buffer{}, getenv: func(k string) string { return vars[k] }, held: &heldPaths{}}
	c, err := registryClient(e, []string{reg.URL}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := &registryProposer{e: e, client: c, config: cfg}
	found, err := p.Candidates(context.Background(), "modelcontextprotocol")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, c := range found {
		names = append(names, c.Name)
	}
	if strings.Join(names, ",") != "io.github.modelcontextprotocol/server-memory" {
		t.Errorf("candidates %v, want only the server that needs no input", names)
	}
	said, err := p.Install(context.Background(), "io.github.modelcontextprotocol/server-memory")
	if err != nil || !strings.Contains(said, "held until approved") {
		t.Fatalf("install: %v %s", err, said)
	}
	if c, err := config.Load(cfg, func(string) string { return "" }); err != nil || len(c.Servers) != 1 || c.Servers[0].Trust != "approve" {
		t.Errorf("after install: %+v %v", c, err)
	}
	if _, err := p.Install(context.Background(), "io.github.modelcontextprotocol/server-github"); err == nil || !strings.Contains(err.Error(), "only a person gives") {
		t.Errorf("a server that needs a secret: %v", err)
	}
}

// A secret is kept only where it stays private: names that would leave
// the secrets folder, a folder that is a link, a file that is a link are
// refused; a file that was there with a wider mode is made private first.
func TestKeepSecretRefusesWhatItCannotKeepPrivate(t *testing.T) {
	dir := t.TempDir()
	secrets := filepath.Join(dir, "secrets")
	for _, tc := range []struct{ server, input string }{{"..", "TOKEN"}, {".", "TOKEN"}, {"a/../..", "TOKEN"}, {"srv", ".."}, {"srv", ""}} {
		if path, err := keepSecret(secrets, tc.server, tc.input, "s3cret-value"); err == nil {
			t.Errorf("server %q, input %q: kept at %s", tc.server, tc.input, path)
		}
	}
	// The input's slashes are no way out: they become part of one name.
	if path, err := keepSecret(secrets, "srv", "../../x", "s3cret-value"); err != nil || filepath.Dir(path) != filepath.Join(secrets, "srv") {
		t.Errorf("an input named ../../x: %s %v", path, err)
	}
	elsewhere := t.TempDir()
	os.MkdirAll(secrets, 0o700)
	os.Symlink(elsewhere, filepath.Join(secrets, "linked"))
	if _, err := keepSecret(secrets, "linked", "TOKEN", "s3cret-value"); err == nil {
		t.Error("a secret was written through a folder that is a link")
	}
	os.MkdirAll(filepath.Join(secrets, "srv2"), 0o700)
	os.Symlink(filepath.Join(elsewhere, "out"), filepath.Join(secrets, "srv2", "TOKEN"))
	if _, err := keepSecret(secrets, "srv2", "TOKEN", "s3cret-value"); err == nil {
		t.Error("a secret was written through a file that is a link")
	}
	if _, err := os.Stat(filepath.Join(elsewhere, "out")); err == nil {
		t.Error("the link's target was written")
	}
	wide := filepath.Join(secrets, "srv3", "TOKEN")
	os.MkdirAll(filepath.Dir(wide), 0o755)
	os.WriteFile(wide, []byte("old"), 0o644)
	if _, err := keepSecret(secrets, "srv3", "TOKEN", "s3cret-value"); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Dir(wide), wide} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm()&0o077 != 0 {
			t.Errorf("%s is not private: %v %v", p, fi.Mode(), err)
		}
	}
}

// add shows the plan and asks before writing: no answer or "n" writes
// nothing; "y" adds; a name given twice asks to replace; remove takes
// the server and the secrets kept for it away.
func TestAddAsksAndRemove(t *testing.T) {
	t.Parallel()
	if !hasOnPath("npx") {
		t.Skip("add chooses the npm package only where npx is")
	}
	reg := registrytest.Serve(t, "../../testdata/registry/servers.json")
	dir := t.TempDir()
	cfg := filepath.Join(dir, "servers.json")
	add := func(stdin string, extra ...string) (int, string) {
		args := append([]string{"add", "io.github.modelcontextprotocol/server-github", "--registry", reg.URL, "--npm-registry", reg.URL + "/npm", "--config", cfg, "--name", "gh"}, extra...)
		code, _, errs := addEnv(t, dir, stdin, args...)
		return code, errs
	}
	for _, no := range []string{"ghp_abcdefghijklmnop0123456789\n", "ghp_abcdefghijklmnop0123456789\nn\n"} {
		code, errs := add(no)
		if code == 0 || !strings.Contains(errs, "runs      npx -y @modelcontextprotocol/server-github@") || !strings.Contains(errs, "GITHUB_PERSONAL_ACCESS_TOKEN=${file:") || !strings.Contains(errs, "Add it? [y/N]") {
			t.Errorf("unconfirmed: %d\n%s", code, errs)
		}
		if _, err := os.Stat(cfg); err == nil {
			t.Fatalf("written without a yes")
		}
	}
	if code, errs := add("ghp_abcdefghijklmnop0123456789\ny\n"); code != 0 {
		t.Fatalf("confirmed: %d %s", code, errs)
	}
	if code, errs := add("n\n"); code == 0 || !strings.Contains(errs, `already has a server named "gh": replace it? [y/N]`) {
		t.Errorf("a name taken, not replaced: %d %s", code, errs)
	}
	if code, errs := add("y\nghp_zyxwvutsrqponmlk9876543210\ny\n"); code != 0 {
		t.Errorf("a name taken, replaced: %d %s", code, errs)
	}
	secrets := filepath.Join(dir, "state", "toolshelf", "secrets", "gh")
	if _, err := os.Stat(secrets); err != nil {
		t.Fatalf("no secrets kept: %v", err)
	}
	code, out, errs := addEnv(t, dir, "", "remove", "gh", "--config", cfg)
	if code != 0 || !strings.Contains(out, "removed gh from "+cfg) {
		t.Fatalf("remove: %d %s %s", code, out, errs)
	}
	if data, _ := os.ReadFile(cfg); strings.Contains(string(data), `"gh"`) {
		t.Errorf("still there: %s", data)
	}
	if _, err := os.Stat(secrets); !os.IsNotExist(err) {
		t.Errorf("its secrets are left: %v", err)
	}
	if code, _, errs := addEnv(t, dir, "", "remove", "gh", "--config", cfg); code == 0 || !strings.Contains(errs, `no server named "gh"`) {
		t.Errorf("remove again: %d %s", code, errs)
	}
}
