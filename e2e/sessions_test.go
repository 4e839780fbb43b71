package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
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
	lb, front, _ := startFleet(t, url, testenv.ScaledConfig(t, src, config.DefaultTimeout), 3)
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

	db := testenv.SQL(t, url)
	var holder string
	err := db.QueryRow(ctx, "SELECT r.address FROM sessions s JOIN replicas r ON r.id = s.owner WHERE s.id = $1", cs.ID()).Scan(&holder)
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
	if err := db.QueryRow(ctx, "SELECT r.address FROM sessions s JOIN replicas r ON r.id = s.owner WHERE s.id = $1", cs.ID()).Scan(&owner); err != nil || owner == holder {
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

// A request the holder of its session may already have acted on is not
// sent again when the holder dies mid-request: the replica that relayed
// it takes the session over and answers 502 (the client may send it
// again), and the server saw the call once. The session taken over is
// started again from the client's own initialize: its client info is in
// the audit records of the calls that follow.
func TestRequestNotSentTwice(t *testing.T) {
	t.Parallel()
	url := testenv.Postgres(t)
	dir := t.TempDir()
	cfg := serverConfig(t, dir, "tracker", "wait_counted,create_ticket", nil)
	lb, _, replicas := startFleet(t, url, cfg, 2, "--audit", "store")
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	holder, relay := lb.backends[0]+"/mcp", lb.backends[1]+"/mcp"
	code, body, session, err := testenv.PostMCP(ctx, holder, "", "", []byte(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}},"clientInfo":{"name":"own-client","version":"7.1"}}}`))
	if err != nil || code != http.StatusOK || session == "" {
		t.Fatalf("initialize: %d %s %v", code, body, err)
	}
	if code, body, _, err := testenv.PostMCP(ctx, holder, "", session, []byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)); err != nil || code >= 300 {
		t.Fatalf("initialized: %d %s %v", code, body, err)
	}
	marker := filepath.Join(dir, "markers", "calls")
	call := fmt.Sprintf(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__tracker__wait_counted","arguments":{"marker":%q}}}}`, marker)
	type answer struct {
		code int
		body string
		err  error
	}
	answered := make(chan answer, 1)
	go func() {
		code, body, _, err := testenv.PostMCP(ctx, relay, "", session, []byte(call))
		answered <- answer{code, body, err}
	}()
	testenv.Eventually(t, 30*time.Second, "the call to reach the server through the holder", func() bool {
		b, _ := os.ReadFile(marker)
		return strings.Count(string(b), "started") == 1
	})
	// The premise: the call runs on the holder. On a machine so loaded
	// that the holder missed three heartbeats, the relaying replica took
	// it for gone and the session over (as designed), and the call runs
	// there: then there is nothing to test.
	var holderAddress string
	if err := testenv.SQL(t, url).QueryRow(ctx, "SELECT r.address FROM sessions s JOIN replicas r ON r.id = s.owner WHERE s.id = $1", session).Scan(&holderAddress); err != nil {
		t.Fatal(err)
	}
	if holderAddress != lb.backends[0] {
		t.Skipf("the holder (%s) was taken for gone under load and %s holds the session: the call does not run on the replica this test kills", lb.backends[0], holderAddress)
	}
	replicas[0].Process.Kill()
	replicas[0].Wait()
	var a answer
	select {
	case a = <-answered:
	case <-ctx.Done():
		t.Fatal("timed out waiting for the relayed call's answer: was it sent again?")
	}
	if a.err != nil || a.code != http.StatusBadGateway || !strings.Contains(a.body, "may be sent again") {
		t.Errorf("the relayed call when its holder died: %d %q %v", a.code, a.body, a.err)
	}
	if b, _ := os.ReadFile(marker); strings.Count(string(b), "started") != 1 {
		t.Errorf("the server saw the call %d times", strings.Count(string(b), "started"))
	}

	// The session goes on, on the replica that took it over, as the
	// client's own.
	code, body, _, err = testenv.PostMCP(ctx, relay, "", session, []byte(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__tracker__create_ticket","arguments":{"title":"x"}}}}`))
	if err != nil || code != http.StatusOK || !strings.Contains(body, "create_ticket") {
		t.Fatalf("a call after the takeover: %d %s %v", code, body, err)
	}
	db := testenv.SQL(t, url)
	var client, version string
	testenv.Eventually(t, 30*time.Second, "the call's audit record", func() bool {
		err := db.QueryRow(ctx, `SELECT coalesce(record->>'client', ''), coalesce(record->>'clientVersion', '') FROM audit_records
			WHERE record->>'tool' = 'mcp__tracker__create_ticket' ORDER BY id DESC LIMIT 1`).Scan(&client, &version)
		return err == nil
	})
	if client != "own-client" || version != "7.1" {
		t.Errorf("the session taken over serves client %q %q, not the client's own initialize", client, version)
	}
}
