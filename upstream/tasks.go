package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/launcher"
)

// Tasks of servers that run them (the io.modelcontextprotocol/tasks
// extension of MCP 2026-07-28). A call made for a client that takes
// tasks (WithTasks) tells a server that runs tasks that the call may
// become one; a server that answers with a task handle keeps the task,
// and the gateway follows it with TaskRequest. The go-sdk's client has no
// such extension: it decodes every tools/call answer as a CallToolResult,
// dropping a handle's fields. So the answer is also read as it arrives
// (taskCapture, by the connection's HTTP client), and tasks/* go to the
// server on that client as plain JSON-RPC. Only servers over HTTP that
// the pool calls on one connection are asked (a stdio connection's
// messages are the SDK's alone; a person's own connection is theirs).

// TasksExtension names the extension among capabilities.
const TasksExtension = "io.modelcontextprotocol/tasks"

// maxTaskAnswer bounds what is kept of a call's answer read for a task
// handle: a handle is small, and a larger answer is a result.
const maxTaskAnswer = 1 << 20

// TaskCapture receives the task handle a server answers a call with.
type TaskCapture struct {
	mu     sync.Mutex
	server string
	body   []byte
	ctype  string // the answer's Content-Type
	full   bool
	redact *Redactor // the pool's, set once the call is answered
}

type taskCaptureKey struct{}

// WithTasks marks ctx as a call's for a client that takes tasks, and
// returns where a server's task handle is found after the call.
func WithTasks(ctx context.Context) (context.Context, *TaskCapture) {
	c := &TaskCapture{}
	return context.WithValue(ctx, taskCaptureKey{}, c), c
}

func taskCaptureOf(ctx context.Context) *TaskCapture {
	c, _ := ctx.Value(taskCaptureKey{}).(*TaskCapture)
	return c
}

// Task returns the server and its task handle (a CreateTaskResult), when
// the call was answered with one.
func (c *TaskCapture) Task() (server string, handle json.RawMessage, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.server == "" || c.full {
		return "", nil, false
	}
	msg := Answer(c.body, c.ctype, maxTaskAnswer)
	var resp struct {
		Result json.RawMessage `json:"result"`
	}
	var kind struct {
		ResultType string `json:"resultType"`
		TaskID     string `json:"taskId"`
	}
	if json.Unmarshal(msg, &resp) != nil || json.Unmarshal(resp.Result, &kind) != nil || kind.ResultType != "task" || kind.TaskID == "" {
		return "", nil, false
	}
	if c.redact != nil {
		return c.server, c.redact.CutRaw(resp.Result), true
	}
	return c.server, resp.Result, true
}

// Answer returns the JSON-RPC answer in a Streamable HTTP response body
// of the given Content-Type: the body, or the last message of its event
// stream with a result or an error (notifications, such as progress,
// come before it), of max bytes at most.
func Answer(body []byte, contentType string, max int) []byte {
	if !strings.HasPrefix(contentType, "text/event-stream") {
		return body
	}
	var last []byte
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 64<<10), max)
	for sc.Scan() {
		if data, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			data = bytes.TrimSpace(data)
			if bytes.Contains(data, []byte(`"result"`)) || bytes.Contains(data, []byte(`"error"`)) {
				last = append(last[:0], data...)
			}
		}
	}
	return last
}

// teeBody keeps what the SDK reads of a tools/call's answer, for Task.
type teeBody struct {
	io.ReadCloser
	c *TaskCapture
}

func (t teeBody) Read(p []byte) (int, error) {
	n, err := t.ReadCloser.Read(p)
	t.c.mu.Lock()
	if len(t.c.body)+n > maxTaskAnswer {
		t.c.full = true // a handle is small: this is a result
	} else {
		t.c.body = append(t.c.body, p[:n]...)
	}
	t.c.mu.Unlock()
	return n, err
}

// capture reads the answer to a tools/call made for a client that takes
// tasks, as the SDK reads it.
func (c *conn) capture(req *http.Request, resp *http.Response) {
	tc := taskCaptureOf(req.Context())
	if tc == nil || req.Header.Get("Mcp-Method") != "tools/call" || !c.runsTasks() {
		return
	}
	tc.mu.Lock()
	tc.server, tc.body, tc.full, tc.ctype = c.name, nil, false, resp.Header.Get("Content-Type")
	tc.mu.Unlock()
	resp.Body = teeBody{resp.Body, tc}
}

// runsTasks reports whether the server runs tasks and the pool can follow
// them: it declares the extension, and speaks over HTTP on a connection
// of its own (relay is set).
func (c *conn) runsTasks() bool {
	if c.relay == nil || c.caps == nil {
		return false
	}
	_, ok := c.caps.Extensions[TasksExtension]
	return ok
}

