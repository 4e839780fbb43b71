package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/upstream"
)

// followerUnderTest runs a configFollower over a real pool, as serve
// does, looking every millisecond; its reports are kept for the test to
// wait on.
type followerUnderTest struct {
	path string
	pool *upstream.Pool
	mu   sync.Mutex
	last followed
	// heard gets a value at every report.
	heard chan struct{}
	cfg   *config.Config // the configuration applied last
}

func startFollower(t *testing.T, path string) *followerUnderTest {
	t.Helper()
	e := &env{getenv: func(string) string { return "" }}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := parseConfig(e, path, data)
	if err != nil {
		t.Fatal(err)
	}
	ft := &followerUnderTest{path: path, pool: upstream.NewPool(cfg.Servers, nil), heard: make(chan struct{}, 1)}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	wg.Go(func() { ft.pool.Run(ctx) })
	f := &configFollower{path: path, poll: time.Millisecond, logger: slog.New(slog.DiscardHandler),
		parse: func(b []byte) (*config.Config, error) { return parseConfig(e, path, b) },
		apply: func(cfg *config.Config) []string {
			ft.pool.Reconfigure(cfg.Servers)
			ft.mu.Lock()
			ft.cfg = cfg
			ft.mu.Unlock()
			return nil
		},
		report: func(st followed) {
			ft.pool.ConfigRefused(st.Err)
			ft.mu.Lock()
			ft.last = st
			ft.mu.Unlock()
			select {
			case ft.heard <- struct{}{}:
			default:
			}
		},
	}
	wg.Go(func() { f.run(ctx) })
	return ft
}

// settle waits until the follower has handled the file as it is now
// (applied or refused it), and returns what it made of it.
func (ft *followerUnderTest) settle(t *testing.T, files ...string) followed {
	t.Helper()
	data, err := os.ReadFile(ft.path)
	if err != nil {
		t.Fatal(err)
	}
	want := configPrint(data, files)
	deadline := time.After(testenv.Timeout(20 * time.Second))
	for {
		ft.mu.Lock()
		st := ft.last
		ft.mu.Unlock()
		if (st.Applied == want && st.Refused == "") || st.Refused == want {
			return st
		}
		select {
		case <-ft.heard:
		case <-deadline:
			t.Fatalf("timed out: the follower did not take %s; it reports %+v", data, st)
		}
	}
}

// served are the names of the pool's servers.
func (ft *followerUnderTest) served() []string {
	var names []string
	for _, st := range ft.pool.Status() {
		names = append(names, st.Name)
	}
	slices.Sort(names)
	return nonNil(names)
}

// servedConfig is a configuration of disabled servers (a pool holds them
// without starting them) of the names given.
func servedConfig(names []string) []byte {
	servers := map[string]any{}
	for _, n := range names {
		servers[n] = map[string]any{"command": "true", "disabled": true}
	}
	b, _ := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	return b
}

