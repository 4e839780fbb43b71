package builtin

import (
	"context"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/upstream"
)

// The catalog was exported from exactly the versions pinned in
// testdata/servers/package.json; when a pin changes, scripts/builtin.sh
// must run again.
func TestVersionsMatchPins(t *testing.T) {
	data, err := os.ReadFile("../../testdata/servers/package.json")
	if err != nil {
		t.Fatal(err)
	}
	var pkg struct {
		Dependencies map[string]string `json:"dependencies"`
	}
	if err := json.Unmarshal(data, &pkg); err != nil {
		t.Fatal(err)
	}
	// Not a server: the TypeScript SDK the skills server of testdata
	// (servers/skills-server.mjs) is built on.
	delete(pkg.Dependencies, "@modelcontextprotocol/server")
	if diff := cmp.Diff(pkg.Dependencies, Versions()); diff != "" {
		t.Errorf("the built-in catalog is stale: run scripts/builtin.sh (-pinned +exported):\n%s", diff)
	}
}

func TestCatalog(t *testing.T) {
	c := Catalog()
	if c.Len() < 500 || len(c.ServerNames()) != 20 {
		t.Errorf("built-in catalog has %d tools of %d servers", c.Len(), len(c.ServerNames()))
	}
	if _, ok := c.Lookup("mcp__github__create_pull_request"); !ok {
		t.Error("no mcp__github__create_pull_request")
	}
}

// The committed catalog is what the pinned servers list today, started
// through upstream.Pool as a user's would be (at most MaxStarting at
// once), and a real call reaches one of them. This is the one test that
// starts every pinned server for the library; others use the committed
// catalog, which this test keeps true.
func TestMatchesLiveServers(t *testing.T) {
	testenv.RequireNPM(t, "testdata/servers")
	cfgs, err := config.LoadConfig("../../examples/servers.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	// Twenty real servers start here at once, a .NET one among them: on
	// a busy machine the slowest takes several times the default.
	timeout := testenv.Timeout(3 * config.DefaultTimeout)
	for i := range cfgs {
		cfgs[i].Timeout = timeout
		if cfgs[i].Name == "memory" {
			dir := testenv.WritableDir(t)
			cfgs[i].Env["MEMORY_FILE_PATH"] = dir + "/memory.jsonl"
			cfgs[i].WritePaths = []string{dir}
		}
	}
	p := upstream.NewPool(cfgs, &upstream.Options{RestartDelay: time.Hour, MaxStarting: 4})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	start := time.Now()
	p.Wait(ctx)
	took := time.Since(start)
	// A server that did not answer in time is a timeout, not a different
	// catalog.
	var slowest time.Duration
	for _, st := range p.Status() {
		if st.State != upstream.StateReady {
			t.Fatalf("%s did not start within %v (scale with $%s): %s %s", st.Name, timeout, testenv.ScaleEnv, st.State, st.Error)
		}
		slowest = max(slowest, st.ConnectTime)
	}
	t.Logf("%d servers, %d tools in %v (slowest server %v)", len(cfgs), p.Catalog().Len(), took, slowest)
	live := map[string]string{}
	for e := range p.Catalog().All() {
		live[e.Name] = string(e.Raw)
	}
	committed := map[string]string{}
	for e := range Catalog().All() {
		committed[e.Name] = string(e.Raw)
	}
	if diff := cmp.Diff(committed, live); diff != "" {
		t.Errorf("the built-in catalog differs from the live servers; run scripts/builtin.sh (-committed +live):\n%s", diff)
	}

	// A real call: server-memory stores and reads back an entity.
	args := json.RawMessage(`{"entities":[{"name":"toolshelf","entityType":"project","observations":["defers tool definitions"]}]}`)
	if _, err := p.Scope(nil).Call(ctx, "mcp__memory__create_entities", args); err != nil {
		t.Fatal(err)
	}
	res, err := p.Scope(nil).Call(ctx, "mcp__memory__open_nodes", json.RawMessage(`{"names":["toolshelf"]}`))
	if err != nil {
		t.Fatal(err)
	}
	if b, _ := json.Marshal(res); !strings.Contains(string(b), "defers tool definitions") {
		t.Errorf("open_nodes result: %s", b)
	}
}
