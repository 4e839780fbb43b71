//lint:file-ignore SA1019 sampling, roots and logging are deprecated by MCP 2026-07-28 (SEP-2577) but clients and servers on earlier revisions use them, and toolshelf relays them on purpose during the deprecation window.

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/launcher"
	"github.com/toolshelf/toolshelf/signin"
)

// ClientName is how toolshelf introduces itself to upstream servers.
const ClientName = "toolshelf"

// stopGrace is how long a stdio server has to exit after its stdin is
// closed before it is sent SIGTERM. Some real servers (server-everything)
// ignore stdin EOF; waiting long for them only slows shutdown.
const stopGrace = 500 * time.Millisecond

// conn is one live session with an upstream server.
type conn struct {
	// version is the protocol version negotiated with the server, once
	// connected (see versionClient).
	version atomic.Pointer[string]
	session *mcp.ClientSession
	cancel  context.CancelFunc // ends the connection's lifetime context
	proc    *launcher.Process  // nil unless the server is a process toolshelf started
	info    catalog.Server
	caps    *mcp.ServerCapabilities
	// name is the server's; relay, for a server over HTTP on a
	// connection of the pool's own, sends the requests the SDK has no
	// method for (tasks.go).
	name  string
	relay *http.Client
	// tap is the connection under the SDK's session, which sends the
	// requests of extensions the SDK has no method for (request).
	tap *tapConn
}

// dial connects to the server with client and initializes a session,
// within ctx's deadline. fs learns of progress as it arrives. The returned conn is never nil, even with an
// error, so that the caller can read what a failed process printed; the
// caller closes it.
func dial(ctx context.Context, cfg *serverConfig, client *mcp.Client, fs *flights, logger *slog.Logger) (*conn, error) {
	// A connection made for a client's request (a person's own) must not
	// carry that request's values: the go-sdk reads the protocol version
	// of the request a server is answering from its context, and would
	// send the client's revision in this connection's initialize.
	ctx = withoutValues(ctx)
	life, cancel := context.WithCancel(context.Background())
	c := &conn{cancel: cancel, name: cfg.Name}
	dial, ok := dialers[cfg.TransportName()]
	if !ok {
		return c, fmt.Errorf("unknown transport %q", cfg.TransportName())
	}
	t, err := dial(ctx, cfg, c, logger)
	if err != nil {
		return c, err
	}
	session, err := client.Connect(ctx, tapTransport{lifetimeTransport{t, life}, fs, &c.tap}, nil)
	if err != nil {
		return c, c.explain(err)
	}
	c.session = session
	c.info = catalog.Server{Name: cfg.Name}
	if r := session.InitializeResult(); r != nil {
		c.version.Store(&r.ProtocolVersion)
		c.caps = r.Capabilities
		c.info.ProtocolVersion = r.ProtocolVersion
		c.info.Instructions = r.Instructions
		if r.ServerInfo != nil {
			c.info.Title = r.ServerInfo.Title
			if c.info.Title == "" {
				c.info.Title = r.ServerInfo.Name
			}
			c.info.Version = r.ServerInfo.Version
		}
	}
	return c, nil
}

// maxPages bounds tools/list pagination against a server whose cursors
// never end.
const maxPages = 1000

