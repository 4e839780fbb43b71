//lint:file-ignore SA1019 sampling, roots and logging are deprecated by MCP 2026-07-28 (SEP-2577) but clients and servers on earlier revisions use them, and toolshelf relays them on purpose during the deprecation window.

package upstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A server's connection is shared by every client of the gateway, yet what
// a server asks while it works on a request (sampling, elicitation, roots)
// and what it reports meanwhile (progress, log messages) belongs to the
// client that made the request. The pool keeps, per server, the requests
// in flight with the client each was made for, and sends the server's
// requests and notifications to that client:
//
//   - progress carries the token the pool put on the request, so it always
//     finds its client;
//   - a request or log message from a server with calls of one client in
//     flight goes to that client;
//   - with calls of several clients in flight, a request is refused rather
//     than sent to a client that may not have caused it (it could carry
//     another client's data); a log message goes to every client (see
//     Notices);
//   - with none in flight, a request is refused with an error that says so.

// A Client is the MCP client a request to a server is made for: the
// gateway's session with it. *mcp.ServerSession is one.
type Client interface {
	InitializeParams() *mcp.InitializeParams
	CreateMessage(context.Context, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	Elicit(context.Context, *mcp.ElicitParams) (*mcp.ElicitResult, error)
	ListRoots(context.Context, *mcp.ListRootsParams) (*mcp.ListRootsResult, error)
	NotifyProgress(context.Context, *mcp.ProgressNotificationParams) error
	Log(context.Context, *mcp.LoggingMessageParams) error
}

type clientKey struct{}

type clientValue struct {
	client Client
	token  any // the client's progress token, or nil
}

// WithClient returns a context for requests to servers made on behalf of
// c: what the server asks or reports while it works on them is sent to c.
// progressToken is c's progress token for the request, or nil when it
// asked for no progress.
func WithClient(ctx context.Context, c Client, progressToken any) context.Context {
	return context.WithValue(ctx, clientKey{}, clientValue{c, progressToken})
}

// ClientOf returns the client ctx's requests are made for (WithClient),
// or nil.
func ClientOf(ctx context.Context) Client {
	v, _ := ctx.Value(clientKey{}).(clientValue)
	return v.client
}

// Notice is something a server sent that no single request caused: a log
// message while no call of exactly one client was in flight, or a resource
// update. The gateway passes it to its clients.
type Notice struct {
	Server string
	// Log is a log message, for every client that set a level.
	Log *mcp.LoggingMessageParams
	// Updated is the URI of a resource that changed, as the server names
	// it, for the clients that subscribed to it.
	Updated string
}

// flight is one request in flight on a server.
type flight struct {
	ctx    context.Context // the client's request; sends to the client use it
	client Client
	token  any    // the client's progress token
	ours   string // the progress token sent to the server in its place
}

// flights are a server's requests in flight.
type flights struct {
	mu     sync.Mutex
	byPtr  map[*flight]bool
	tokens map[string]*flight
	// queued counts progress notifications read but not yet passed on,
	// by token; passedOn is closed and replaced whenever one is.
	queued   map[string]int
	passedOn chan struct{}
	// logsRead and logsDone count the server's log messages read from
	// the connection and handled (sent to a client or queued as a
	// Notice): a call's answer waits for the log messages sent before
	// it, as for progress.
	logsRead, logsDone int64
}

// logArrived records a log message as read from the connection.
func (fs *flights) logArrived() {
	fs.mu.Lock()
	fs.logsRead++
	fs.mu.Unlock()
}

// logDone records a log message as handled.
func (fs *flights) logDone() {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	fs.logsDone++
	if fs.passedOn != nil {
		close(fs.passedOn)
		fs.passedOn = nil
	}
}

// arrived records a progress notification as read from the connection.
func (fs *flights) arrived(token string) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if _, ours := fs.tokens[token]; !ours {
		return
	}
	if fs.queued == nil {
		fs.queued = make(map[string]int)
	}
	fs.queued[token]++
}

// passed records a progress notification as handled.
func (fs *flights) passed(token any) {
	s, _ := token.(string)
	fs.mu.Lock()
	defer fs.mu.Unlock()
	if fs.queued[s] == 0 {
		return
	}
	if fs.queued[s]--; fs.queued[s] == 0 {
		delete(fs.queued, s)
	}
	if fs.passedOn != nil {
		close(fs.passedOn)
		fs.passedOn = nil
	}
}

// drainWait bounds drain: the handler runs in microseconds, and a
// notification it never gets must not hold a call's answer for long. But
// a busy machine may not run it for a while: at a load of 11 on 2 cores
// a second was not enough, and the conformance scenario
// tools-call-with-logging saw the answer before the log messages.
const drainWait = 5 * time.Second

