package upstream

import (
	"context"
	"encoding/json"
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
}

func (t tapTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &tapConn{Connection: c, pending: make(map[jsonrpc.ID]*capture), flights: t.flights}, nil
}

type tapConn struct {
	mcp.Connection
	mu      sync.Mutex
	pending map[jsonrpc.ID]*capture
	flights *flights
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
	msg, err := c.Connection.Read(ctx)
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
