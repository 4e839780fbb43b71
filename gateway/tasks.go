package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/upstream"
)

// Tasks (the io.modelcontextprotocol/tasks extension of MCP 2026-07-28):
// a server may answer a tools/call with a task handle, which the client
// polls with tasks/get, feeds with tasks/update and ends with
// tasks/cancel. The go-sdk has no such extension, so it lives here,
// small: the tasker in front of the SDK's transport answers tasks/* and
// marks a tools/call from a client that declares the extension; below
// the SDK, runAsTask (taskcalls.go) runs that call, and if it has not
// finished within Options.TaskAfter the client is answered with a task
// while the call goes on. A call that needs the person's input (an
// input-required round) makes its task input_required; tasks/update
// answers it, and the call resumes where it waits. Every upstream server
// is served this way, whether it knows tasks or not: a client never
// waits on an open request for a long call.
//
// When the go-sdk has the extension, this moves there: the task store
// becomes the SDK's task store interface, the middleware its handling of
// the three methods and of resultType "task", and TaskAfter a server
// option deciding per request.

const (
	tasksExtension = "io.modelcontextprotocol/tasks"
	// DefaultTaskAfter is how long a call runs before its client is
	// answered with a task.
	DefaultTaskAfter = 2 * time.Second
	taskTTL          = time.Hour
	taskPoll         = time.Second
	maxTasks         = 10_000
)

// Task is a call running (or run) as a task, as the client sees it and
// as a fleet's store keeps it.
type Task struct {
	ID            string          `json:"taskId"`
	Status        string          `json:"status"`
	StatusMessage string          `json:"statusMessage,omitempty"`
	CreatedAt     time.Time       `json:"createdAt"`
	LastUpdatedAt time.Time       `json:"lastUpdatedAt"`
	TTLMs         int64           `json:"ttlMs"`
	PollMs        int64           `json:"pollIntervalMs"`
	Result        json.RawMessage `json:"result,omitempty"`
	Error         json.RawMessage `json:"error,omitempty"`
	InputRequests json.RawMessage `json:"inputRequests,omitempty"`

	// Owner is whom the task answers: its caller on its MCP path (a task
	// id alone opens nothing). Runner is the replica running its call,
	// in a fleet.
	Owner  string `json:"-"`
	Runner string `json:"-"`
	// Call is the tools/call's params, and State the request state of
	// its input-required round, to resume it with the client's answers.
	Call  json.RawMessage `json:"-"`
	State string          `json:"-"`
	// Server and Remote, for a task the server runs itself: the server,
	// and its id of the task, which the gateway's requests follow.
	Server string `json:"-"`
	Remote string `json:"-"`
}

// Tasks keeps tasks, as opaque records, where every replica finds them
// (a fleet's store: store.DB is one); without one, the gateway keeps
// them in memory.
type Tasks interface {
	PutTask(ctx context.Context, id string, record []byte, expires time.Time) error
	// GetTask returns a task's record; nil when there is none (or it
	// expired).
	GetTask(ctx context.Context, id string) ([]byte, error)
}

// taskRecord is a task as kept: what the client sees and what only the
// gateway reads.
type taskRecord struct {
	Task
	Owner  string          `json:"owner"`
	Runner string          `json:"runner,omitempty"`
	Call   json.RawMessage `json:"call"`
	State  string          `json:"state,omitempty"`
	Server string          `json:"server,omitempty"`
	Remote string          `json:"remote,omitempty"`
}

// maxTaskRecord bounds what a task keeps (its call and its result): a
// result past it is not kept, and the task fails saying so.
const maxTaskRecord = 8 << 20

// putTask keeps a task until its TTL has passed.
func putTask(ctx context.Context, st Tasks, t *Task) error {
	b, err := json.Marshal(taskRecord{*t, t.Owner, t.Runner, t.Call, t.State, t.Server, t.Remote})
	if err != nil {
		return err
	}
	if len(b) > maxTaskRecord {
		return fmt.Errorf("the task's record is %d bytes, past the %d a task keeps", len(b), maxTaskRecord)
	}
	return st.PutTask(ctx, t.ID, b, t.CreatedAt.Add(time.Duration(t.TTLMs)*time.Millisecond))
}