// capabilitiesWithTasks are the pool's client capabilities
// (clientCapabilities) with the extension, as MCP 2026-07-28 sends them
// with a request.
var capabilitiesWithTasks = sync.OnceValue(func() json.RawMessage {
	caps := clientCapabilities()
	caps.Extensions = map[string]any{TasksExtension: map[string]any{}}
	b, _ := json.Marshal(caps)
	var m map[string]any
	json.Unmarshal(b, &m)
	//lint:ignore SA1019 the pool answers roots for clients of earlier revisions (clients.go)
	if caps.RootsV2 != nil {
		m["roots"] = map[string]any{} // not marshalled: the SDK writes it so for 2026-07-28
	}
	b, _ = json.Marshal(m)
	return b
})

// declareTasks adds the extension to a call's client capabilities (which
// MCP 2026-07-28 sends with every request) when ctx is a call's for a
// client that takes tasks, and the server runs them.
func (c *conn) declareTasks(ctx context.Context, params *mcp.CallToolParams) {
	if taskCaptureOf(ctx) == nil || !c.runsTasks() {
		return
	}
	if params.Meta == nil {
		params.Meta = mcp.Meta{}
	}
	params.Meta[mcp.MetaKeyClientCapabilities] = capabilitiesWithTasks()
}

// TaskError is a server's JSON-RPC error answering a tasks/* request.
type TaskError struct {
	Code    int64           `json:"code"`
	Message string          `json:"message"`
	Data    json.RawMessage `json:"data,omitempty"`
}

func (e *TaskError) Error() string { return fmt.Sprintf("%s (%d)", e.Message, e.Code) }

// TaskRequest sends a tasks/get, tasks/update or tasks/cancel (method)
// for the server's task taskID, with params beside its id, and returns
// the server's result. A JSON-RPC error of the server's is a *TaskError.
func (sc *Scope) TaskRequest(ctx context.Context, server, method, taskID string, params map[string]any) (json.RawMessage, error) {
	if !sc.HasServer(server) {
		return nil, fmt.Errorf("server %s is not in profile %s", server, sc.Profile())
	}
	s, c, err := sc.pool.ready(ctx, server)
	if err != nil {
		return nil, err
	}
	if !c.runsTasks() {
		return nil, fmt.Errorf("server %s no longer runs tasks", server)
	}
	p := map[string]any{"taskId": taskID}
	for k, v := range params {
		p[k] = v
	}
	version := ""
	if v := c.version.Load(); v != nil {
		version = *v
	}
	p["_meta"] = map[string]any{mcp.MetaKeyProtocolVersion: version, mcp.MetaKeyClientInfo: &mcp.Implementation{Name: ClientName, Version: sc.pool.opts.Version},
		mcp.MetaKeyClientCapabilities: capabilitiesWithTasks()}
	body, err := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 1, "method": method, "params": p})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(withoutValues(ctx), s.cfg.StartTimeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	for k, v := range map[string]string{"Content-Type": "application/json", "Accept": "application/json, text/event-stream",
		"Mcp-Protocol-Version": version, "Mcp-Method": method, "Mcp-Name": taskID} {
		req.Header.Set(k, v)
	}
	resp, err := c.relay.Do(req)
	if err != nil {
		return nil, &redactedError{fmt.Sprintf("server %s: %s: %s", server, method, s.redactor().Redact(err.Error())), err}
	}
	defer resp.Body.Close()
	// A completed task's answer carries its result: as large as a
	// message of the server's may be.
	raw, err := io.ReadAll(io.LimitReader(resp.Body, launcher.MaxFrame+1))
	if err != nil {
		return nil, fmt.Errorf("server %s: %s: %v", server, method, err)
	}
	if len(raw) > launcher.MaxFrame {
		return nil, fmt.Errorf("server %s: %s: the answer is larger than %d bytes", server, method, launcher.MaxFrame)
	}
	var msg struct {
		Result json.RawMessage `json:"result"`
		Error  *TaskError      `json:"error"`
	}
	if err := json.Unmarshal(Answer(raw, resp.Header.Get("Content-Type"), launcher.MaxFrame), &msg); err != nil {
		return nil, fmt.Errorf("server %s: %s: HTTP %d, not a JSON-RPC answer", server, method, resp.StatusCode)
	}
	if msg.Error != nil {
		msg.Error.Message = s.redactor().Redact(msg.Error.Message)
		return nil, msg.Error
	}
	if msg.Result == nil {
		return nil, errors.New("server " + server + ": " + method + ": an answer without a result")
	}
	return s.redactor().CutRaw(msg.Result), nil
}