// drain waits until the progress notifications of token, and the log
// messages, read so far have been passed on.
func (fs *flights) drain(ctx context.Context, token string) {
	timer := time.NewTimer(drainWait)
	defer timer.Stop()
	fs.mu.Lock()
	logs := fs.logsRead
	fs.mu.Unlock()
	for {
		fs.mu.Lock()
		n := fs.queued[token]
		logsPending := fs.logsDone < logs
		if fs.passedOn == nil {
			fs.passedOn = make(chan struct{})
		}
		ch := fs.passedOn
		fs.mu.Unlock()
		if n == 0 && !logsPending {
			return
		}
		select {
		case <-ch:
		case <-timer.C:
			// Whatever was never handled will not be: count it so, or
			// every later call would wait for it.
			fs.mu.Lock()
			delete(fs.queued, token)
			fs.logsDone = max(fs.logsDone, logs)
			fs.mu.Unlock()
			return
		case <-ctx.Done():
			return
		}
	}
}

var tokenSeq atomic.Int64

// start records a request made with ctx, if ctx names its client, and
// returns the progress token to send with it ("" for none) and the
// function that ends the record.
func (fs *flights) start(ctx context.Context) (token string, end func()) {
	v, ok := ctx.Value(clientKey{}).(clientValue)
	if !ok || v.client == nil {
		return "", func() {}
	}
	f := &flight{ctx: ctx, client: v.client, token: v.token}
	if v.token != nil {
		f.ours = fmt.Sprintf("toolshelf-%d", tokenSeq.Add(1))
	}
	fs.mu.Lock()
	if fs.byPtr == nil {
		fs.byPtr, fs.tokens = make(map[*flight]bool), make(map[string]*flight)
	}
	fs.byPtr[f] = true
	if f.ours != "" {
		fs.tokens[f.ours] = f
	}
	fs.mu.Unlock()
	return f.ours, func() {
		fs.mu.Lock()
		delete(fs.byPtr, f)
		delete(fs.tokens, f.ours)
		delete(fs.queued, f.ours)
		fs.mu.Unlock()
	}
}

// byToken returns the request a progress token was sent with.
func (fs *flights) byToken(token any) (*flight, bool) {
	s, ok := token.(string)
	if !ok {
		return nil, false
	}
	fs.mu.Lock()
	defer fs.mu.Unlock()
	f, ok := fs.tokens[s]
	return f, ok
}

// only returns a request in flight when all of them are of one client.
// n is the number of distinct clients with requests in flight.
func (fs *flights) only() (f *flight, n int) {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	seen := make(map[Client]bool)
	for g := range fs.byPtr {
		if !seen[g.client] {
			seen[g.client] = true
			f = g
		}
	}
	if len(seen) != 1 {
		return nil, len(seen)
	}
	return f, 1
}

// ErrNoClient is returned to a server that asks something of a client
// when toolshelf cannot tell which client it is for.
var ErrNoClient = errors.New("no client to ask")

// clientFor returns the client a server's request (sampling, elicitation,
// roots) goes to, and the context to send it with: one that ends when the
// server's request or the client's own does. need names the capability the
// client must have declared ("" for none). The caller calls done.
func (s *server) clientFor(ctx context.Context, method string, need func(*mcp.ClientCapabilities) bool) (cl Client, sendCtx context.Context, done func(), err error) {
	f, n := s.flights.only()
	if v, ok := ctx.Value(clientKey{}).(clientValue); ok && v.client != nil {
		// A multi-round-trip server (MCP 2026-07-28) asks in the result of
		// the request itself; the go-sdk fulfils it in that request's
		// context, so the client is known for certain.
		f, n = &flight{ctx: ctx, client: v.client}, 1
	}
	switch {
	case n == 0:
		return nil, nil, nil, fmt.Errorf("%w: server %s sent %s while no client request of it was in progress, so toolshelf cannot tell which client it is for", ErrNoClient, s.cfg.Name, method)
	case n > 1:
		return nil, nil, nil, fmt.Errorf("%w: server %s sent %s while requests of %d clients were in progress; toolshelf does not guess which client it is for", ErrNoClient, s.cfg.Name, method, n)
	}
	if need != nil {
		var caps *mcp.ClientCapabilities
		if p := f.client.InitializeParams(); p != nil {
			caps = p.Capabilities
		}
		if caps == nil || !need(caps) {
			return nil, nil, nil, fmt.Errorf("the client did not declare the capability %s needs", method)
		}
	}
	sendCtx, cancel := context.WithCancel(f.ctx)
	stop := context.AfterFunc(ctx, cancel)
	return f.client, sendCtx, func() { stop(); cancel() }, nil
}

// clientOptions are the handlers of a server's connection: each passes
// what the server sends to the client it is for.
// clientCapabilities are what the pool's connections declare: what any
// client behind the gateway might answer, which each request goes to a
// client that can (clientFor).
func clientCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{},
		Sampling:    &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}, URL: &mcp.URLElicitationCapabilities{}},
	}
}