// getTask reads a task; nil when there is none.
func getTask(ctx context.Context, st Tasks, id string) (*Task, error) {
	b, err := st.GetTask(ctx, id)
	if err != nil || b == nil {
		return nil, err
	}
	var r taskRecord
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, err
	}
	t := r.Task
	t.Owner, t.Runner, t.Call, t.State, t.Server, t.Remote = r.Owner, r.Runner, r.Call, r.State, r.Server, r.Remote
	return &t, nil
}

// memoryTasks keeps a process's tasks, at most maxTasks, each until it
// expires.
type memoryTasks struct {
	mu sync.Mutex
	m  map[string]memoryTask
}

type memoryTask struct {
	record  []byte
	expires time.Time
}

func (m *memoryTasks) PutTask(_ context.Context, id string, record []byte, expires time.Time) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.m == nil {
		m.m = map[string]memoryTask{}
	}
	if _, ok := m.m[id]; !ok && len(m.m) >= maxTasks {
		for k, old := range m.m {
			if time.Now().After(old.expires) {
				delete(m.m, k)
			}
		}
		if len(m.m) >= maxTasks {
			return fmt.Errorf("%d tasks are kept, the most this gateway keeps", maxTasks)
		}
	}
	m.m[id] = memoryTask{record, expires}
	return nil
}

func (m *memoryTasks) GetTask(_ context.Context, id string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	t, ok := m.m[id]
	if !ok || time.Now().After(t.expires) {
		return nil, nil
	}
	return t.record, nil
}

// tasker serves the tasks of one MCP path, in front of its transport.
type tasker struct {
	next   http.Handler
	store  Tasks
	after  time.Duration
	path   string
	self   string                                             // this replica, in a fleet
	alive  func(ctx context.Context, id string) (bool, error) // whether a replica serves
	sendTo func(w http.ResponseWriter, r *http.Request, body []byte, id string) error
	up     *upstream.Scope // follows the tasks servers run themselves

	mu        sync.Mutex
	srv       *Server                       // whose rounds a waiting call is parked in
	running   map[string]context.CancelFunc // tasks whose call runs here
	waiting   map[string]*waitingCall       // tasks whose call waits here for input
	owners    map[string]int                // of those, how many each caller has
	ownerOf   map[string]string             // a running task's caller
	perCaller int
}

// DefaultTasksPerCaller bounds the calls one caller has running as tasks
// here at once (each holds a goroutine, a call to a server and its
// recorded answer) unless Options.TasksPerCaller says otherwise.
const DefaultTasksPerCaller = 256

// withTasks serves tasks in front of next, a transport without sessions.
func (s *Server) withTasks(next http.Handler, path string) http.Handler {
	t := &tasker{next: next, store: s.opts.Tasks, after: s.opts.TaskAfter, path: path, self: s.opts.Replica, alive: s.opts.ReplicaAlive,
		sendTo: s.opts.SendTo, up: s.up, srv: s, running: map[string]context.CancelFunc{}, waiting: map[string]*waitingCall{}, owners: map[string]int{}, ownerOf: map[string]string{}}
	if t.store == nil {
		t.store = &memoryTasks{}
	}
	if t.after <= 0 {
		t.after = DefaultTaskAfter
	}
	if t.perCaller = s.opts.TasksPerCaller; t.perCaller <= 0 {
		t.perCaller = DefaultTasksPerCaller
	}
	return t
}

// taskRequest is what the tasker reads of a request.
type taskRequest struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params struct {
		TaskID         string          `json:"taskId"`
		InputResponses json.RawMessage `json:"inputResponses"`
		Meta           struct {
			Caps struct {
				Extensions map[string]json.RawMessage `json:"extensions"`
			} `json:"io.modelcontextprotocol/clientCapabilities"`
		} `json:"_meta"`
	} `json:"params"`
}

