package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/policy"
)

// taskClient speaks MCP 2026-07-28 with the tasks extension over HTTP,
// by hand, to test what a well-behaved client does not send (the
// extension's own requester drives the gateway in e2e).
type taskClient struct {
	t     *testing.T
	url   string
	agent string // the User-Agent, which is part of who the caller is
	tasks bool   // declares the extension
}

func (c *taskClient) do(method, name string, params map[string]any) (result map[string]any, rpcErr map[string]any) {
	c.t.Helper()
	caps := map[string]any{"elicitation": map[string]any{"form": map[string]any{}}}
	if c.tasks {
		caps["extensions"] = map[string]any{tasksExtension: map[string]any{}}
	}
	params["_meta"] = map[string]any{"io.modelcontextprotocol/protocolVersion": "2026-07-28",
		"io.modelcontextprotocol/clientInfo": map[string]any{"name": "tasks-test", "version": "1"}, "io.modelcontextprotocol/clientCapabilities": caps}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": params})
	hdr := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": method, "Mcp-Name": name, "User-Agent": c.agent}
	_, got, err := postWith(c.url+"/mcp", string(body), hdr)
	if err != nil {
		c.t.Fatal(err)
	}
	if i := strings.Index(got, "data: "); i >= 0 { // an event stream
		got = strings.TrimSpace(got[i+len("data: "):])
	}
	var resp struct {
		Result map[string]any `json:"result"`
		Error  map[string]any `json:"error"`
	}
	if err := json.Unmarshal([]byte(got), &resp); err != nil {
		c.t.Fatalf("%s: %v: %s", method, err, got)
	}
	return resp.Result, resp.Error
}

func (c *taskClient) call(tool string, args map[string]any) map[string]any {
	c.t.Helper()
	res, e := c.do("tools/call", toolCall, map[string]any{"name": toolCall, "arguments": map[string]any{"name": tool, "arguments": args}})
	if e != nil {
		c.t.Fatalf("call %s: %v", tool, e)
	}
	return res
}

// until polls tasks/get until the task has status.
func (c *taskClient) until(id, status string) map[string]any {
	c.t.Helper()
	var last map[string]any
	testenv.Eventually(c.t, 30*time.Second, "task "+id+" to be "+status, func() bool {
		res, e := c.do("tasks/get", id, map[string]any{"taskId": id})
		last = res
		return e == nil && res["status"] == status
	})
	return last
}

// addJobs adds the tools of the tasks tests to srv: "slow_report", which
// answers (with a link to an app) once release is closed, and "stuck",
// which works until cancelled and then closes the channel returned.
func addJobs(srv *mcp.Server, release <-chan struct{}) (stopped <-chan struct{}) {
	mcp.AddTool(srv, &mcp.Tool{Name: "slow_report", Description: "Build a slow report"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		select {
		case <-release:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "the report"}, &mcp.ResourceLink{URI: "ui://report.html", Name: "the report's view"}}}, nil, nil
	})
	done := make(chan struct{})
	mcp.AddTool(srv, &mcp.Tool{Name: "stuck", Description: "Work until cancelled"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		<-ctx.Done()
		close(done)
		return nil, nil, ctx.Err()
	})
	return done
}