// listTools returns every tool the server lists, across all pages, as the
// raw JSON objects the server sent. fromFunctions reports that the server
// answered with an OpenAI-style "functions" array instead of "tools".
func (c *conn) listTools(ctx context.Context) (tools []json.RawMessage, fromFunctions bool, err error) {
	seen := make(map[string]bool)
	cursor := ""
	for range maxPages {
		cp := new(capture)
		res, err := c.session.ListTools(withCapture(ctx, cp), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, false, c.explain(fmt.Errorf("tools/list: %w", err))
		}
		page, functions := parseListResult(cp.result())
		switch {
		case page != nil:
			fromFunctions = fromFunctions || functions
		default:
			// Served from the SDK's cache (protocol 2026-07-28), so no
			// bytes were captured: fall back to the decoded tools.
			for _, t := range res.Tools {
				b, err := json.Marshal(t)
				if err != nil {
					return nil, false, err
				}
				page = append(page, b)
			}
		}
		tools = append(tools, page...)
		if res.NextCursor == "" || seen[res.NextCursor] {
			return tools, fromFunctions, nil
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	return nil, false, fmt.Errorf("tools/list: more than %d pages", maxPages)
}

// parseListResult reads the tool objects of a raw tools/list result. A
// result without "tools" but with an OpenAI-style "functions" array is
// read from that (fromFunctions). It returns nil when raw holds neither.
func parseListResult(raw json.RawMessage) (tools []json.RawMessage, fromFunctions bool) {
	if len(raw) == 0 {
		return nil, false
	}
	var r struct {
		Tools     []json.RawMessage `json:"tools"`
		Functions []json.RawMessage `json:"functions"`
	}
	if json.Unmarshal(raw, &r) != nil {
		return nil, false
	}
	if r.Tools != nil {
		return r.Tools, false
	}
	if r.Functions != nil {
		return functionTools(r.Functions), true
	}
	return []json.RawMessage{}, false
}

// call forwards a tools/call, asking for progress with token and for log
// messages at level unless they are empty. Cancelling ctx sends
// notifications/cancelled to the server.
func (c *conn) call(ctx context.Context, tool string, args json.RawMessage, token string, level mcp.LoggingLevel) (*mcp.CallToolResult, error) {
	params := &mcp.CallToolParams{Name: tool}
	if token != "" {
		params.SetProgressToken(token)
	}
	if level != "" {
		// MCP 2026-07-28 has no logging/setLevel: the level travels with
		// each request. Servers on earlier revisions ignore it.
		if params.Meta == nil {
			params.Meta = mcp.Meta{}
		}
		params.Meta[mcp.MetaKeyLogLevel] = string(level)
	}
	if len(bytes.TrimSpace(args)) > 0 && !bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		params.Arguments = args
	}
	c.declareTasks(ctx, params)
	res, err := c.session.CallTool(ctx, params)
	if err != nil {
		return nil, c.explain(err)
	}
	return res, nil
}

// dead reports whether the connection's process has exited.
func (c *conn) dead() bool {
	if c.proc == nil {
		return false
	}
	select {
	case <-c.proc.Done():
		return true
	default:
		return false
	}
}

// wait returns when the session has ended.
func (c *conn) wait() error {
	if c.session == nil {
		return nil
	}
	return c.session.Wait()
}

// close ends the session and stops the process, if any. The SDK's Close
// waits for the calls under way: one that never ends would hold it (and
// the pool's Reconfigure, and its shutdown) forever, so after stopGrace
// the connection is cancelled and the process stopped, which ends them.
func (c *conn) close() {
	closed := make(chan struct{})
	if c.session != nil {
		go func() { _ = c.session.Close(); close(closed) }()
	} else {
		close(closed)
	}
	grace := time.NewTimer(stopGrace)
	defer grace.Stop()
	select {
	case <-closed:
	case <-grace.C:
	}
	c.cancel()
	if c.proc != nil {
		c.proc.Stop(stopGrace)
	}
	grace.Reset(stopGrace)
	select {
	case <-closed:
	case <-grace.C: // a remote server's call that the cancel did not end: left to its own deadline
	}
}

// output returns what a stdio server printed outside JSON-RPC: stray
// stdout lines, then stderr.
func (c *conn) output() []byte {
	if c.proc == nil {
		return nil
	}
	return c.proc.Output()
}

// lifetimeTransport connects with the connection's lifetime context
// instead of the dial deadline: the SSE transport ties its event stream to
// the context Connect gets, so a deadline there would end the stream as
// soon as dialing finished. The deadline still bounds the wait.
type lifetimeTransport struct {
	mcp.Transport
	life context.Context
}

func (t lifetimeTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	type result struct {
		c   mcp.Connection
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := t.Transport.Connect(t.life)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// explain adds what a stdio server printed on stderr to an error, since
// that is usually where the real cause is ("invalid token", a stack
// trace). For a process that has exited, its exit status is added too.
func (c *conn) explain(err error) error {
	if c.proc == nil {
		return err
	}
	// A process whose stdout just closed is usually exiting; give it a
	// moment so that the error can say how it ended.
	select {
	case <-c.proc.Done():
		return fmt.Errorf("%w (server %s)", err, c.proc.ExitReason())
	case <-time.After(100 * time.Millisecond):
	}
	if tail := c.proc.StderrSaid(512); tail != "" {
		return fmt.Errorf("%w (stderr: %s)", err, tail)
	}
	return err
}

// headerClient returns an HTTP client that adds the configured headers to
// every request, or nil (the default client) when there are none.
// versionClient makes every request to a server after its initialize
// carry the protocol version negotiated with it. The go-sdk client's
// connection takes it from the session, which a wrapped transport (as
// the pool's are) does not hand on, and else from its request's context,
// which for a call made for a client's request is that client's revision
// (a 2026-07-28 client's call would be refused by an older server).
func versionClient(c *conn, base *http.Client) *http.Client {
	rt := http.DefaultTransport
	if base != nil && base.Transport != nil {
		rt = base.Transport
	}
	return &http.Client{Transport: versionTransport{c: c, base: rt}}
}

type versionTransport struct {
	c    *conn
	base http.RoundTripper
}

func (t versionTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if v := t.c.version.Load(); v != nil && *v != "" && req.Header.Get("Mcp-Protocol-Version") != *v {
		req = req.Clone(req.Context())
		req.Header.Set("Mcp-Protocol-Version", *v)
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil {
		t.c.capture(req, resp)
	}
	return resp, err
}

func headerClient(headers map[string]string) *http.Client {
	if len(headers) == 0 {
		return nil
	}
	return &http.Client{Transport: headerTransport{headers: headers, base: http.DefaultTransport}}
}

type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// hasAuthorization reports whether the configuration sends its own
// Authorization header: then toolshelf adds no token of its own.
func hasAuthorization(headers map[string]string) bool {
	for k := range headers {
		if strings.EqualFold(k, "Authorization") {
			return true
		}
	}
	return false
}

// bearerClient is headerClient for the legacy SSE transport, which takes
// no OAuth handler: it sends the stored token, and a 401 is an error that
// says how to sign in.
func bearerClient(cfg *serverConfig) *http.Client {
	if cfg.oauth == nil {
		return headerClient(cfg.Headers)
	}
	base := http.DefaultTransport
	if hc := headerClient(cfg.Headers); hc != nil {
		base = hc.Transport
	}
	return &http.Client{Transport: bearerTransport{cfg.oauth, cfg.Name, base}}
}

type bearerTransport struct {
	oauth  auth.OAuthHandler
	server string
	base   http.RoundTripper
}

func (t bearerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	ts, err := t.oauth.TokenSource(req.Context())
	if err != nil {
		return nil, err
	}
	if ts != nil {
		if tok, err := ts.Token(); err == nil {
			req = req.Clone(req.Context())
			tok.SetAuthHeader(req)
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err == nil && resp.StatusCode == http.StatusUnauthorized {
		resp.Body.Close()
		return nil, &signin.NeedsAuthError{Server: t.server, Reason: "the server refused the request"}
	}
	return resp, err
}

// withoutValues returns a context that ends when ctx does (its deadline,
// its cancellation) but holds none of its values. It lives as long as
// ctx: an in-process server dialled with it runs until then.
func withoutValues(ctx context.Context) context.Context {
	bare, cancel := context.WithCancel(context.Background())
	if d, ok := ctx.Deadline(); ok {
		var cancelDeadline context.CancelFunc
		bare, cancelDeadline = context.WithDeadline(bare, d)
		prev := cancel
		cancel = func() { cancelDeadline(); prev() }
	}
	context.AfterFunc(ctx, cancel)
	return bare
}
