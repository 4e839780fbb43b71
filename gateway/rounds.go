//lint:file-ignore SA1019 sampling, roots and logging are deprecated by MCP 2026-07-28 (SEP-2577) but clients and servers on earlier revisions use them, and toolshelf relays them on purpose during the deprecation window.

package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/upstream"
)

// A client on MCP 2026-07-28 cannot be sent requests while it waits for a
// call: a server that needs its input returns the questions as the call's
// result (input required), and the client calls again with the answers
// (multi round trip, SEP-2322). Servers on earlier revisions still ask in
// the middle of a call. The gateway bridges the two: the upstream call
// runs on in the background, each question it asks becomes an
// input-required result to the client, and the client's retry, which
// carries the RequestState that names the waiting call, delivers the
// answers and waits for the call's next question or its result.

// inputWait is how long a call waits for its client to come back with
// answers before it is cancelled.
const inputWait = 5 * time.Minute

// pendingCall is one upstream call of a 2026-07-28 client, and the
// client the pool sends the server's questions to: it asks them as
// results; progress and log messages go to the session as they are.
type pendingCall struct {
	*mcp.ServerSession
	// events are the server's questions and, last, the call's result,
	// each waiting for the client's request to take it: one unbuffered
	// channel, which is one allocation where a buffered one of pointers
	// is two and a channel each was three.
	events  chan roundEvent
	cancel  context.CancelFunc
	waiting map[string]*ask // asked of the client, by input request id
	expiry  *time.Timer
}

// roundEvent is a question of the server (ask) or the call's result.
type roundEvent struct {
	ask *ask
	res *mcp.CallToolResult
}

type ask struct {
	req   mcp.InputRequest
	reply chan answer // buffered
}

type answer struct {
	res mcp.InputResponse
	err error
}

// rounds are the calls waiting for their clients' answers, by the
// RequestState given to the client.
type rounds struct {
	mu     sync.Mutex
	parked map[string]*pendingCall
}

// usesRounds reports whether a session's client is on MCP 2026-07-28 or
// later, which take questions as results.
func usesRounds(ss *mcp.ServerSession) bool {
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= "2026-07-28"
}

// forClient runs a tools/call request's upstream work for the session
// that made it: in rounds for a 2026-07-28 client, else with the session
// as the client that the server's requests and progress go to.
func (s *Server) forClient(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) *mcp.CallToolResult) *mcp.CallToolResult {
	if req.Session != nil && usesRounds(req.Session) {
		return s.callRounds(ctx, req, run)
	}
	return run(forCaller(ctx, req.Session, req.Params.GetProgressToken()))
}

// callRounds runs a call for a 2026-07-28 client: run (the upstream call)
// starts, or resumes when req carries the RequestState of a waiting call.
func (s *Server) callRounds(ctx context.Context, req *mcp.CallToolRequest, run func(context.Context) *mcp.CallToolResult) *mcp.CallToolResult {
	if state := req.Params.RequestState; state != "" {
		rt := s.takeRound(state)
		if rt == nil {
			return toolError("the call these answers are for has ended or waited more than %v; call the tool again", inputWait)
		}
		rt.answer(req.Params.InputResponses)
		return s.awaitRound(ctx, rt)
	}
	rt := &pendingCall{ServerSession: req.Session, events: make(chan roundEvent)}
	// The call outlives this request: the client comes back with answers
	// in another. Its HTTP request, if any, must not end it.
	callCtx, cancel := context.WithCancel(context.WithValue(context.WithoutCancel(ctx), requestContextKey{}, nil))
	rt.cancel = cancel
	callCtx = upstream.WithClient(callCtx, rt, req.Params.GetProgressToken())
	go func() {
		res := run(callCtx)
		select {
		case rt.events <- roundEvent{res: res}:
		case <-callCtx.Done(): // no one waits for it any more
		}
	}()
	return s.awaitRound(ctx, rt)
}

