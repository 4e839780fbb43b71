//lint:file-ignore SA1019 sampling, roots and logging are deprecated by MCP 2026-07-28 (SEP-2577) but clients and servers on earlier revisions use them, and toolshelf relays them on purpose during the deprecation window.

package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/upstream"
)

// inMemory serves srv as an upstream named name.
func inMemory(name string, srv *mcp.Server) config.ServerConfig {
	return config.ServerConfig{Name: name, Dial: func(context.Context) (mcp.Transport, error) {
		st, ct := mcp.NewInMemoryTransports()
		go srv.Run(context.Background(), st)
		return ct, nil
	}}
}

// legacyServer asks its client things from inside its tools, as servers
// on MCP revisions before 2026-07-28 do (the newer revision asks in the
// result instead; the conformance fixture does that).
func legacyServer(h *hooks) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "legacy", Version: "test"}, &mcp.ServerOptions{
		SupportedProtocolVersions: []string{"2025-11-25"},
		SubscribeHandler: func(context.Context, *mcp.SubscribeRequest) error {
			h.subscribed.Add(1)
			return nil
		},
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationServerRequest) {
			h.progress <- req.Params.ProgressToken
		},
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	add := func(name string, h func(context.Context, *mcp.CallToolRequest) (string, error)) {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			out, err := h(ctx, req)
			if err != nil {
				return nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: out}}}, nil
		})
	}
	add("elicit", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		res, err := req.Session.Elicit(ctx, &mcp.ElicitParams{Message: "who are you?", RequestedSchema: map[string]any{
			"type": "object", "properties": map[string]any{"name": map[string]any{"type": "string"}}}})
		if err != nil {
			return "", err
		}
		return fmt.Sprintf("%s %v", res.Action, res.Content["name"]), nil
	})
	add("sample", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		p := &mcp.CreateMessageParams{MaxTokens: 10, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}
		p.SetProgressToken("server-token")
		res, err := req.Session.CreateMessage(ctx, p)
		if err != nil {
			return "", err
		}
		return res.Content.(*mcp.TextContent).Text, nil
	})
	add("roots", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		res, err := req.Session.ListRoots(ctx, nil)
		if err != nil {
			return "", err
		}
		return res.Roots[0].URI, nil
	})
	add("progress", func(ctx context.Context, req *mcp.CallToolRequest) (string, error) {
		for i := range 3 {
			_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: req.Params.GetProgressToken(), Progress: float64(i), Total: 3})
		}
		// The result follows at once: the go-sdk client queues
		// notifications but not responses, so the pool must see that the
		// progress is passed on first.
		return "done", nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{Name: "item", URITemplate: "legacy://item/{id}"}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "item"}}}, nil
	})
	return s
}

// legacy is the MCP revision of today's clients (Claude Code, the
// TypeScript SDK), which a server can send requests to while it works.
const legacy = "2025-11-25"

// hooks are what the legacy server saw: subscriptions, and progress the
// client reported on its requests.
type hooks struct {
	subscribed atomic.Int32
	progress   chan any
}

func newHooks() *hooks { return &hooks{progress: make(chan any, 10)} }

// connectWith connects a client of the test's making to the gateway, on
// the legacy revision.
func connectWith(t *testing.T, g *Server, c *mcp.Client) *mcp.ClientSession {
	t.Helper()
	st, ct := mcp.NewInMemoryTransports()
	go g.MCPServer().Run(context.Background(), st)
	cs, err := c.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectLegacy connects a client with opts on the legacy revision.
func connectLegacy(t *testing.T, g *Server, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectWith(t, g, mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts))
}

func answering(name string) *mcp.ClientOptions {
	return &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": name}}, nil
		},
		CreateMessageHandler: func(ctx context.Context, req *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				_ = req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1})
				// The gateway handles notifications in order with requests
				// but answers at once: the ping's answer says the progress
				// was handled before the sampling answer overtakes it.
				_ = req.Session.Ping(ctx, nil)
			}
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "sampled by " + name}}, nil
		},
		Capabilities: &mcp.ClientCapabilities{RootsV2: &mcp.RootCapabilities{}},
	}
}

