package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk decodes results into its own types, which drop fields it does
// not model (a tool's "execution", for one). A tap sits between the SDK and
// the transport and copies the raw result of the calls whose context
// carries a capture, so that tools are kept exactly as the server sent
// them. The SDK passes the caller's context down to Connection.Write, which
// is how a request is tied to its capture.

type captureKey struct{}

// capture receives the raw result of one call.
type capture struct {
	mu  sync.Mutex
	raw json.RawMessage
}

func (c *capture) result() json.RawMessage {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.raw
}

// withCapture returns a context whose call's raw result lands in c.
func withCapture(ctx context.Context, c *capture) context.Context {
	return context.WithValue(ctx, captureKey{}, c)
}

// The tap also sees progress notifications and log messages in the order
// they came, before the go-sdk queues them for its handlers, so that a
// call's response can wait for those sent before it (flights.drain).

type tapTransport struct {
	mcp.Transport
	flights *flights
	opened  **tapConn // set by Connect, for requests the SDK has no method for
}

func (t tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	tc := &tapConn{Connection: c, pending: make(map[jsonrpc.ID]*capture), calls: make(map[jsonrpc.ID]chan *jsonrpc.Response), flights: t.flights}
	if t.opened != nil {
		*t.opened = tc
	}
	return tc, nil
}

type tapConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]*capture
	calls   map[jsonrpc.ID]chan *jsonrpc.Response // the tap's own requests (call)
	next    int64
	flights *flights
}

// call sends a request the go-sdk has no method for (an extension's, such
// as skills/list) on the connection, and returns its result: the answer
// is taken off the connection before the SDK, which did not ask, sees it.
// Its ids are strings of the tap's own, which the SDK's never are.
func (c *tapConn) call(ctx context.Context, method string, params any) (json.RawMessage, error) {
	raw, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	c.mu.Lock()
	c.next++
	id, _ := jsonrpc.MakeID(fmt.Sprintf("toolshelf-%d", c.next))
	answer := make(chan *jsonrpc.Response, 1)
	c.calls[id] = answer
	c.mu.Unlock()
	defer func() {
		c.mu.Lock()
		delete(c.calls, id)
		c.mu.Unlock()
	}()
	if err := c.Connection.Write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: raw}); err != nil {
		return nil, err
	}
	select {
	case resp := <-answer:
		if resp.Error != nil {
			return nil, resp.Error
		}
		return resp.Result, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (c *tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		if cp, ok := ctx.Value(captureKey{}).(*capture); ok {
			c.mu.Lock()
			c.pending[req.ID] = cp
			c.mu.Unlock()
		}
	}
	return c.Connection.Write(ctx, msg)
}

func (c *tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
			c.mu.Lock()
			answer, mine := c.calls[resp.ID]
			c.mu.Unlock()
			if mine {
				select {
				case answer <- resp:
				default: // a second answer to one request: dropped
				}
				continue
			}
		}
		return c.read(msg, err)
	}
}

// read notes what the SDK is about to read.
func (c *tapConn) read(msg jsonrpc.Message, err error) (jsonrpc.Message, error) {
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && req.Method == "notifications/progress" && c.flights != nil {
		var p struct {
			Token any `json:"progressToken"`
		}
		if json.Unmarshal(req.Params, &p) == nil {
			if token, ok := p.Token.(string); ok {
				c.flights.arrived(token)
			}
		}
	}
	if req, ok := msg.(*jsonrpc.Request); ok && !req.IsCall() && req.Method == "notifications/message" && c.flights != nil {
		c.flights.logArrived()
	}
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		cp := c.pending[resp.ID]
		delete(c.pending, resp.ID)
		c.mu.Unlock()
		if cp != nil {
			cp.mu.Lock()
			cp.raw = resp.Result
			cp.mu.Unlock()
		}
	}
	return msg, err
}