// A long call of a client that takes tasks is answered with a task, which
// the client polls to its result; a quick one is answered as it is; a
// call that needs the person's input makes its task input_required, and
// tasks/update answers it; tasks/cancel ends one; nobody else reads a
// task; a client without the extension waits for its result.
func TestTasks(t *testing.T) {
	release, working := make(chan struct{}), make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "jobs", Version: "1"}, nil)
	stopped := addJobs(srv, release)
	mcp.AddTool(srv, &mcp.Tool{Name: "quick", Description: "Answer at once"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "quick answer"}}}, nil, nil
	})
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greet the person by the name they give"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		// Asked as a server of MCP 2026-07-28 asks (the gateway's pool
		// speaks it to this server): in the result, then called again
		// with the answer.
		answer, ok := req.Params.InputResponses["name"].(*mcp.ElicitResult)
		if !ok {
			// Some work first: the client gets a task before the question.
			select {
			case <-working:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{
				"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}, "required": []string{"name"}}}}}, nil, nil
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprint("hello ", answer.Content["name"])}}}, nil, nil
	})
	jobs := inMemory("jobs", srv)
	g, _ := gatewayFor(t, &Options{TaskAfter: 50 * time.Millisecond}, jobs)
	url := httpGateway(t, g, nil)
	c := &taskClient{t: t, url: url, agent: "alice's agent", tasks: true}

	res := c.call("mcp__jobs__quick", map[string]any{})
	if res["resultType"] == "task" || !strings.Contains(fmt.Sprint(res["content"]), "quick answer") {
		t.Errorf("a quick call: %v", res)
	}

	res = c.call("mcp__jobs__slow_report", map[string]any{})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" || res["status"] != "working" || res["pollIntervalMs"] == nil {
		t.Fatalf("a long call: %v", res)
	}
	if got, _ := c.do("tasks/get", id, map[string]any{"taskId": id}); got["status"] != "working" || got["resultType"] != "complete" {
		t.Errorf("tasks/get while it works: %v", got)
	}
	other := &taskClient{t: t, url: url, agent: "mallory's agent", tasks: true}
	if got, e := other.do("tasks/get", id, map[string]any{"taskId": id}); e == nil {
		t.Errorf("another caller read the task: %v", got)
	}
	// The task's id is its Mcp-Name (what a balancer routes by), and
	// tasks/* are the extension's: for a client that declares it.
	if _, e := c.do("tasks/get", "another-task", map[string]any{"taskId": id}); e == nil || e["code"] != float64(-32020) {
		t.Errorf("an Mcp-Name other than the task: %v", e)
	}
	if _, e := (&taskClient{t: t, url: url, agent: c.agent}).do("tasks/get", id, map[string]any{"taskId": id}); e == nil || e["code"] != float64(-32021) ||
		!strings.Contains(fmt.Sprint(e["data"]), tasksExtension) {
		t.Errorf("tasks/get from a client without the extension: %v", e)
	}
	// Task news on a listen stream, asked without the extension.
	if _, e := (&taskClient{t: t, url: url, agent: c.agent}).do("subscriptions/listen", "", map[string]any{"notifications": map[string]any{"taskIds": []string{id}}}); e == nil || e["code"] != float64(-32021) {
		t.Errorf("listening to a task without the extension: %v", e)
	}
	// The methods of the 2025-11-25 tasks are gone.
	for _, m := range []string{"tasks/list", "tasks/result"} {
		if _, e := c.do(m, id, map[string]any{"taskId": id}); e == nil || e["code"] != float64(-32601) {
			t.Errorf("%s: %v, want method not found", m, e)
		}
	}
	close(release)
	done := c.until(id, "completed")
	if !strings.Contains(fmt.Sprint(done["result"]), "the report") {
		t.Errorf("the completed task: %v", done)
	}

	res = c.call("mcp__jobs__greet", map[string]any{})
	id, _ = res["taskId"].(string)
	if res["resultType"] != "task" {
		t.Fatalf("a call that asks: %v", res)
	}
	close(working)
	asking := c.until(id, "input_required")
	reqs, _ := asking["inputRequests"].(map[string]any)
	if len(reqs) != 1 {
		t.Fatalf("input requests: %v", asking)
	}
	answers := map[string]any{}
	for key := range reqs {
		answers[key] = map[string]any{"action": "accept", "content": map[string]any{"name": "Ada"}}
	}
	if _, e := c.do("tasks/update", id, map[string]any{"taskId": id, "inputResponses": answers}); e != nil {
		t.Fatalf("tasks/update: %v", e)
	}
	if done := c.until(id, "completed"); !strings.Contains(fmt.Sprint(done["result"]), "hello Ada") {
		t.Errorf("after the answer: %v", done)
	}

	res = c.call("mcp__jobs__stuck", map[string]any{})
	id, _ = res["taskId"].(string)
	if _, e := c.do("tasks/cancel", id, map[string]any{"taskId": id}); e != nil {
		t.Fatalf("tasks/cancel: %v", e)
	}
	c.until(id, "cancelled")
	select {
	case <-stopped: // the server's call was cancelled too
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Error("the server's call goes on after tasks/cancel")
	}

	// A client without the extension waits for its call.
	plain := &taskClient{t: t, url: url, agent: "bob's agent"}
	res = plain.call("mcp__jobs__quick", map[string]any{})
	if res["resultType"] == "task" {
		t.Errorf("a task for a client without the extension: %v", res)
	}
}

