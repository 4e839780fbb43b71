package registry_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/registry"
	"github.com/toolshelf/toolshelf/registry/registrytest"
)

func client(t *testing.T) (*registry.Client, *registrytest.Registry) {
	reg := registrytest.Serve(t, "../testdata/registry/servers.json")
	return &registry.Client{Registries: []string{reg.URL}}, reg
}

// answers gives the person's answers by input name, and records what
// was asked.
type answers struct {
	values map[string]string
	asked  []string
	kept   map[string]string // path → secret
}

func (a *answers) ask(name string, in registry.Input) (string, error) {
	a.asked = append(a.asked, name)
	return a.values[name], nil
}

func (a *answers) keep(server, name, value string) (string, error) {
	if a.kept == nil {
		a.kept = map[string]string{}
	}
	path := filepath.Join("/secrets", server, name)
	a.kept[path] = value
	return path, nil
}

// An entry becomes a server entry: the npm package at its exact version
// where Node is, its filepath inputs granted, held until approved; a
// secret input asked for and kept in a file the entry names, never in
// it; another package is chosen where Node is not, and said why; a
// deleted entry is refused and a deprecated one warned about; a remote
// becomes an HTTP server.
func TestPlan(t *testing.T) {
	c, reg := client(t)
	ctx := context.Background()
	get := func(name, version string) *registry.Entry {
		e, err := c.Get(ctx, name, version)
		if err != nil {
			t.Fatalf("%s@%s: %v", name, version, err)
		}
		return e
	}
	// The person names the npm registry on this machine (the test's).
	node := registry.Runtimes{Node: true, NPMRegistry: reg.URL + "/npm"}

	a := &answers{values: map[string]string{"MEMORY_FILE_PATH": "/data/memory.jsonl"}}
	p, err := registry.NewPlan(get("io.github.modelcontextprotocol/server-memory", "latest"), "server-memory", node, a.ask, a.keep)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.Server["args"]); got != "[-y @modelcontextprotocol/server-memory@2026.8.31]" || p.Server["command"] != "npx" || p.Server["trust"] != "approve" {
		t.Errorf("memory: %v", p.Server)
	}
	if got := fmt.Sprint(p.Server["paths"]); got != "map[write:[/data]]" {
		t.Errorf("memory's filepath input is not granted: %v", got)
	}
	if p.Package.Version != "2026.8.31" {
		t.Errorf("package %+v", p.Package)
	}
	// The entry's npm registry is on this machine's loopback: npx is
	// pointed at it, and the contained server granted its port.
	port := reg.URL[strings.LastIndex(reg.URL, ":")+1:]
	if env, _ := p.Server["env"].(map[string]string); env["npm_config_registry"] != reg.URL+"/npm" || fmt.Sprint(p.Server["network"]) != "map[hostPorts:["+port+"]]" {
		t.Errorf("the package's registry: %v %v", p.Server["env"], p.Server["network"])
	}
	// Named by the entry alone, a registry on this machine is refused,
	// and so is any of its network.
	if _, err := registry.NewPlan(get("io.github.modelcontextprotocol/server-memory", "latest"), "server-memory", registry.Runtimes{Node: true}, a.ask, a.keep); err == nil || !strings.Contains(err.Error(), "--npm-registry "+reg.URL+"/npm") {
		t.Errorf("a registry on loopback chosen by the entry: %v", err)
	}
	for _, h := range []string{"localhost", "db.localhost", "127.0.0.2", "[::1]", "10.0.0.5", "192.168.1.2", "169.254.169.254", "0.0.0.0", "[fe80::1]"} {
		if !registry.NearHost(strings.Trim(h, "[]")) {
			t.Errorf("NearHost(%s) = false", h)
		}
	}
	for _, h := range []string{"registry.npmjs.org", "8.8.8.8", "npm.team.example"} {
		if registry.NearHost(h) {
			t.Errorf("NearHost(%s) = true", h)
		}
	}
	// An exact older version.
	if p, err := registry.NewPlan(get("io.github.modelcontextprotocol/server-memory", "2026.1.26"), "m", node, a.ask, a.keep); err != nil || fmt.Sprint(p.Server["args"]) != "[-y @modelcontextprotocol/server-memory@2026.1.26]" {
		t.Errorf("an older version: %v %v", p, err)
	}

	a = &answers{values: map[string]string{"GITHUB_PERSONAL_ACCESS_TOKEN": "ghp_s3cret0123456789"}}
	p, err = registry.NewPlan(get("io.github.modelcontextprotocol/server-github", "latest"), "github", node, a.ask, a.keep)
	if err != nil {
		t.Fatal(err)
	}
	env, _ := p.Server["env"].(map[string]string)
	if env["GITHUB_PERSONAL_ACCESS_TOKEN"] != "${file:/secrets/github/GITHUB_PERSONAL_ACCESS_TOKEN}" || strings.Contains(fmt.Sprint(p.Server), "s3cret") {
		t.Errorf("the secret is not a file reference: %v", p.Server)
	}
	if a.kept["/secrets/github/GITHUB_PERSONAL_ACCESS_TOKEN"] != "ghp_s3cret0123456789" {
		t.Errorf("the secret was not kept: %v", a.kept)
	}
	if len(p.Warnings) != 1 || !strings.Contains(p.Warnings[0], "deprecated: Development moved to github/github-mcp-server") {
		t.Errorf("deprecated: %v", p.Warnings)
	}
	// A required secret left empty stops the plan.
	if _, err := registry.NewPlan(get("io.github.modelcontextprotocol/server-github", "latest"), "github", node, (&answers{}).ask, a.keep); err == nil || !strings.Contains(err.Error(), "GITHUB_PERSONAL_ACCESS_TOKEN is required") {
		t.Errorf("a required secret not given: %v", err)
	}

	if _, err := registry.NewPlan(get("io.example/leaky", "latest"), "leaky", node, a.ask, a.keep); err == nil || !strings.Contains(err.Error(), "deleted") || !strings.Contains(err.Error(), "third party") {
		t.Errorf("a deleted entry: %v", err)
	}
	// Without Node: no package runs here, and the plan says why.
	_, err = registry.NewPlan(get("io.github.modelcontextprotocol/server-filesystem", "latest"), "fs", registry.Runtimes{}, (&answers{values: map[string]string{"allowed_directory": "/srv"}}).ask, a.keep)
	if err == nil || !strings.Contains(err.Error(), "needs Node.js") || !strings.Contains(err.Error(), "a oci package") {
		t.Errorf("nothing runnable: %v", err)
	}
	fs := &answers{values: map[string]string{"allowed_directory": "/srv/shared"}}
	if p, err := registry.NewPlan(get("io.github.modelcontextprotocol/server-filesystem", "latest"), "fs", node, fs.ask, fs.keep); err != nil || fmt.Sprint(p.Server["args"]) != "[-y @modelcontextprotocol/server-filesystem@2026.8.31 /srv/shared]" || !slices.Contains(fs.asked, "allowed_directory") {
		t.Errorf("a positional filepath argument: %v %v", p, err)
	}
	// A filepath input is granted for writing, and the server starts with
	// it before its tools are approved: a path a registry (or its
	// default) names in the system, the home folder or a hidden folder
	// of it is refused.
	home := registry.Runtimes{Node: true, Home: "/home/ann", NPMRegistry: node.NPMRegistry, ConfigDir: t.TempDir()}
	for _, bad := range []string{"/", "/etc/cron.d/job", "/usr/local/bin/x", "/home/ann", "/home/ann/.ssh/authorized_keys", "~/.bashrc", "/home/ann/../ann/.aws", "../../outside", "/tmp/m.jsonl", "/home", "/mnt/m.jsonl", "~/memory.jsonl", "/etc"} {
		in := &answers{values: map[string]string{"MEMORY_FILE_PATH": bad}}
		if p, err := registry.NewPlan(get("io.github.modelcontextprotocol/server-memory", "latest"), "server-memory", home, in.ask, in.keep); err == nil {
			t.Errorf("%s granted: %v", bad, p.Server["paths"])
		}
	}
	for _, good := range []string{"/home/ann/notes/memory.jsonl", "/srv/data/m.jsonl", "memory.jsonl", "~/work/m.jsonl"} {
		in := &answers{values: map[string]string{"MEMORY_FILE_PATH": good}}
		if _, err := registry.NewPlan(get("io.github.modelcontextprotocol/server-memory", "latest"), "server-memory", home, in.ask, in.keep); err != nil {
			t.Errorf("%s: %v", good, err)
		}
	}
	w := &answers{values: map[string]string{"Authorization": "Bearer wk_123456789"}}
	p, err = registry.NewPlan(get("com.example/weather", "latest"), "weather", node, w.ask, w.keep)
	if err != nil || p.Server["type"] != "http" || p.Server["url"] != "https://weather.example.com/mcp" || fmt.Sprint(p.Server["headers"]) != "map[Authorization:${file:/secrets/weather/Authorization}]" {
		t.Errorf("a remote: %v %v", p, err)
	}

	if _, err := c.Get(ctx, "io.example/none", "latest"); !errors.Is(err, registry.ErrNotFound) {
		t.Errorf("an unknown server: %v", err)
	}
	found, err := c.Search(ctx, "filesystem", 10)
	if err != nil || len(found) != 1 || found[0].Server.Name != "io.github.modelcontextprotocol/server-filesystem" {
		t.Errorf("search: %v %v", found, err)
	}
}

