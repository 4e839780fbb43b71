package registry_test

import (
	"context"
	"errors"
	"fmt"
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
	node := registry.Runtimes{Node: true}

	a := &answers{values: map[string]string{"MEMORY_FILE_PATH": "/data/memory.jsonl"}}
	p, err := registry.NewPlan(get("io.github.modelcontextprotocol/server-memory", "latest"), "server-memory", node, a.ask, a.keep)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(p.Server["args"]); got != "[-y @modelcontextprotocol/server-memory@2026.8.31]" || p.Server["command"] != "npx" || p.Server["trust"] != "approve" {
		t.Errorf("memory: %v", p.Server)
	}
	if got := fmt.Sprint(p.Server["paths"]); got != "map[write:[/data/memory.jsonl]]" {
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
	home := registry.Runtimes{Node: true, Home: "/home/ann"}
	for _, bad := range []string{"/", "/etc/cron.d/job", "/usr/local/bin/x", "/home/ann", "/home/ann/.ssh/authorized_keys", "~/.bashrc", "/home/ann/../ann/.aws", "../../outside"} {
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
