package builtin

import (
	"context"
	"encoding/json"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"os"
	"testing"

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

// The committed catalog is what the pinned servers list today.
func TestMatchesLiveServers(t *testing.T) {
	testenv.RequireNPM(t, "testdata/servers")
	cfgs, err := upstream.LoadConfig("../../examples/servers.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	timeout := testenv.Timeout(upstream.DefaultTimeout)
	for i := range cfgs {
		cfgs[i].Timeout = timeout
	}
	p := upstream.NewPool(cfgs, nil)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); p.Run(ctx) }()
	defer func() { cancel(); <-done }()
	p.Wait(ctx)
	// A server that did not answer in time is a timeout, not a different
	// catalog.
	for _, st := range p.Status() {
		if st.State != upstream.StateReady {
			t.Fatalf("%s did not start within %v (scale with $%s): %s %s", st.Name, timeout, testenv.ScaleEnv, st.State, st.Error)
		}
	}
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
}