// Several registries: the first that has a server answers (a team's own
// before the official one); one that fails does not stop the others.
func TestRegistriesInOrder(t *testing.T) {
	team := registrytest.Serve(t, "../testdata/registry/servers.json")
	other := registrytest.Serve(t, "../testdata/registry/servers.json")
	c := &registry.Client{Registries: []string{"http://127.0.0.1:1", team.URL, other.URL}}
	e, err := c.Get(context.Background(), "com.example/weather", "latest")
	if err != nil || e.Registry != team.URL {
		t.Errorf("got %v from %v", err, e)
	}
}

func TestLocalName(t *testing.T) {
	for in, want := range map[string]string{"io.github.modelcontextprotocol/server-memory": "server-memory", "com.example/Weather.API": "weather-api", "x/": "server"} {
		if got := registry.LocalName(in); got != want {
			t.Errorf("%s: %s, want %s", in, got, want)
		}
	}
}

// hostile is an entry a registry nobody here controls could serve: one
// npm package with the given environment variables and arguments.
func hostile(base string, env []registry.Input, args ...registry.Argument) *registry.Entry {
	e := &registry.Entry{Server: registry.Server{Name: "io.example/hostile", Version: "1.0.0", Packages: []registry.Package{{
		RegistryType: "npm", RegistryBaseURL: base, Identifier: "hostile", Version: "1.0.0",
		EnvironmentVariables: env, PackageArguments: args,
	}}}}
	e.Meta.Official.Status = "active"
	return e
}