// What a server asks of a client while it works on a call goes to the
// client that made the call, and only to it.
func TestServerRequestsReachTheirClient(t *testing.T) {
	h := newHooks()
	g, _ := gatewayFor(t, &Options{Settings: allMode}, inMemory("legacy", legacyServer(h)))
	ca := mcp.NewClient(&mcp.Implementation{Name: "a", Version: "1"}, answering("a"))
	ca.AddRoots(&mcp.Root{URI: "file:///a"})
	a := connectWith(t, g, ca)
	b := connectLegacy(t, g, answering("b"))

	for _, tc := range []struct {
		cs         *mcp.ClientSession
		tool, want string
	}{
		{a, "mcp__legacy__elicit", "accept a"},
		{b, "mcp__legacy__elicit", "accept b"},
		{a, "mcp__legacy__sample", "sampled by a"},
		{b, "mcp__legacy__sample", "sampled by b"},
		{a, "mcp__legacy__roots", "file:///a"},
	} {
		if res := call(t, tc.cs, tc.tool, nil); res.IsError || text(res) != tc.want {
			t.Errorf("%s: %s (want %q)", tc.tool, text(res), tc.want)
		}
	}

	// The client's progress on the server's sampling request went back to
	// the server under the server's own token.
	for range 2 {
		select {
		case tok := <-h.progress:
			if tok != "server-token" {
				t.Errorf("the server got progress under %v", tok)
			}
		case <-time.After(testenv.Timeout(config.DefaultTimeout)):
			t.Fatal("the client's progress on sampling did not reach the server")
		}
	}

	// Progress reaches the caller under the caller's own token.
	got := make(chan any, 10)
	progress := &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
		got <- req.Params.ProgressToken
	}}
	c := connectLegacy(t, g, progress)
	params := &mcp.CallToolParams{Name: "mcp__legacy__progress"}
	params.SetProgressToken("mine")
	if _, err := c.CallTool(context.Background(), params); err != nil {
		t.Fatal(err)
	}
	for range 3 {
		select {
		case tok := <-got:
			if tok != "mine" {
				t.Errorf("progress token %v, want the client's own", tok)
			}
		case <-time.After(testenv.Timeout(config.DefaultTimeout)):
			t.Fatal("fewer than three progress notifications")
		}
	}
}

var allMode = policy.Settings{Mode: policy.ModeStandard}

// A server's request the client cannot answer gets the protocol's error
// at once, and the gateway goes on serving.
func TestServerRequestFaults(t *testing.T) {
	h := newHooks()
	g, _ := gatewayFor(t, &Options{Settings: allMode}, inMemory("legacy", legacyServer(h)))

	// No sampling capability: the server gets an error that says so.
	plain := connectLegacy(t, g, nil)
	if res := call(t, plain, "mcp__legacy__sample", nil); !res.IsError || !strings.Contains(text(res), "did not declare the capability") {
		t.Errorf("sampling without the capability: %s", text(res))
	}

	// A client that goes away while the server waits for its answer: the
	// call ends, and the next client is asked as if nothing happened.
	asked, release := make(chan struct{}), make(chan struct{})
	defer close(release)
	st, ct := mcp.NewInMemoryTransports()
	go g.MCPServer().Run(context.Background(), st)
	wire := &killable{Transport: ct}
	gone, err := mcp.NewClient(&mcp.Implementation{Name: "gone", Version: "1"}, &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			close(asked)
			<-release
			return nil, errors.New("gone")
		}}).Connect(context.Background(), wire, &mcp.ClientSessionOptions{ProtocolVersion: legacy})
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() {
		_, err := gone.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__legacy__elicit"})
		errc <- err
	}()
	<-asked
	wire.conn.Close() // the client's process dies
	select {
	case <-errc:
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Fatal("the call of a client that went away did not end")
	}
	next := connectLegacy(t, g, answering("next"))
	testenv.Eventually(t, config.DefaultTimeout, "the next client to be asked", func() bool {
		res := call(t, next, "mcp__legacy__elicit", nil)
		return text(res) == "accept next"
	})

	// A URI no server owns.
	_, err = next.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "nobody://x"})
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) || rpc.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("reading a URI no server owns: %v", err)
	}
}