// A server that runs tasks itself (here another gateway, over HTTP with
// MCP 2026-07-28, which answers a long call with a task) keeps the task:
// the gateway in front answers its client with a task of its own that
// follows the server's, relaying tasks/get, tasks/update and tasks/cancel
// to it. A client without the extension still gets the whole result.
func TestTasksOfAServerThatRunsThem(t *testing.T) {
	release := make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "jobs", Version: "1"}, nil)
	stopped := addJobs(srv, release)
	jobs := inMemory("jobs", srv)
	// The server: a gateway that lists its tools and runs long calls as
	// tasks of its own.
	theirs := &memoryTasks{}
	inner, _ := gatewayFor(t, &Options{Settings: policy.Settings{Mode: policy.ModeStandard}, TaskAfter: 50 * time.Millisecond, Tasks: theirs}, jobs)
	team := config.ServerConfig{Name: "team", URL: httpGateway(t, inner, nil) + "/mcp"}
	// In front: a gateway that would wait a minute before making a task
	// of its own.
	g, _ := gatewayFor(t, &Options{TaskAfter: time.Minute}, team)
	url := httpGateway(t, g, nil)
	c := &taskClient{t: t, url: url, agent: "alice's agent", tasks: true}

	res := c.call("mcp__team__mcp__jobs__slow_report", map[string]any{})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" || id == "" || res["status"] != "working" {
		t.Fatalf("a call the server makes a task of: %v", res)
	}
	theirs.mu.Lock()
	held := len(theirs.m)
	theirs.mu.Unlock()
	if held != 1 {
		t.Fatalf("the server holds %d tasks; the gateway in front made one of its own instead of following the server's", held)
	}
	if got, e := c.do("tasks/get", id, map[string]any{"taskId": id}); e != nil || got["status"] != "working" || got["taskId"] != id {
		t.Errorf("tasks/get while it works: %v %v", got, e)
	}
	close(release)
	done := c.until(id, "completed")
	if !strings.Contains(fmt.Sprint(done["result"]), "the report") || done["taskId"] != id {
		t.Errorf("the completed task: %v", done)
	}
	// An app the result names is named as this gateway serves it.
	if got := fmt.Sprint(done["result"]); !strings.Contains(got, "ui://team/") {
		t.Errorf("the result's app link: %v", got)
	}
	if got, e := (&taskClient{t: t, url: url, agent: "mallory's agent", tasks: true}).do("tasks/get", id, map[string]any{"taskId": id}); e == nil {
		t.Errorf("another caller read the task: %v", got)
	}

	res = c.call("mcp__team__mcp__jobs__stuck", map[string]any{})
	id, _ = res["taskId"].(string)
	if res["resultType"] != "task" {
		t.Fatalf("a stuck call: %v", res)
	}
	if _, e := c.do("tasks/cancel", id, map[string]any{"taskId": id}); e != nil {
		t.Fatalf("tasks/cancel: %v", e)
	}
	c.until(id, "cancelled")
	select {
	case <-stopped: // the server's call was cancelled, on the server
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Error("the server's call goes on after tasks/cancel")
	}

	// A client without the extension: the server is not asked for a
	// task, and the call is answered in full.
	plain := &taskClient{t: t, url: url, agent: "bob's agent"}
	if res := plain.call("mcp__team__mcp__jobs__slow_report", map[string]any{}); res["resultType"] == "task" || !strings.Contains(fmt.Sprint(res["content"]), "the report") {
		t.Errorf("a client without the extension: %v", res)
	}
}

