package e2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

// rpc2026 sends one MCP 2026-07-28 request, with the tasks extension
// declared, to a replica's base URL, and returns its result or error.
func rpc2026(t *testing.T, base, method, name string, params map[string]any) (map[string]any, map[string]any) {
	t.Helper()
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo":         map[string]any{"name": "tasks-e2e", "version": "1"},
		"io.modelcontextprotocol/clientCapabilities": map[string]any{"extensions": map[string]any{"io.modelcontextprotocol/tasks": map[string]any{}}}}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	req, _ := http.NewRequest(http.MethodPost, base+"/mcp", strings.NewReader(string(body)))
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name, "User-Agent": "tasks-e2e"} {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	got := string(raw)
	if i := strings.Index(got, "data: "); i >= 0 {
		got = strings.TrimSpace(got[i+len("data: "):])
	}
	var msg struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(got), &msg); err != nil {
		t.Fatalf("%s: %v: %s", method, err, got)
	}
	return msg.Result, msg.Error
}

// taskInFleet starts two replicas on a store of their own and a call
// through the first of a tool that answers after ms, answered with a
// task; it returns both replicas' base URLs, the replicas and the task's
// id, and the folder its server may write markers in.
func taskInFleet(t *testing.T, ms int) (first, other string, replicas []*exec.Cmd, id, markers string) {
	t.Helper()
	url := testenv.OwnPostgres(t).Database(t)
	dir := t.TempDir()
	markers = filepath.Join(dir, "markers")
	cfg := serverConfig(t, dir, "jobs", "slow,ask,wait", nil)
	lb, _, replicas := startFleet(t, url, cfg, 2, "--task-after", "100ms")
	res, rpcErr := rpc2026(t, lb.backends[0], "tools/call", "call_tool", map[string]any{"name": "call_tool",
		"arguments": map[string]any{"name": "mcp__jobs__slow", "arguments": map[string]any{"ms": ms}}})
	if res["resultType"] != "task" {
		t.Fatalf("a long call: %v %v", res, rpcErr)
	}
	id, _ = res["taskId"].(string)
	return lb.backends[0], lb.backends[1], replicas, id, markers
}

// A task in a fleet: started through one replica, it is answered by the
// other while it works and once done, and still when the replica that
// ran it has gone. The extension's own requester follows tasks started
// through one replica through the other: to a result, answering a
// question (sent on to the replica running the call), and cancelling
// (which cancels the server's call where it runs).
func TestTaskAcrossReplicas(t *testing.T) {
	t.Parallel()
	first, b, replicas, id, markers := taskInFleet(t, 3000)
	if got, e := rpc2026(t, b, "tasks/get", id, map[string]any{"taskId": id}); e != nil || got["status"] != "working" {
		t.Fatalf("the other replica, while the task works: %v %v", got, e)
	}
	var done map[string]any
	testenv.Eventually(t, 60*time.Second, "the task to complete", func() bool {
		done, _ = rpc2026(t, b, "tasks/get", id, map[string]any{"taskId": id})
		return done["status"] == "completed"
	})
	if !strings.Contains(fmt.Sprint(done["result"]), "slow") {
		t.Errorf("the result: %v", done)
	}
	t.Run("the extension's requester", func(t *testing.T) {
		requireClients(t)
		marker := filepath.Join(markers, "marker")
		out, err := node(t, "node", "tasks-client.mjs", first+"/mcp", "-", b+"/mcp", marker)
		if err != nil || !strings.Contains(out, `"cancelledAcross"`) {
			t.Fatalf("%v\n%s", err, out)
		}
		// The cancel reached the replica running the call, which
		// cancelled the server's call.
		testenv.Eventually(t, 60*time.Second, "the server's call to be cancelled", func() bool {
			b, _ := os.ReadFile(marker)
			return string(b) == "cancelled"
		})
	})
	// The replica that ran it goes; the task is still answered.
	replicas[0].Process.Kill()
	replicas[0].Wait()
	if got, e := rpc2026(t, b, "tasks/get", id, map[string]any{"taskId": id}); e != nil || got["status"] != "completed" {
		t.Errorf("after the replica that ran it has gone: %v %v", got, e)
	}
}

// A task whose replica is gone mid-call has failed, and another replica
// says so (the call is not sent again: it may have acted).
func TestTaskOfAReplicaGone(t *testing.T) {
	t.Parallel()
	_, b, replicas, id, _ := taskInFleet(t, 600000)
	replicas[0].Process.Kill()
	replicas[0].Wait()
	var got map[string]any
	testenv.Eventually(t, 60*time.Second, "the task to fail once its replica is silent", func() bool {
		got, _ = rpc2026(t, b, "tasks/get", id, map[string]any{"taskId": id})
		return got["status"] == "failed"
	})
	if !strings.Contains(fmt.Sprint(got["statusMessage"]), "is gone") || got["error"] == nil {
		t.Errorf("the failed task: %v", got)
	}
}

// Tasks with the extension's own requester (@modelcontextprotocol/
// ext-tasks, on the TypeScript SDK v2 speaking 2026-07-28): a slow tool
// found by search is called and becomes a task polled to its result; a
// quick call is answered at once; a task that asks the person is answered
// through tasks/update and resumes; a task is cancelled.
func TestTasksThroughTypeScriptSDK(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	const token = "tasks-token-1234"
	cfg := serverConfig(t, t.TempDir(), "jobs", "slow,ask", nil)
	url := runHTTPScript(t, gatewayScript(t, cfg, "--http", "127.0.0.1:0", "--auth-token", token, "--task-after", "300ms"))
	out, err := node(t, "node", "tasks-client.mjs", url, token)
	if err != nil || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("%v\n%s", err, out)
	}
}

// A server that runs tasks itself keeps them: here another toolshelf,
// over HTTP, which makes a task of a call not finished within 300ms; the
// gateway in front would wait a minute before making one of its own.
// The extension's requester, in front, gets the server's tasks, answers
// a question through them, and cancels one.
func TestTasksOfAServerThatRunsThem(t *testing.T) {
	t.Parallel() // waits on processes of its own
	requireClients(t)
	dir := t.TempDir()
	inner := runHTTPScript(t, gatewayScript(t, serverConfig(t, filepath.Join(dir), "jobs", "slow,ask,wait", nil),
		"--http", "127.0.0.1:0", "--mode", "all", "--task-after", "300ms"))
	front := filepath.Join(dir, "front.json")
	b, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"team": map[string]any{"url": inner}}})
	if err := os.WriteFile(front, b, 0o644); err != nil {
		t.Fatal(err)
	}
	const token = "front-token-1234"
	url := runHTTPScript(t, gatewayScript(t, front, "--http", "127.0.0.1:0", "--auth-token", token, "--task-after", "1m"))
	out, err := node(t, "node", "tasks-client.mjs", url, token)
	if err != nil || !strings.Contains(out, `"ok":true`) {
		t.Fatalf("%v\n%s", err, out)
	}
}