func (s *server) clientOptions() *mcp.ClientOptions {
	return &mcp.ClientOptions{
		Capabilities: clientCapabilities(),
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			cl, sctx, done, err := s.clientFor(ctx, "sampling/createMessage", func(c *mcp.ClientCapabilities) bool { return c.Sampling != nil })
			if err != nil {
				return nil, err
			}
			defer done()
			p := *req.Params
			if !s.redactor().CutParams(&p) {
				return nil, errWithheld("sampling/createMessage")
			}
			defer s.pool.progressBack(req.Session, &p)()
			return cl.CreateMessage(sctx, &p)
		},
		ElicitationHandler: func(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			url := req.Params.Mode == "url"
			cl, sctx, done, err := s.clientFor(ctx, "elicitation/create", func(c *mcp.ClientCapabilities) bool {
				e := c.Elicitation
				if url {
					return e != nil && e.URL != nil
				}
				return e != nil && (e.Form != nil || e.URL == nil) // {} means form
			})
			if err != nil {
				return nil, err
			}
			defer done()
			p := *req.Params
			if !s.redactor().CutParams(&p) {
				return nil, errWithheld("elicitation/create")
			}
			defer s.pool.progressBack(req.Session, &p)()
			return cl.Elicit(sctx, &p)
		},
		ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { signal(s.relist) },
		PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
			signal(s.relistOffer)
		},
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) {
			signal(s.relistOffer)
		},
		ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
			s.pool.notice(Notice{Server: s.cfg.Name, Updated: req.Params.URI})
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			defer s.flights.passed(req.Params.ProgressToken)
			f, ok := s.flights.byToken(req.Params.ProgressToken)
			if !ok {
				return // a request that has ended, or a token of no request
			}
			p := *req.Params
			if !s.redactor().CutParams(&p) {
				return // what held a secret and cannot be cut is not passed on
			}
			p.ProgressToken = f.token
			_ = f.client.NotifyProgress(f.ctx, &p)
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			defer s.flights.logDone()
			p := *req.Params
			if !s.redactor().CutParams(&p) {
				return
			}
			if f, n := s.flights.only(); n == 1 {
				_ = f.client.Log(f.ctx, &p)
				return
			}
			s.pool.notice(Notice{Server: s.cfg.Name, Log: &p})
		},
	}
}

// errWithheld is a server's request to a client that held a secret and
// could not be cut: it is not passed on.
func errWithheld(method string) error {
	return fmt.Errorf("%s withheld: it held a secret the gateway could not cut from it", method)
}

// rootsMiddleware sends a server's roots/list to the client it is for;
// the go-sdk would answer it from the client's own (empty) roots.
func (s *server) rootsMiddleware(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method != "roots/list" {
			return next(ctx, method, req)
		}
		cl, sctx, done, err := s.clientFor(ctx, method, func(c *mcp.ClientCapabilities) bool { return c.RootsV2 != nil })
		if err != nil {
			return nil, err
		}
		defer done()
		p, _ := req.GetParams().(*mcp.ListRootsParams)
		return cl.ListRoots(sctx, p)
	}
}

// signal wakes a supervisor loop without blocking.
func signal(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// Progress flows the other way too: a client may report progress on a
// server's request (a long sampling). The pool gives the request a token
// of its own, unique across servers, and sends the client's progress back
// to the server under the server's token.

// backRoute is where a client's progress on a server's request goes.
type backRoute struct {
	session *mcp.ClientSession
	token   any
}

// progressBack replaces the progress token of a server's request p, if it
// has one, with a token of the pool's, and returns the function that
// forgets it once the request is answered.
func (p *Pool) progressBack(cs *mcp.ClientSession, params interface {
	GetProgressToken() any
	GetMeta() map[string]any
	SetMeta(map[string]any)
}) func() {
	token := params.GetProgressToken()
	if token == nil || cs == nil {
		return func() {}
	}
	ours := fmt.Sprintf("toolshelf-back-%d", tokenSeq.Add(1))
	meta := maps.Clone(params.GetMeta())
	meta["progressToken"] = ours
	params.SetMeta(meta)
	p.back.Store(ours, backRoute{cs, token})
	return func() { p.back.Delete(ours) }
}

// Progress sends a client's progress notification back to the server
// whose request it is about. It reports whether the token was one of a
// server's requests in progress.
func (p *Pool) Progress(ctx context.Context, params *mcp.ProgressNotificationParams) bool {
	token, _ := params.ProgressToken.(string)
	v, ok := p.back.Load(token)
	if !ok {
		return false
	}
	r := v.(backRoute)
	q := *params
	q.ProgressToken = r.token
	_ = r.session.NotifyProgress(ctx, &q)
	return true
}