func (t *tasker) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	method := r.Header.Get("Mcp-Method")
	if r.Method != http.MethodPost || (method != "tools/call" && method != "subscriptions/listen" && !strings.HasPrefix(method, "tasks/")) {
		t.next.ServeHTTP(w, r)
		return
	}
	e := envelopeOf(r) // read once, by the front door
	if e == nil || e.method != method || method == "tools/call" && !e.tasks || method == "subscriptions/listen" && !e.taskIDs {
		// A client that does not declare the extension, a stream that
		// asks for no task's news, or what the SDK says is wrong.
		t.next.ServeHTTP(w, r)
		return
	}
	switch method {
	case "tools/call":
		t.call(w, r, e.id, t.path+" "+callerOf(r))
		return
	case "subscriptions/listen":
		// Task status is polled: the stream's acknowledgement agrees to
		// no task ids (the SDK's). Asking without the extension is an
		// error, as the extension requires.
		if !e.tasks {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			writeRPC(w, e.id, nil, missingTasksExtension("task ids on "+method))
			return
		}
		t.next.ServeHTTP(w, r)
		return
	}
	var req taskRequest
	if json.Unmarshal(e.body, &req) != nil {
		t.next.ServeHTTP(w, r) // the SDK says what is wrong
		return
	}
	owner := t.path + " " + callerOf(r)
	switch method {
	case "tasks/get", "tasks/update", "tasks/cancel":
		if rpcErr := taskRequestError(r, &req); rpcErr != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			writeRPC(w, req.ID, nil, rpcErr)
			return
		}
		task, rpcErr := t.lookup(r.Context(), req.Params.TaskID, owner)
		if rpcErr != nil {
			writeRPC(w, req.ID, nil, rpcErr)
			return
		}
		if method != "tasks/get" && t.sendOn(w, r, e.body, task) {
			return
		}
		res, rpcErr := t.method(r.Context(), r, method, &req, task)
		writeRPC(w, req.ID, res, rpcErr)
	default:
		t.next.ServeHTTP(w, r)
	}
}

// taskRequestError is what is wrong with a tasks/* request that the
// extension refuses: one from a client not declaring the extension
// (-32021, naming it), and one whose Mcp-Name header is not its task's id
// (-32020, as the SDK answers a tools/call whose header is not its tool).
// The header is what lets a balancer send every request for a task to the
// replica holding it; a body that says another task would go around it.
func taskRequestError(r *http.Request, req *taskRequest) json.RawMessage {
	if _, ok := req.Params.Meta.Caps.Extensions[tasksExtension]; !ok {
		return missingTasksExtension(req.Method)
	}
	if got := r.Header.Get("Mcp-Name"); got != headerValue(req.Params.TaskID) {
		return rpcError(-32020, fmt.Sprintf("the Mcp-Name header %s is not the request's taskId %s (it must be, so that what routes by the header routes this request)",
			quoteClipped(got), quoteClipped(req.Params.TaskID)))
	}
	return nil
}

// missingTasksExtension is the error (-32021) for what the tasks extension
// offers, asked by a client that does not declare it.
func missingTasksExtension(what string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"code": -32021,
		"message": what + " is of the " + tasksExtension + " extension, which the request's client capabilities do not declare",
		"data":    map[string]any{"requiredCapabilities": map[string]any{"extensions": map[string]any{tasksExtension: map[string]any{}}}}})
	return b
}

// call serves a tools/call of a client that takes tasks: the request goes
// to the transport as it came, marked so that the gateway's own handling
// of it (runAsTask, below the SDK) may answer it with a task. A quick
// call's answer goes to the client as the transport wrote it.
func (t *tasker) call(w http.ResponseWriter, r *http.Request, id json.RawMessage, owner string) {
	t.mu.Lock()
	busy := t.owners[owner]
	t.mu.Unlock()
	if busy >= t.perCaller {
		writeRPC(w, id, nil, rpcError(-32603, fmt.Sprintf("this caller has %d calls running, the most one caller may have at once: wait for one to end", busy)))
		return
	}
	slot := &taskSlot{tasker: t, owner: owner}
	held := newHeldResponse()
	t.next.ServeHTTP(held, r.WithContext(context.WithValue(r.Context(), taskSlotKey{}, slot)))
	switch {
	case slot.err != nil:
		writeRPC(w, id, nil, rpcError(-32603, slot.err.Error()))
	case slot.task != nil:
		res, _ := json.Marshal(struct {
			ResultType string `json:"resultType"`
			*Task
		}{"task", slot.task})
		writeRPC(w, id, res, nil)
	default:
		held.copyTo(w)
	}
}

// calledTools reads a tools/call's params: the tool called, and the tool
// it names when that is call_tool.
func calledTools(params json.RawMessage) (name, target string) {
	var call struct {
		Name      string `json:"name"`
		Arguments struct {
			Name string `json:"name"`
		} `json:"arguments"`
	}
	json.Unmarshal(params, &call)
	return call.Name, call.Arguments.Name
}