// Subscriptions: a storm is bounded; a server that restarts is
// subscribed again, and its updates still reach the subscriber.
func TestSubscriptions(t *testing.T) {
	h := newHooks()
	srv := legacyServer(h)
	g, _ := gatewayFor(t, &Options{MaxSubscriptions: 5}, inMemory("legacy", srv))
	updated := make(chan string, 10)
	cs := connectLegacy(t, g, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
		updated <- req.Params.URI
	}})
	var refused error
	for i := range 8 {
		if err := cs.Subscribe(context.Background(), &mcp.SubscribeParams{URI: fmt.Sprintf("legacy://item/%d", i)}); err != nil {
			refused = err
			break
		}
	}
	if refused == nil || !strings.Contains(refused.Error(), "5 resource subscriptions") {
		t.Errorf("the sixth subscription: %v", refused)
	}
	if n := h.subscribed.Load(); n != 5 {
		t.Errorf("the server got %d subscriptions, want 5", n)
	}

	// The server's connection drops; the pool reconnects and subscribes
	// again, and an update reaches the client.
	for ss := range srv.Sessions() {
		ss.Close()
	}
	testenv.Eventually(t, config.DefaultTimeout, "the five subscriptions to be made again", func() bool { return h.subscribed.Load() >= 10 })
	if err := srv.ResourceUpdated(context.Background(), &mcp.ResourceUpdatedNotificationParams{URI: "legacy://item/3"}); err != nil {
		t.Fatal(err)
	}
	select {
	case uri := <-updated:
		if uri != "legacy://item/3" {
			t.Errorf("updated %s", uri)
		}
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Error("no update after the server restarted")
	}
}

// Prompts, resources and templates keep their names unless two servers
// share one; then each is named for its server, and still reaches it.
func TestOffersNamedUniquely(t *testing.T) {
	only := mcp.NewServer(&mcp.Implementation{Name: "only", Version: "test"}, nil)
	only.AddPrompt(&mcp.Prompt{Name: "unique"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "from only"}}}}, nil
	})
	g, _ := gatewayFor(t, nil, inMemory("a", mcptest.Fixture()), inMemory("b", mcptest.Fixture()), inMemory("only", only))
	cs := connectLegacy(t, g, nil)
	ctx := context.Background()

	var prompts []string
	for p, err := range cs.Prompts(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		prompts = append(prompts, p.Name)
	}
	for _, want := range []string{"unique", "a__test_simple_prompt", "b__test_simple_prompt"} {
		if !slices.Contains(prompts, want) {
			t.Errorf("prompt %s not among %v", want, prompts)
		}
	}
	res, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "unique"})
	if err != nil || res.Messages[0].Content.(*mcp.TextContent).Text != "from only" {
		t.Errorf("unique: %v %v", res, err)
	}
	if _, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b__test_prompt_with_arguments", Arguments: map[string]string{"arg1": "x", "arg2": "y"}}); err != nil {
		t.Errorf("b's prompt: %v", err)
	}

	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "toolshelf://b/test://static-text"})
	if err != nil || read.Contents[0].URI != "toolshelf://b/test://static-text" || read.Contents[0].Text == "" {
		t.Errorf("b's resource: %+v %v", read, err)
	}
	read, err = cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "toolshelf://a/test://template/7/data"})
	if err != nil || !strings.Contains(read.Contents[0].Text, `"7"`) {
		t.Errorf("a's template: %+v %v", read, err)
	}
	done, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "a__test_prompt_with_arguments"}, Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "pa"}})
	if err != nil || !slices.Contains(done.Completion.Values, "paris") {
		t.Errorf("completion through the gateway: %+v %v", done, err)
	}
}

// killable is a transport whose connection a test can drop, as a client
// process that dies drops it.
type killable struct {
	mcp.Transport
	conn mcp.Connection
}

func (k *killable) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := k.Transport.Connect(ctx)
	k.conn = c
	return c, err
}

