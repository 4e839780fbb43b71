package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/upstream"
)

// A task's call runs below the transport. tasker.call marks a tools/call
// of a client that takes tasks (taskSlot) and hands the request to the
// transport as it came; runAsTask, a receiving middleware of the SDK's
// server, finds the mark and runs the rest of the chain (the tool's
// handler, the rules, Scope.Reach, the audit record) on a context of the
// call's own. A call that ends within TaskAfter is answered as any call
// is; one that does not is kept as a task, the SDK's answer to the
// request is dropped, and tasker.call answers with the task. An
// input-required round resumes through the same chain (resume), with the
// request the call came in. No request is made to the gateway itself.

// taskSlot marks a tools/call that may go on as a task, and carries back
// what became of it.
type taskSlot struct {
	tasker *tasker
	owner  string
	task   *Task // the call goes on as this task
	err    error // the call goes on, but its task could not be kept
}

type taskSlotKey struct{}

// callFunc runs a tools/call through what is below the middleware.
type callFunc func(context.Context, *mcp.CallToolRequest) (mcp.Result, error)

// callOutcome is what a call ended with.
type callOutcome struct {
	res mcp.Result
	err error
}

// waitingCall is a task's call waiting for its client's input: what
// resumes it, and since when it waits.
type waitingCall struct {
	req   *mcp.CallToolRequest
	call  callFunc
	since time.Time
}

// runAsTask runs a tools/call that tasker.call marked as one that may go
// on as a task; any other request passes.
func (s *Server) runAsTask(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		slot, _ := ctx.Value(taskSlotKey{}).(*taskSlot)
		call, ok := req.(*mcp.CallToolRequest)
		if slot == nil || !ok || method != "tools/call" {
			return next(ctx, method, req)
		}
		return slot.tasker.run(ctx, slot, call, func(ctx context.Context, req *mcp.CallToolRequest) (mcp.Result, error) {
			return next(ctx, method, req)
		})
	}
}

// run runs a call; one not finished within t.after goes on as a task,
// named in slot.
func (t *tasker) run(ctx context.Context, slot *taskSlot, req *mcp.CallToolRequest, call callFunc) (mcp.Result, error) {
	params, _ := json.Marshal(req.Params)
	task := &Task{ID: randomID(), Status: "working", Owner: slot.owner, Runner: t.self, Call: params,
		CreatedAt: time.Now().UTC(), TTLMs: taskTTL.Milliseconds(), PollMs: taskPoll.Milliseconds()}
	task.LastUpdatedAt = task.CreatedAt
	done, capture := t.start(ctx, task, req, call)
	wait := time.NewTimer(t.after)
	defer wait.Stop()
	select {
	case o := <-done:
		t.forget(task.ID)
		if !relayed(task, capture) {
			return o.res, o.err // quick: answered as if there were no tasks
		}
		// The server runs it as a task of its own: the client gets one
		// of the gateway's, which follows the server's.
	case <-wait.C:
	case <-ctx.Done():
		// The client left before its task was named: nobody could
		// ever read the call's result.
		t.forget(task.ID)
		return nil, ctx.Err()
	}
	// The task is durable before its handle goes out.
	if err := putTask(ctx, t.store, task); err != nil {
		slot.err = fmt.Errorf("the call runs on, but its task could not be kept: %w", err)
	} else {
		slot.task = task
	}
	if task.Remote == "" {
		t.settle(task.ID, done, capture, req, call)
	}
	return &mcp.CallToolResult{}, nil // not sent: tasker.call answers
}

// start runs a call on a context of its own (the call outlives the
// request that asked it, and ends by tasks/cancel), and returns where its
// outcome comes.
func (t *tasker) start(ctx context.Context, task *Task, req *mcp.CallToolRequest, call callFunc) (chan callOutcome, *upstream.TaskCapture) {
	ctx = context.WithValue(context.WithoutCancel(ctx), requestContextKey{}, nil) // not bound to its HTTP request
	ctx = context.WithValue(ctx, taskSlotKey{}, nil)
	ctx, cancel := context.WithCancel(ctx)
	// A server that runs tasks may answer with one of its own.
	ctx, capture := upstream.WithTasks(ctx)
	t.mu.Lock()
	if old := t.running[task.ID]; old == nil {
		t.owners[task.Owner]++
		t.ownerOf[task.ID] = task.Owner
	}
	t.running[task.ID] = cancel
	t.mu.Unlock()
	done := make(chan callOutcome, 1)
	go func() {
		res, err := call(ctx, req)
		done <- callOutcome{res, err}
	}()
	return done, capture
}

