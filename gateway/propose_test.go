package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/rules"
	"github.com/toolshelf/toolshelf/upstream"
)

// fakeProposer offers fixed candidates and records what it installs.
type fakeProposer struct {
	mu        sync.Mutex
	searched  int
	installed []string
}

func (f *fakeProposer) Candidates(_ context.Context, need string) ([]Candidate, error) {
	f.mu.Lock()
	f.searched++
	f.mu.Unlock()
	return []Candidate{
		{Name: "io.example/forbidden", Version: "1.0.0", Description: "Notes, elsewhere", Status: "active", Runs: "npm forbidden@1.0.0"},
		{Name: "io.example/notes", Version: "2.1.0", Description: "Keeps notes", Status: "active", Runs: "npm notes-mcp@2.1.0"},
		{Name: "io.example/old-notes", Version: "0.9.0", Description: "Keeps notes", Status: "deprecated: use io.example/notes", Runs: "npm old-notes@0.9.0"},
	}, nil
}

func (f *fakeProposer) Install(_ context.Context, name string) (string, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.installed = append(f.installed, name)
	return "added " + name + ", held until approved", nil
}

// propose_server asks the person, with what each candidate would run and
// its status, and installs only what they choose; a candidate the rules
// forbid installing is not offered; a declined or unanswerable question
// installs nothing.
func TestProposeServer(t *testing.T) {
	srv, _ := mcptest.NewServer("mem", mcptest.SimpleTools("read"), nil)
	file := filepath.Join(t.TempDir(), "team.cedar")
	os.WriteFile(file, []byte(`forbid (principal, action == Action::"install", resource) when { resource.name == "io.example/forbidden" };`+"\n"), 0o644)
	live, err := rules.Open(file)
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool([]config.ServerConfig{inMemory("mem", srv)}, &upstream.Options{Policies: live})
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	pool.Wait(ctx)
	p := &fakeProposer{}
	g := newGateway(t, pool.Scope(nil), &Options{Proposer: p})

	var asked []string
	choose := "io.example/notes"
	cs := connect(t, g, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked = append(asked, req.Params.Message)
		if choose == "" {
			return &mcp.ElicitResult{Action: "decline"}, nil
		}
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"server": choose}}, nil
	}})
	names := listNames(t, cs)
	if !slices.Contains(names, toolPropose) {
		t.Fatalf("propose_server is not listed: %v", names)
	}
	res := call(t, cs, toolPropose, map[string]any{"need": "keep notes between sessions"})
	if res.IsError || !strings.Contains(text(res), "added io.example/notes") {
		t.Fatalf("an accepted proposal: %s", text(res))
	}
	if len(asked) != 1 || !strings.Contains(asked[0], "io.example/notes@2.1.0 (active)") || !strings.Contains(asked[0], "Runs npm notes-mcp@2.1.0") ||
		!strings.Contains(asked[0], "deprecated: use io.example/notes") || strings.Contains(asked[0], "io.example/forbidden") {
		t.Errorf("what the person was asked: %q", asked)
	}
	choose = ""
	res = call(t, cs, toolPropose, map[string]any{"need": "keep notes"})
	if res.IsError || !strings.Contains(text(res), "declined. Nothing was installed") {
		t.Errorf("a declined proposal: %s", text(res))
	}
	choose = "io.example/forbidden" // not offered: a client that answers it anyway
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolPropose, Arguments: map[string]any{"need": "keep notes"}}); err == nil && strings.Contains(text(res), "added") {
		t.Errorf("a forbidden server was installed: %s", text(res))
	}
	if slices.Equal(p.installed, []string{"io.example/notes"}) == false {
		t.Errorf("installed %v, want only the one the person chose", p.installed)
	}

	// A client that cannot ask its person installs nothing.
	plain := connect(t, g, nil)
	if res := call(t, plain, toolPropose, map[string]any{"need": "keep notes"}); !res.IsError || !strings.Contains(text(res), "cannot ask its person") {
		t.Errorf("a client without elicitation: %s", text(res))
	}
	if len(p.installed) != 1 {
		t.Errorf("installed %v", p.installed)
	}
}