// relayed makes task follow the task its server answered the call with,
// if it did: the server's status, times and hints, under the gateway's id.
func relayed(task *Task, capture *upstream.TaskCapture) bool {
	server, handle, ok := capture.Task()
	if !ok {
		return false
	}
	var theirs Task
	json.Unmarshal(handle, &theirs)
	task.Server, task.Remote = server, theirs.ID
	task.Status, task.StatusMessage = theirs.Status, theirs.StatusMessage
	task.TTLMs, task.PollMs = theirs.TTLMs, theirs.PollMs
	task.LastUpdatedAt = time.Now().UTC()
	if task.Status == "" {
		task.Status = "working"
	}
	if task.TTLMs <= 0 || task.TTLMs > taskTTL.Milliseconds() {
		task.TTLMs = taskTTL.Milliseconds() // the gateway keeps its record no longer
	}
	if task.PollMs <= 0 {
		task.PollMs = taskPoll.Milliseconds()
	}
	return true
}

// forget ends the bookkeeping of a task's call that has ended.
func (t *tasker) forget(id string) {
	t.mu.Lock()
	cancel := t.running[id]
	delete(t.running, id)
	if owner, ok := t.ownerOf[id]; ok {
		delete(t.ownerOf, id)
		if t.owners[owner]--; t.owners[owner] <= 0 {
			delete(t.owners, owner)
		}
	}
	t.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

// lookup reads a task for its owner (or for a request another replica
// of the fleet sent on, having checked it), failing it when its replica
// is gone mid-call.
func (t *tasker) lookup(ctx context.Context, id, owner string) (*Task, json.RawMessage) {
	task, err := getTask(ctx, t.store, id)
	if err != nil {
		// A store that cannot be read, or a record that fails its
		// check (fleet.ErrTaskForged): refused, never served.
		return nil, rpcError(-32603, "the task cannot be read: "+err.Error())
	}
	if task == nil || (task.Owner != owner && !vouched(ctx)) {
		return nil, rpcError(-32602, fmt.Sprintf("no task %s", quoteClipped(id)))
	}
	t.orphaned(ctx, task)
	return task, nil
}

// sendOn sends a tasks/update or tasks/cancel of a task whose call runs
// on another replica of the fleet to that replica, which alone can
// resume or cancel it, and reports whether it did. The client's balancer
// need not know where the call runs.
func (t *tasker) sendOn(w http.ResponseWriter, r *http.Request, body []byte, task *Task) bool {
	if t.sendTo == nil || task.Runner == "" || task.Runner == t.self || task.Remote != "" || vouched(r.Context()) ||
		(task.Status != "working" && task.Status != "input_required") {
		return false
	}
	err := t.sendTo(w, r, body, task.Runner)
	if err == nil {
		return true
	}
	// Nothing was written. A replica gone meanwhile is found so by the
	// next tasks/get; one that beats but was not reached is asked again.
	var id struct {
		ID json.RawMessage `json:"id"`
	}
	json.Unmarshal(body, &id)
	writeRPC(w, id.ID, nil, rpcError(-32603, "the replica of the gateway running this task's call could not be reached; try again shortly"))
	return true
}

// method answers tasks/get, tasks/update and tasks/cancel of a task.
func (t *tasker) method(ctx context.Context, r *http.Request, method string, req *taskRequest, task *Task) (json.RawMessage, json.RawMessage) {
	if task.Remote != "" {
		return t.relay(ctx, method, req, task)
	}
	switch method {
	case "tasks/get":
		res, _ := json.Marshal(struct {
			ResultType string `json:"resultType"`
			*Task
		}{"complete", task})
		return res, nil
	case "tasks/update":
		if task.Runner != t.self && task.Status == "input_required" {
			// The call waits for its answers where it runs (sendOn sends
			// them there; this replica has no way to).
			return nil, rpcError(-32603, "this task's call waits for its input on another replica of the gateway, which alone takes it")
		}
		if task.Status != "input_required" || len(req.Params.InputResponses) == 0 {
			// Answers to nothing outstanding are ignored.
			return json.RawMessage(`{"resultType":"complete"}`), nil
		}
		// The call resumes where it waits, below the transport, with the
		// answers as an input-required round takes them.
		var answers mcp.InputResponseMap
		if err := json.Unmarshal(req.Params.InputResponses, &answers); err != nil {
			return nil, rpcError(-32602, "inputResponses: "+cut(err.Error(), echoLimit))
		}
		if err := t.resume(ctx, task, answers); err != nil {
			return nil, rpcError(-32603, err.Error())
		}
		return json.RawMessage(`{"resultType":"complete"}`), nil
	default: // tasks/cancel
		// Cancelled in the record before the call is: the call, ending
		// without an answer, must find the task cancelled, not fail it.
		if task.Status == "working" || task.Status == "input_required" {
			task.Status, task.InputRequests, task.LastUpdatedAt = "cancelled", nil, time.Now().UTC()
			if err := putTask(ctx, t.store, task); err != nil {
				return nil, rpcError(-32603, err.Error())
			}
		}
		t.mu.Lock()
		cancel := t.running[task.ID]
		t.mu.Unlock()
		if cancel != nil {
			cancel()
		}
		t.cancelWaiting(task)
		return json.RawMessage(`{"resultType":"complete"}`), nil
	}
}

// relay sends a tasks/* request of a task its server runs to the server,
// and answers with the server's answer under the gateway's id. Any
// replica can: the server holds the task, not the replica that started
// it.
func (t *tasker) relay(ctx context.Context, method string, req *taskRequest, task *Task) (json.RawMessage, json.RawMessage) {
	var params map[string]any
	if method == "tasks/update" {
		params = map[string]any{"inputResponses": req.Params.InputResponses}
	}
	res, err := t.up.TaskRequest(ctx, task.Server, method, task.Remote, params)
	if te := (*upstream.TaskError)(nil); errors.As(err, &te) {
		b, _ := json.Marshal(te)
		return nil, b
	}
	if err != nil {
		return nil, rpcError(-32603, fmt.Sprintf("the server running this task (%s) did not answer: %v", task.Server, err))
	}
	if method != "tasks/get" {
		return json.RawMessage(`{"resultType":"complete"}`), nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(res, &m); err != nil {
		return nil, rpcError(-32603, fmt.Sprintf("server %s answered tasks/get with something other than a task", task.Server))
	}
	m["taskId"], _ = json.Marshal(task.ID)
	m["resultType"] = json.RawMessage(`"complete"`)
	if r, ok := m["result"]; ok {
		m["result"] = t.servedResult(task, r)
	}
	b, _ := json.Marshal(m)
	return b, nil
}

// servedResult is a relayed task's result as the gateway serves its
// tool's results: MCP Apps named as the gateway serves them.
func (t *tasker) servedResult(task *Task, raw json.RawMessage) json.RawMessage {
	name, target := calledTools(task.Call)
	if name == toolCall {
		name = target
	}
	e, err := t.up.Resolve(name)
	var res mcp.CallToolResult
	if err != nil || json.Unmarshal(raw, &res) != nil {
		return raw
	}
	appResult(&res, appsOf(e))
	b, err := json.Marshal(&res)
	if err != nil {
		return raw
	}
	return b
}

// orphaned fails a task whose call ran on a replica that is gone: its
// call went with it, and the task would say "working" to the end of its
// TTL. (The call is not sent again: it may have acted.)
func (t *tasker) orphaned(ctx context.Context, task *Task) {
	if t.alive == nil || task.Runner == "" || task.Runner == t.self || task.Remote != "" || (task.Status != "working" && task.Status != "input_required") {
		return
	}
	if alive, err := t.alive(ctx, task.Runner); err != nil || alive {
		return
	}
	task.Status, task.InputRequests, task.LastUpdatedAt = "failed", nil, time.Now().UTC()
	task.StatusMessage = "the replica running this call is gone; the call may have acted, and is not sent again"
	task.Error = rpcError(-32603, task.StatusMessage)
	_ = putTask(ctx, t.store, task)
}

// writeRPC writes a JSON-RPC answer.
func writeRPC(w http.ResponseWriter, id json.RawMessage, result, rpcErr json.RawMessage) {
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(rpcResponse(id, result, rpcErr), '\n'))
}

// rpcResponse is the JSON-RPC response of id: its result, or its error.
func rpcResponse(id json.RawMessage, result, rpcErr json.RawMessage) []byte {
	msg := map[string]any{"jsonrpc": "2.0", "id": id}
	if rpcErr != nil {
		msg["error"] = rpcErr
	} else {
		msg["result"] = result
	}
	b, _ := json.Marshal(msg)
	return b
}

func rpcError(code int, message string) json.RawMessage {
	b, _ := json.Marshal(map[string]any{"code": code, "message": message})
	return b
}