// settle waits, in the background, for the call of a task that was
// answered with its handle, and keeps what it ends with. A call that
// waits for its client's input is kept to be resumed.
func (t *tasker) settle(id string, done chan callOutcome, capture *upstream.TaskCapture, req *mcp.CallToolRequest, call callFunc) {
	go func() {
		o := <-done
		t.forget(id)
		ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
		defer stop()
		task, err := getTask(ctx, t.store, id)
		if err != nil || task == nil || task.Status == "cancelled" {
			t.cancelWaiting(task)
			return
		}
		if !relayed(task, capture) {
			finish(task, o)
			task.LastUpdatedAt = time.Now().UTC()
		}
		if task.Status == "input_required" {
			t.keepWaiting(id, &waitingCall{req: req, call: call, since: time.Now()})
		}
		if err := putTask(ctx, t.store, task); err != nil {
			// A task is never left working for a result it lost.
			t.cancelWaiting(task)
			task.Status, task.StatusMessage, task.Result, task.InputRequests = "failed", "the call ended, but its result could not be kept: "+err.Error(), nil, nil
			task.Error = rpcError(-32603, task.StatusMessage)
			_ = putTask(ctx, t.store, task)
		}
	}()
}

// finish sets a task's status from what its call ended with.
func finish(task *Task, o callOutcome) {
	res, _ := o.res.(*mcp.CallToolResult)
	switch {
	case o.err != nil:
		task.Status, task.Error = "failed", rpcErrorOf(o.err)
	case res == nil:
		task.Status, task.StatusMessage = "failed", "the call ended without an answer"
		task.Error = rpcError(-32603, task.StatusMessage)
	case len(res.InputRequests) > 0:
		reqs, _ := json.Marshal(res.InputRequests)
		task.Status, task.InputRequests, task.State = "input_required", reqs, res.RequestState
	default:
		b, err := json.Marshal(res)
		if err != nil {
			task.Status, task.StatusMessage = "failed", "the call's result cannot be kept: "+err.Error()
			task.Error = rpcError(-32603, task.StatusMessage)
			return
		}
		task.Status, task.Result, task.InputRequests, task.State = "completed", b, nil, ""
	}
}

// rpcErrorOf is the JSON-RPC error a call's error is answered with.
func rpcErrorOf(err error) json.RawMessage {
	var we *jsonrpc.Error
	if errors.As(err, &we) {
		if b, err := json.Marshal(we); err == nil {
			return b
		}
	}
	return rpcError(-32603, err.Error())
}

// resume gives a task's waiting call its client's answers, and follows
// the call on to its next round or its end.
func (t *tasker) resume(ctx context.Context, task *Task, answers mcp.InputResponseMap) error {
	t.mu.Lock()
	w := t.waiting[task.ID]
	delete(t.waiting, task.ID)
	t.mu.Unlock()
	if w == nil {
		return errors.New("the call waiting for this input is no longer running (it waited too long, or its replica restarted); call the tool again")
	}
	state := task.State
	task.Status, task.InputRequests, task.State, task.LastUpdatedAt = "working", nil, "", time.Now().UTC()
	if err := putTask(ctx, t.store, task); err != nil {
		return err
	}
	// The same request, carrying the answers and the state that names
	// the waiting call, as a client's next round would.
	params := *w.req.Params
	params.InputResponses, params.RequestState = answers, state
	req := *w.req
	req.Params = &params
	done, capture := t.start(ctx, task, &req, w.call)
	t.settle(task.ID, done, capture, w.req, w.call)
	return nil
}

// keepWaiting keeps a call waiting for its client's answers, dropping
// those that waited past inputWait (their rounds are cancelled by then).
func (t *tasker) keepWaiting(id string, w *waitingCall) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for k, old := range t.waiting {
		if time.Since(old.since) > inputWait {
			delete(t.waiting, k)
		}
	}
	t.waiting[id] = w
}

// cancelWaiting forgets a task's call waiting for input, and ends it.
func (t *tasker) cancelWaiting(task *Task) {
	if task == nil {
		return
	}
	t.mu.Lock()
	w := t.waiting[task.ID]
	delete(t.waiting, task.ID)
	t.mu.Unlock()
	if w != nil && task.State != "" && t.srv != nil {
		if rt := t.srv.takeRound(task.State); rt != nil {
			rt.answer(nil)
			rt.cancel()
		}
	}
}

// heldResponse holds what the transport writes for a request that may go
// on as a task, until it is known whether that is the answer.
type heldResponse struct {
	header http.Header
	code   int
	body   bytes.Buffer
}

func newHeldResponse() *heldResponse {
	return &heldResponse{header: http.Header{}, code: http.StatusOK}
}

func (h *heldResponse) Header() http.Header         { return h.header }
func (h *heldResponse) WriteHeader(code int)        { h.code = code }
func (h *heldResponse) Write(b []byte) (int, error) { return h.body.Write(b) }

// copyTo writes the held answer to the client as it was.
func (h *heldResponse) copyTo(w http.ResponseWriter) {
	for k, v := range h.header {
		w.Header()[k] = v
	}
	w.WriteHeader(h.code)
	w.Write(h.body.Bytes())
}