// awaitRound waits for the call's result or its next questions, which it
// returns to the client as an input-required result.
func (s *Server) awaitRound(ctx context.Context, rt *pendingCall) *mcp.CallToolResult {
	select {
	case ev := <-rt.events:
		if ev.ask == nil {
			rt.answer(nil) // questions of a call that ended go unanswered
			rt.cancel()
			return ev.res
		}
		if rt.waiting == nil {
			rt.waiting = map[string]*ask{} // made when the server asks: most calls never do
		}
		reqs := mcp.InputRequestMap{}
		for a := ev.ask; a != nil; {
			id := randomID()[:8]
			rt.waiting[id] = a
			reqs[id] = a.req
			select {
			case ev = <-rt.events:
				if ev.ask == nil {
					// The call ended while it asked: its result is
					// the answer, and the questions go unanswered.
					rt.answer(nil)
					rt.cancel()
					return ev.res
				}
				a = ev.ask
			default:
				a = nil
			}
		}
		state, err := s.parkRound(rt)
		if err != nil {
			rt.answer(nil)
			rt.cancel()
			return toolError("%v", err)
		}
		return &mcp.CallToolResult{InputRequests: reqs, RequestState: state}
	case <-ctx.Done():
		rt.cancel()
		return toolError("cancelled")
	}
}

// parkRound keeps a call until its client answers, at most inputWait.
func (s *Server) parkRound(rt *pendingCall) (string, error) {
	state := randomID()
	if s.opts.Replica != "" {
		state = s.opts.Replica + "." + state
	}
	s.rounds.mu.Lock()
	defer s.rounds.mu.Unlock()
	if len(s.rounds.parked) >= s.opts.MaxSessions {
		return "", fmt.Errorf("%d calls are waiting for their clients' answers, the most toolshelf keeps", len(s.rounds.parked))
	}
	if s.rounds.parked == nil {
		s.rounds.parked = map[string]*pendingCall{}
	}
	s.rounds.parked[state] = rt
	rt.expiry = time.AfterFunc(inputWait, func() {
		if s.takeRound(state) != nil {
			rt.answer(nil)
			rt.cancel()
		}
	})
	return state, nil
}

// takeRound returns the call parked under state, and forgets it.
func (s *Server) takeRound(state string) *pendingCall {
	s.rounds.mu.Lock()
	defer s.rounds.mu.Unlock()
	rt, ok := s.rounds.parked[state]
	if !ok {
		return nil
	}
	delete(s.rounds.parked, state)
	rt.expiry.Stop()
	return rt
}

// answer gives each waiting question its answer, or an error when the
// client gave none.
func (rt *pendingCall) answer(responses mcp.InputResponseMap) {
	for id, a := range rt.waiting {
		if res, ok := responses[id]; ok {
			a.reply <- answer{res: res}
		} else {
			a.reply <- answer{err: errors.New("the client did not answer")}
		}
		delete(rt.waiting, id)
	}
}

// ask puts a server's question to the client and waits for its answer.
func (rt *pendingCall) ask(ctx context.Context, req mcp.InputRequest) (mcp.InputResponse, error) {
	a := &ask{req: req, reply: make(chan answer, 1)}
	select {
	case rt.events <- roundEvent{ask: a}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case ans := <-a.reply:
		return ans.res, ans.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func randomID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func (rt *pendingCall) Elicit(ctx context.Context, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	return askAs[*mcp.ElicitResult](ctx, rt, p, "elicitation/create")
}

func (rt *pendingCall) CreateMessage(ctx context.Context, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	r, err := askAs[*mcp.CreateMessageWithToolsResult](ctx, rt, p, "sampling/createMessage")
	if err != nil {
		return nil, err
	}
	if len(r.Content) != 1 {
		return nil, fmt.Errorf("the client answered sampling/createMessage with %d content blocks, not 1", len(r.Content))
	}
	return &mcp.CreateMessageResult{Content: r.Content[0], Model: r.Model, Role: r.Role, StopReason: r.StopReason}, nil
}

func (rt *pendingCall) ListRoots(ctx context.Context, p *mcp.ListRootsParams) (*mcp.ListRootsResult, error) {
	if p == nil {
		p = &mcp.ListRootsParams{}
	}
	return askAs[*mcp.ListRootsResult](ctx, rt, p, "roots/list")
}

// askAs asks the client and checks that the answer is of the type the
// method answers with.
func askAs[T mcp.InputResponse](ctx context.Context, rt *pendingCall, req mcp.InputRequest, method string) (T, error) {
	var zero T
	res, err := rt.ask(ctx, req)
	if err != nil {
		return zero, err
	}
	r, ok := res.(T)
	if !ok {
		return zero, fmt.Errorf("the client answered %s with a %T", method, res)
	}
	return r, nil
}