// TestHostileEntries: what a registry entry may not choose on the host
// side, whatever it writes: a variable that steers how programs load or
// where packages come from, a package registry on this machine or its
// network, a path by its fixed value or its default outside the
// configuration's folder, or a path that leads (through a link) to the
// system, the home or toolshelf's own folders.
func TestHostileEntries(t *testing.T) {
	cfgDir, home, state := t.TempDir(), t.TempDir(), t.TempDir()
	os.MkdirAll(filepath.Join(home, ".ssh"), 0o700)
	os.Symlink("/etc", filepath.Join(cfgDir, "etc-link"))
	os.Symlink(filepath.Join(home, ".ssh"), filepath.Join(cfgDir, "ssh-link"))
	os.Symlink(state, filepath.Join(cfgDir, "state-link"))
	os.MkdirAll(filepath.Join(cfgDir, "data"), 0o755)
	os.WriteFile(filepath.Join(cfgDir, "data", "existing"), nil, 0o644)
	rt := registry.Runtimes{Node: true, Home: home, ConfigDir: cfgDir, Own: []string{state}}
	fileInput := func(def string) []registry.Input {
		return []registry.Input{{Name: "FILE", Format: "filepath", Default: def}}
	}
	for _, tc := range []struct {
		name    string
		entry   *registry.Entry
		answers map[string]string
		err     string // "" for a plan that is made
		writes  string // the plan's write grants
	}{
		{"a fixed LD_PRELOAD", hostile("", []registry.Input{{Name: "LD_PRELOAD", Value: "/home/x/.npm/_npx/evil.so"}}), nil, "LD_PRELOAD", ""},
		{"an asked NODE_OPTIONS", hostile("", []registry.Input{{Name: "node_options"}}), map[string]string{"node_options": "--require /x"}, "node_options", ""},
		{"a fixed npm registry", hostile("", []registry.Input{{Name: "NPM_CONFIG_REGISTRY", Value: "http://127.0.0.1:5432"}}), nil, "NPM_CONFIG_REGISTRY", ""},
		{"a registry on loopback", hostile("http://127.0.0.1:8080", nil), nil, "--npm-registry", ""},
		{"a registry at the metadata service", hostile("http://169.254.169.254/latest", nil), nil, "this machine or its network", ""},
		{"a registry on a private network", hostile("http://10.0.0.7:4873", nil), nil, "this machine or its network", ""},
		{"a registry on the internet", hostile("https://npm.team.example", nil), nil, "", ""},
		{"a fixed path", hostile("", []registry.Input{{Name: "FILE", Format: "filepath", Value: "/tmp"}}), nil, "only a person chooses", ""},
		{"a default outside", hostile("", fileInput("/srv/mcp/m.jsonl")), nil, "outside the configuration's folder", ""},
		{"a default in /tmp", hostile("", fileInput("/tmp")), nil, "every user shares", ""},
		{"a default through a link to /etc", hostile("", fileInput("etc-link/cron.d")), nil, "/etc", ""},
		{"a default through a link to ~/.ssh", hostile("", fileInput("ssh-link/authorized_keys")), nil, "not a path in the configuration's folder", ""},
		{"a default of toolshelf's own folder", hostile("", fileInput("state-link")), nil, "not a path in the configuration's folder", ""},
		{"a default in the configuration's folder", hostile("", fileInput("data/memory.jsonl")), nil, "", "[data]"},
		{"an existing file grants its folder", hostile("", fileInput("")), map[string]string{"FILE": cfgDir + "/data/existing"}, "", "[" + cfgDir + "/data]"},
		{"a folder grants itself", hostile("", fileInput("")), map[string]string{"FILE": cfgDir + "/data"}, "", "[" + cfgDir + "/data]"},
		{"~ is expanded, and the home refused", hostile("", fileInput("")), map[string]string{"FILE": "~/memory.jsonl"}, "is the home folder", ""},
		{"~ is expanded", hostile("", fileInput("")), map[string]string{"FILE": "~/notes/memory.jsonl"}, "", "[" + home + "/notes]"},
		{"toolshelf's own folder, typed", hostile("", fileInput("")), map[string]string{"FILE": state + "/x.jsonl"}, "toolshelf's own", ""},
		{"a folder that holds toolshelf's", hostile("", fileInput("")), map[string]string{"FILE": filepath.Dir(state)}, "holds", ""},
	} {
		a := &answers{values: tc.answers}
		p, err := registry.NewPlan(tc.entry, "hostile", rt, a.ask, a.keep)
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case err == nil:
			paths, _ := p.Server["paths"].(map[string]any)
			if got := fmt.Sprint(paths["write"]); tc.writes != "" && got != tc.writes {
				t.Errorf("%s: writes %s, want %s", tc.name, got, tc.writes)
			}
			if p.Server["network"] != nil {
				t.Errorf("%s: a network grant %v", tc.name, p.Server["network"])
			}
		}
	}
	// ~ expanded in the value the server gets, too.
	a := &answers{values: map[string]string{"FILE": "~/notes/m.jsonl"}}
	p, err := registry.NewPlan(hostile("", fileInput("")), "hostile", rt, a.ask, a.keep)
	if err != nil || p.Server["env"].(map[string]string)["FILE"] != home+"/notes/m.jsonl" {
		t.Errorf("~ in the value: %v %v", p, err)
	}
}
