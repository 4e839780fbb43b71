package e2e

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/upstream"
)

// Three replicas with sessions on one store, behind a round-robin
// balancer, serve the TypeScript SDK's client as one gateway: each of its
// requests lands on the next replica, and the one holding its session
// answers. It lists and gets server-everything's prompts, reads a
// resource, answers the sampling request the server sends on the stream
// of a call (its answer is a request of its own, which lands on another
// replica) and gets the progress of a long operation.
func TestSessionsAcrossReplicas(t *testing.T) {
	t.Parallel()
	requireClients(t)
	url := testenv.Postgres(t)
	src, _ := filepath.Abs("testdata/everything.json")
	lb, front, _ := startFleet(t, url, testenv.ScaledConfig(t, src, upstream.DefaultTimeout), 3)
	out, err := node(t, "node", "everything-client.mjs", "http", front+"/mcp")
	if err != nil || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("%v\n%s", err, out)
	}
	lb.checkEveryReplicaServed(t)
}

// A session outlives the replica that held it: killed (SIGKILL) while a
// second client keeps calling, its sessions are taken over by the replica
// the balancer sends their next request to, and both clients carry on
// with the session ids they had, and the session the tools its search
// added to its list (--activate).
func TestSessionOutlivesItsReplica(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	cfg := serverConfig(t, t.TempDir(), "tracker", "create_ticket,close_ticket", nil)
	lb, front, replicas := startFleet(t, url, cfg, 3, "--activate")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	call := func(cs *mcp.ClientSession) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__tracker__create_ticket", "arguments": map[string]any{"text": "x"}}})
		if err == nil && res.IsError {
			t.Errorf("call: %s", text(res))
		}
		return err
	}
	cs, busy := connectMCP(t, ctx, front+"/mcp"), connectMCP(t, ctx, front+"/mcp")
	// --activate: the session's search adds the tool it found to its
	// list, which the session keeps when it moves.
	listed := func() bool {
		t.Helper()
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range res.Tools {
			if tool.Name == "mcp__tracker__close_ticket" {
				return true
			}
		}
		return false
	}
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "search_tools", Arguments: map[string]any{"query": "close a ticket", "limit": 1}}); err != nil || res.IsError || !strings.Contains(text(res), "activated") {
		t.Fatalf("search: %v %s", err, text(res))
	}
	if !listed() {
		t.Fatal("the tool the search found is not in the session's list")
	}
	for range 6 {
		if err := call(cs); err != nil {
			t.Fatal(err)
		}
	}
	lb.checkEveryReplicaServed(t)

	db := openDB(t, ctx, url)
	var holder string
	err := db.Pool().QueryRow(ctx, "SELECT r.address FROM sessions s JOIN replicas r ON r.id = s.owner WHERE s.id = $1", cs.ID()).Scan(&holder)
	if err != nil {
		t.Fatalf("the session's replica in the store: %v", err)
	}

	// The other client keeps calling while the holder is killed: calls in
	// flight on it may fail; none may fail after.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-stop:
				return
			default:
				call(busy)
			}
		}
	}()
	for i, b := range lb.backends {
		if b == holder {
			replicas[i].Process.Kill()
			replicas[i].Wait()
		}
	}
	for i := range 6 {
		if err := call(cs); err != nil {
			t.Fatalf("call %d after the session's replica was killed: %v", i, err)
		}
	}
	if !listed() {
		t.Error("the session taken over lost the tool its search had added to its list")
	}
	close(stop)
	wg.Wait()
	for i := range 3 {
		if err := call(busy); err != nil {
			t.Fatalf("the busy client's call %d after the kill: %v", i, err)
		}
	}
	var owner string
	if err := db.Pool().QueryRow(ctx, "SELECT r.address FROM sessions s JOIN replicas r ON r.id = s.owner WHERE s.id = $1", cs.ID()).Scan(&owner); err != nil || owner == holder {
		t.Errorf("the session is held by %q (%v), not by a living replica", owner, err)
	}
}

// A client on MCP 2026-07-28 answers a server's question in a second
// request (an input-required round); behind the balancer, in front of
// stateless replicas, that request lands on another replica than the one
// running the call, which sends it on.
func TestRoundResumedOnAnotherReplica(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "servers.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"fx": map[string]any{
		"command": exe, "timeout": testenv.Timeout(20 * time.Second).String(), "env": map[string]string{mcptest.ModeEnv: "fixture"},
	}}})
	if err := os.WriteFile(cfg, b, 0o644); err != nil {
		t.Fatal(err)
	}
	lb, front, _ := startFleet(t, url, cfg, 3, "--stateless")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	var asked int
	c := mcp.NewClient(&mcp.Implementation{Name: "rounds", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked++
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada", "email": "ada@example.com"}}, nil
		},
	})
	cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: front + "/mcp"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
		t.Fatalf("the client negotiated %s", v)
	}
	for i := range 3 {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "call_tool", Arguments: map[string]any{"name": "mcp__fx__test_elicitation", "arguments": map[string]any{"message": "who are you?"}}})
		if err != nil || res.IsError || !strings.Contains(text(res), "action=accept") || !strings.Contains(text(res), "ada@example.com") {
			t.Fatalf("call %d: %v %s", i, err, text(res))
		}
	}
	if asked != 3 {
		t.Errorf("the client was asked %d times, want 3", asked)
	}
	lb.checkEveryReplicaServed(t)
}

// serve --catalog with a store uses the store (learning, audit), not
// ignores it; with no servers there are no sign-ins to keep there.
func TestServeCatalogWithStore(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	cmd := exec.Command(toolshelf, "serve", "--catalog", "../internal/builtin/catalog.json", "--store", url)
	cmd.Stdin = strings.NewReader("") // the client leaves at once
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), `msg="shared store"`) {
		t.Errorf("%v\n%.500s", err, out)
	}
}