// One caller's calls running as tasks are bounded: past the bound a call
// is refused, not started; another caller is not held up, and once a
// call ends the caller may start another.
func TestTasksPerCaller(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "jobs", Version: "1"}, nil)
	release := make(chan struct{})
	addJobs(srv, release)
	g, _ := gatewayFor(t, &Options{TaskAfter: 50 * time.Millisecond, TasksPerCaller: 2}, inMemory("jobs", srv))
	url := httpGateway(t, g, nil)
	alice := &taskClient{t: t, url: url, agent: "alice's agent", tasks: true}
	var ids []string
	for range 2 {
		res := alice.call("mcp__jobs__slow_report", map[string]any{})
		if res["resultType"] != "task" {
			t.Fatalf("a long call: %v", res)
		}
		ids = append(ids, res["taskId"].(string))
	}
	_, e := alice.do("tools/call", toolCall, map[string]any{"name": toolCall, "arguments": map[string]any{"name": "mcp__jobs__slow_report", "arguments": map[string]any{}}})
	if e == nil || !strings.Contains(fmt.Sprint(e["message"]), "2 calls running") {
		t.Errorf("a third call of one caller: %v", e)
	}
	bob := &taskClient{t: t, url: url, agent: "bob's agent", tasks: true}
	if res := bob.call("mcp__jobs__slow_report", map[string]any{}); res["resultType"] != "task" {
		t.Errorf("another caller's call: %v", res)
	}
	close(release)
	for _, id := range ids {
		alice.until(id, "completed")
	}
	testenv.Eventually(t, 10*time.Second, "alice's calls to end", func() bool {
		res, e := alice.do("tools/call", toolCall, map[string]any{"name": toolCall, "arguments": map[string]any{"name": "mcp__jobs__slow_report", "arguments": map[string]any{}}})
		return e == nil && res != nil
	})
}

// A task's call that waits for its client's input waits where it ran,
// below the transport, and is never replayed: the server is called once
// per round; answers that cannot be read are refused and the call waits
// on; tasks/cancel ends the waiting call at once, not after inputWait.
func TestTaskWaitingForInput(t *testing.T) {
	var calls atomic.Int32
	working := make(chan struct{})
	srv := mcp.NewServer(&mcp.Implementation{Name: "greeter", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "greet", Description: "Greet the person by the name they give"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		calls.Add(1)
		if _, ok := req.Params.InputResponses["name"]; ok {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "hello"}}}, nil, nil
		}
		select {
		case <-working:
		case <-ctx.Done():
			return nil, nil, ctx.Err()
		}
		return &mcp.CallToolResult{InputRequests: mcp.InputRequestMap{"name": &mcp.ElicitParams{Message: "Your name?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}}}}, nil, nil
	})
	g, _ := gatewayFor(t, &Options{TaskAfter: 50 * time.Millisecond}, inMemory("greeter", srv))
	c := &taskClient{t: t, url: httpGateway(t, g, nil), agent: "alice's agent", tasks: true}
	parked := func() int {
		g.rounds.mu.Lock()
		defer g.rounds.mu.Unlock()
		return len(g.rounds.parked)
	}

	res := c.call("mcp__greeter__greet", map[string]any{})
	id, _ := res["taskId"].(string)
	if res["resultType"] != "task" {
		t.Fatalf("a call that works, then asks: %v", res)
	}
	close(working)
	c.until(id, "input_required")
	if n := calls.Load(); n != 1 {
		t.Errorf("the server was called %d times for one round", n)
	}
	if parked() != 1 {
		t.Fatalf("%d calls wait for input, want the task's one", parked())
	}
	for _, answers := range []any{map[string]any{"name": map[string]any{"nonsense": true}}, []string{"Ada"}, "Ada"} {
		_, e := c.do("tasks/update", id, map[string]any{"taskId": id, "inputResponses": answers})
		if e == nil || e["code"] != float64(-32602) {
			t.Errorf("unreadable answers %v: %v, want -32602", answers, e)
		}
	}
	if got, _ := c.do("tasks/get", id, map[string]any{"taskId": id}); got["status"] != "input_required" {
		t.Errorf("after unreadable answers the task is %v, want still input_required", got["status"])
	}
	if _, e := c.do("tasks/cancel", id, map[string]any{"taskId": id}); e != nil {
		t.Fatalf("tasks/cancel: %v", e)
	}
	c.until(id, "cancelled")
	if parked() != 0 {
		t.Errorf("%d calls still wait for input after tasks/cancel", parked())
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the server was called %d times in all, want 1", n)
	}
}