// A client on MCP 2026-07-28 takes a server's questions as the call's
// result and calls again with the answers; the gateway turns a legacy
// server's mid-call questions into such rounds, directly listed tools and
// call_tool alike.
func TestServerRequestsToNewClients(t *testing.T) {
	h := newHooks()
	for _, mode := range []policy.Settings{allMode, {Mode: policy.ModeAlways}} {
		g, _ := gatewayFor(t, &Options{Settings: mode}, inMemory("legacy", legacyServer(h)))
		c := mcp.NewClient(&mcp.Implementation{Name: "new", Version: "1"}, answering("new"))
		c.AddRoots(&mcp.Root{URI: "file:///new"})
		st, ct := mcp.NewInMemoryTransports()
		go g.MCPServer().Run(context.Background(), st)
		cs, err := c.Connect(context.Background(), ct, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		if v := cs.InitializeResult().ProtocolVersion; v < "2026-07-28" {
			t.Fatalf("the client negotiated %s", v)
		}
		for tool, want := range map[string]string{"elicit": "accept new", "sample": "sampled by new", "roots": "file:///new"} {
			name, args := "mcp__legacy__"+tool, any(nil)
			if mode.Mode == policy.ModeAlways {
				name, args = toolCall, map[string]any{"name": "mcp__legacy__" + tool}
			}
			if res := call(t, cs, name, args); res.IsError || text(res) != want {
				t.Errorf("%s %s: %s (want %q)", mode.Mode, tool, text(res), want)
			}
		}
		// Answers for no waiting call (a guess, or one that expired).
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolCall, Arguments: map[string]any{"name": "mcp__legacy__elicit"}, RequestState: "guessed"})
		if mode.Mode == policy.ModeAlways && (err != nil || !res.IsError || !strings.Contains(text(res), "has ended")) {
			t.Errorf("answers for no call: %v %v", err, res)
		}
	}
}

// A server's prompts/list_changed reaches the gateway's clients with the
// new list.
func TestOffersFollowListChanged(t *testing.T) {
	srv := mcp.NewServer(&mcp.Implementation{Name: "dyn", Version: "test"}, nil)
	prompt := func(name string) {
		srv.AddPrompt(&mcp.Prompt{Name: name}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: name}}}}, nil
		})
	}
	prompt("first")
	g, _ := gatewayFor(t, nil, inMemory("dyn", srv))
	changed := make(chan struct{}, 10)
	cs := connectLegacy(t, g, &mcp.ClientOptions{PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) {
		changed <- struct{}{}
	}})
	prompt("second")
	select {
	case <-changed:
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Fatal("no prompts/list_changed reached the client")
	}
	testenv.Eventually(t, config.DefaultTimeout, "the new prompt to be listed", func() bool {
		res, err := cs.ListPrompts(context.Background(), nil)
		return err == nil && len(res.Prompts) == 2
	})
	if res, err := cs.GetPrompt(context.Background(), &mcp.GetPromptParams{Name: "second"}); err != nil || res.Messages[0].Content.(*mcp.TextContent).Text != "second" {
		t.Errorf("the new prompt: %v %v", res, err)
	}
}

// One upstream connection serves every profile, so the rule for what a
// server asks (sampling, elicitation, roots) is: it goes to the client
// whose call is in flight on that server, which is a client of the
// profile that made the call; while calls of several clients (of any
// profiles) are in flight on the server, it goes to none of them. A
// client of one profile is never asked on behalf of another's call.
func TestServerRequestsStayInTheirProfile(t *testing.T) {
	h := newHooks()
	pool := upstream.NewPool([]config.ServerConfig{inMemory("legacy", legacyServer(h))}, &upstream.Options{RestartDelay: 20 * time.Millisecond})
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*config.DefaultTimeout))
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	gateway := func(name string) *Server {
		return newGateway(t, pool.Scope(&config.Profile{Name: name, Servers: []string{"legacy"}}), &Options{Settings: allMode})
	}
	ops, guest := gateway("ops"), gateway("guest")

	var guestAsked atomic.Int32
	holding, release := make(chan struct{}), make(chan struct{})
	opsClient := connectLegacy(t, ops, &mcp.ClientOptions{ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		close(holding)
		<-release
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "ops"}}, nil
	}})
	guestOpts := answering("guest")
	guestOpts.ElicitationHandler = func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		guestAsked.Add(1)
		return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "guest"}}, nil
	}
	guestClient := connectLegacy(t, guest, guestOpts)

	// Each profile's client alone is asked about its own call.
	if res := call(t, guestClient, "mcp__legacy__sample", nil); text(res) != "sampled by guest" {
		t.Errorf("the guest's own call: %s", text(res))
	}
	// While the ops client's call waits on its question, the guest's
	// call makes the server ask again: two clients of two profiles are in
	// flight, so neither is asked, and the guest's call fails.
	done := make(chan *mcp.CallToolResult, 1)
	go func() {
		res, _ := opsClient.CallTool(context.Background(), &mcp.CallToolParams{Name: "mcp__legacy__elicit"})
		done <- res
	}()
	<-holding
	res := call(t, guestClient, "mcp__legacy__elicit", nil)
	if !res.IsError || guestAsked.Load() != 0 {
		t.Errorf("the guest was asked (%d) or served during the ops client's call: %s", guestAsked.Load(), text(res))
	}
	close(release)
	if res := <-done; res == nil || text(res) != "accept ops" {
		t.Errorf("the ops client's call: %v", res)
	}
}