// TestFollowerServesTheLastValidConfiguration is the follower's property:
// whatever sequence of writes, partial writes, saves by rename, deletes
// and restores the file sees, the pool ends serving exactly the last
// configuration that loaded, and never one that did not.
func TestFollowerServesTheLastValidConfiguration(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 1))
	path := filepath.Join(t.TempDir(), "servers.json")
	first := []string{"s0"}
	if err := os.WriteFile(path, servedConfig(first), 0o644); err != nil {
		t.Fatal(err)
	}
	ft := startFollower(t, path)

	randomNames := func() []string {
		names := []string{}
		for i := range 5 {
			if rng.IntN(2) == 0 {
				names = append(names, fmt.Sprintf("s%d", i))
			}
		}
		return names
	}
	// candidates are the configurations the pool may serve at the end
	// when the file ends invalid: the last one it was seen to apply, and
	// every valid one written after.
	candidates := [][]string{first}
	var lastValid []byte = servedConfig(first)
	for step := range 200 {
		var content []byte // nil: the file is deleted
		var valid []string
		op := rng.IntN(6)
		switch op {
		case 0: // written in place
			valid = randomNames()
			content = servedConfig(valid)
			os.WriteFile(path, content, 0o644)
		case 1: // saved by rename
			valid = randomNames()
			content = servedConfig(valid)
			os.WriteFile(path+".swp", content, 0o644)
			os.Rename(path+".swp", path)
		case 2: // half a save
			full := servedConfig(randomNames())
			content = full[:rng.IntN(len(full)-1)]
			os.WriteFile(path, content, 0o644)
		case 3: // a whole file that does not load
			content = []byte(`{"mcpServers": {"bad": {"command": ""}}, "nonsense": 1}`)
			os.WriteFile(path, content, 0o644)
		case 4: // deleted
			os.Remove(path)
		case 5: // restored
			content = lastValid
			valid = nil
			var raw struct{ MCPServers map[string]any }
			json.Unmarshal(content, &raw)
			valid = []string{}
			for n := range raw.MCPServers {
				valid = append(valid, n)
			}
			slices.Sort(valid)
			os.WriteFile(path, content, 0o644)
		}
		if valid != nil {
			lastValid = content
			candidates = append(candidates, valid)
		}
		if content == nil || rng.IntN(2) == 0 {
			continue // the next change comes before this one settles
		}
		st := ft.settle(t)
		got := ft.served()
		if valid != nil {
			if st.Applied == "" || !slices.Equal(got, nonNil(valid)) {
				t.Fatalf("step %d (op %d): serving %v after %s settled; want %v", step, op, got, content, valid)
			}
			candidates = [][]string{valid}
		} else if st.Refused == "" || ft.pool.ConfigProblem() == "" {
			t.Fatalf("step %d (op %d): %q was not refused: %+v", step, op, content, st)
		}
	}
	// The file ends in a change that does not load: one of the
	// configurations it held is served.
	os.WriteFile(path, []byte(`{"mcpServers": {`), 0o644)
	ft.settle(t)
	if got := ft.served(); !slices.ContainsFunc(candidates, func(c []string) bool { return slices.Equal(nonNil(c), got) }) {
		t.Fatalf("serving %v; the configurations that loaded since the last one applied: %v", got, candidates)
	}
	// The file ends holding a configuration: served exactly.
	final := randomNames()
	os.WriteFile(path, servedConfig(final), 0o644)
	if st := ft.settle(t); st.Applied == "" {
		t.Fatalf("the last configuration was not applied: %+v", st)
	}
	if got := ft.served(); !slices.Equal(got, nonNil(final)) {
		t.Fatalf("serving %v; the file holds %v", got, final)
	}
	if p := ft.pool.ConfigProblem(); p != "" {
		t.Errorf("a problem is still reported once the file loads: %s", p)
	}
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// TestFollowerFollowsSecretFiles: a secret file the configuration names is
// followed as the file is: a new token in it is applied, though the
// configuration did not change; one that goes missing fails its server
// until it is back.
func TestFollowerFollowsSecretFiles(t *testing.T) {
	dir := t.TempDir()
	path, tok := filepath.Join(dir, "servers.json"), filepath.Join(dir, "tok")
	os.WriteFile(tok, []byte("one\n"), 0o600)
	os.WriteFile(path, []byte(`{"mcpServers": {"a": {"command": "true", "disabled": true, "env": {"TOKEN": "${file:tok}"}}}}`), 0o644)
	ft := startFollower(t, path)
	token := func() string {
		ft.mu.Lock()
		defer ft.mu.Unlock()
		if ft.cfg == nil {
			return ""
		}
		return ft.cfg.Servers[0].Env["TOKEN"]
	}
	os.WriteFile(tok, []byte("two\n"), 0o600)
	if st := ft.settle(t, tok); st.Applied == "" || token() != "two" {
		t.Fatalf("a new token in the secret file: %+v, applied %q", st, token())
	}
	// Without its file the server fails (the others would serve on).
	os.Remove(tok)
	if st := ft.settle(t, tok); st.Applied == "" || ft.cfg.Servers[0].Err == nil || !strings.Contains(ft.cfg.Servers[0].Err.Error(), "tok") {
		t.Fatalf("the secret file removed: %+v", st)
	}
	os.WriteFile(tok, []byte("three\n"), 0o600)
	if st := ft.settle(t, tok); st.Applied == "" || token() != "three" {
		t.Fatalf("the secret file back: %+v, applied %q", st, token())
	}
}

// unapplied names the parts serve reads at start that a change changed,
// and nothing for the same configuration read again.
func TestUnapplied(t *testing.T) {
	e := &env{getenv: func(string) string { return "" }}
	base := `{"mcpServers": {"a": {"command": "true"}}, "profiles": {"p": {"servers": ["a"], "tools": {"allow": ["a__*"]}}},
		"groups": {"g": {"description": "d", "tools": ["a__x"]}}, "search": {"results": "compact"},
		"identity": {"issuer": "https://idp.example", "audience": "toolshelf"}}`
	parse := func(s string) *config.Config {
		cfg, err := parseConfig(e, filepath.Join(t.TempDir(), "servers.json"), []byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	if got := unapplied(parse(base), parse(base)); len(got) != 0 {
		t.Errorf("the same configuration read twice: %v", got)
	}
	// What is applied in place (profiles' tools, groups, results) and
	// servers are not named; what is read at start is.
	changed := strings.NewReplacer(`"a__*"`, `"a__y"`, `"compact"`, `"full"`, `"command": "true"`, `"command": "false"`,
		`"description": "d"`, `"description": "e"`, `"audience": "toolshelf"`, `"audience": "other"`).Replace(base)
	if got := unapplied(parse(base), parse(changed)); !slices.Equal(got, []string{"identity"}) {
		t.Errorf("identity changed, and parts applied in place: %v", got)
	}
	// identity's own "claims" (who opens /mcp) are applied in place.
	claims := strings.Replace(base, `"audience": "toolshelf"`, `"audience": "toolshelf", "claims": {"groups": ["sre"]}`, 1)
	if got := unapplied(parse(base), parse(claims)); len(got) != 0 {
		t.Errorf("identity's claims changed: %v", got)
	}
}