// loggingServer has one tool, which remembers the session it was called
// on; log then sends a log message on it, out of any request, as a
// server does that logs after a call returned.
type loggingServer struct {
	srv  *mcp.Server
	mu   sync.Mutex
	last *mcp.ServerSession
}

func newLoggingServer(name, tool string) *loggingServer {
	l := &loggingServer{srv: mcp.NewServer(&mcp.Implementation{Name: name, Version: "test"}, nil)}
	mcp.AddTool(l.srv, &mcp.Tool{Name: tool, Description: "Remember some text."}, func(_ context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		l.mu.Lock()
		l.last = req.Session
		l.mu.Unlock()
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
	})
	return l
}

func (l *loggingServer) log(t *testing.T, data string) {
	t.Helper()
	l.mu.Lock()
	ss := l.last
	l.mu.Unlock()
	if err := ss.Log(context.Background(), &mcp.LoggingMessageParams{Level: "info", Data: data}); err != nil {
		t.Fatal(err)
	}
}

// logClient collects the log messages a session gets.
func logClient(t *testing.T, g *Server, got chan<- string) *mcp.ClientSession {
	t.Helper()
	cs := connectWith(t, g, mcp.NewClient(&mcp.Implementation{Name: "logs", Version: "1"}, &mcp.ClientOptions{
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			s, _ := req.Params.Data.(string)
			got <- s
		},
	}))
	if err := cs.SetLoggingLevel(context.Background(), &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	return cs
}

// A log message a shared server sends after profile X's call returned,
// holding X's arguments, does not reach profile Y's session, though Y set
// a level; Y gets the log messages of a server that is Y's alone, and the
// unprofiled view (every server's) gets both.
func TestNoticesStayInTheirProfile(t *testing.T) {
	shared, own := newLoggingServer("shared", "remember"), newLoggingServer("own", "note")
	pool := upstream.NewPool([]config.ServerConfig{inMemory("shared", shared.srv), inMemory("own", own.srv)}, nil)
	h, err := NewHost(pool, &HostOptions{Profiles: []config.Profile{
		{Name: "x", Servers: []string{"shared"}},
		{Name: "y", Servers: []string{"shared", "own"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	background(t, h.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*config.DefaultTimeout))
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	xLogs, yLogs, adminLogs := make(chan string, 16), make(chan string, 16), make(chan string, 16)
	x := logClient(t, h.Gateway("x"), xLogs)
	y := logClient(t, h.Gateway("y"), yLogs)
	logClient(t, h.Main(), adminLogs)
	const secret = "x's arguments: card 4111-1111"
	call(t, x, toolCall, map[string]any{"name": "mcp__shared__remember", "arguments": map[string]any{"text": secret}})
	call(t, y, toolCall, map[string]any{"name": "mcp__own__note", "arguments": map[string]any{"text": "hi"}})

	shared.log(t, secret)
	waitFor := func(ch <-chan string, want, who string) []string {
		t.Helper()
		var seen []string
		for {
			select {
			case s := <-ch:
				if s == want {
					return seen
				}
				seen = append(seen, s)
			case <-time.After(testenv.Timeout(10 * time.Second)):
				t.Fatalf("timed out waiting for %s to get %q (got %q)", who, want, seen)
			}
		}
	}
	waitFor(adminLogs, secret, "the unprofiled view")
	// Notices reach each profile in the order the pool got them: once Y
	// has the later log of its own server, it would have had the shared
	// one before it.
	own.log(t, "own server's log")
	if seen := waitFor(yLogs, "own server's log", "profile y"); slices.Contains(seen, secret) {
		t.Errorf("profile y got profile x's log message: %q", seen)
	}
	select {
	case s := <-xLogs:
		t.Errorf("a log of a shared server, sent outside x's request, reached x: %q", s)
	default:
	}
}
