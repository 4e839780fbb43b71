// Package gateway is toolshelf's MCP server: one server in front of all of
// a user's MCP servers that shows the model a search tool instead of
// hundreds of tool definitions.
//
// In the default search mode a client's tools/list holds two meta tools,
// search_tools and call_tool, plus the upstream tools marked alwaysLoad.
// search_tools returns matches with their full input schemas so that the
// model can call one in the same turn through call_tool. The list does not
// vary per session or over time, as MCP revision 2026-07-28 requires and
// as clients that ignore notifications/tools/list_changed need. Other
// modes list every tool directly (all), decide by the catalog's token cost
// (auto), or add each session's search results to that session's list and
// announce them with list_changed (activate, for older clients that act on
// it).
package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/upstream"
)

// Upstream is where the gateway's tools come from and where calls go: an
// [upstream.Pool], or a [CatalogOnly] that serves a fixed catalog.
type Upstream interface {
	Catalog() *catalog.Catalog
	Pending() []string
	Status() []upstream.Status
	Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error)
}

// Mode is how tools are shown to clients.
type Mode string

const (
	// ModeSearch lists the meta tools and the alwaysLoad tools.
	ModeSearch Mode = "search"
	// ModeAll lists every tool directly, as if there were no gateway.
	ModeAll Mode = "all"
	// ModeAuto lists every tool when their definitions cost less than
	// Options.Percent of Options.ContextWindow tokens, else searches.
	ModeAuto Mode = "auto"
)

// ParseMode reads "search", "all", "auto" or "auto:N" (1 ≤ N ≤ 99).
func ParseMode(s string) (Mode, int, error) {
	switch {
	case s == "search" || s == "":
		return ModeSearch, 0, nil
	case s == "all":
		return ModeAll, 0, nil
	case s == "auto":
		return ModeAuto, policy.DefaultPercent, nil
	case strings.HasPrefix(s, "auto:"):
		var n int
		if _, err := fmt.Sscanf(s[5:], "%d", &n); err != nil || n < 1 || n > 99 || fmt.Sprint(n) != s[5:] {
			return "", 0, fmt.Errorf("mode %q: the percentage after auto: must be 1 to 99", s)
		}
		return ModeAuto, n, nil
	}
	return "", 0, fmt.Errorf("unknown mode %q (want search, all, auto or auto:N)", s)
}

// Options configures a Server. Nil means defaults.
type Options struct {
	Logger *slog.Logger
	// Mode defaults to ModeSearch. Percent and ContextWindow are the auto
	// mode's threshold (defaults 10 and 200,000).
	Mode          Mode
	Percent       int
	ContextWindow int
	// Counter measures the catalog for the auto mode; default the offline
	// tokenizer estimate.
	Counter policy.Counter
	// Activate adds the tools a session finds to that session's tool list.
	Activate bool
	// Engine is the search engine kind (default "bm25"; see search.New).
	Engine string
	// Embedder, when set, makes search hybrid: Engine, which should then
	// be lexical, fused with the embeddings of Embedder's model. Each catalog is searched lexically until its
	// embeddings are ready, and again whenever the embedder fails.
	Embedder search.Embedder
	// Version is reported to clients as the server's version.
	Version string
	// PendingWait bounds how long call_tool and search_tools wait for
	// servers that are still connecting when the tool asked for is not
	// there yet, or nothing matched (default 10s). A one-shot client that
	// calls as soon as the gateway starts gets an answer, not a retry.
	PendingWait time.Duration
}

// Server is the gateway. It is safe for concurrent use.
type Server struct {
	up        Upstream
	opts      Options
	logger    *slog.Logger
	sdkLogger *slog.Logger
	met       *metrics

	state   atomic.Pointer[snapshot]
	changed atomic.Pointer[chan struct{}] // closed and replaced by every Update

	mu       sync.Mutex
	shared   *mcp.Server               // the server of every session unless Activate
	sessions map[*mcp.Server]*exposure // Activate: one server per session
	decision string                    // the last auto-mode decision logged
}

// snapshot is what the gateway derives from one catalog.
type snapshot struct {
	cat    *catalog.Catalog
	engine search.Engine
	direct bool  // list every tool directly (all mode, or auto below the threshold)
	cost   *cost // what listing every tool would cost, counted when first asked
}

// cost is the estimated tokens of a catalog's tool definitions. Counting
// means tokenising every definition, so it is done once per catalog and
// only when needed: for auto mode's decision, or when metrics are read.
type cost struct {
	once   sync.Once
	tokens int
}

// exposure tracks which tools an mcp.Server currently lists.
type exposure struct {
	server    *mcp.Server
	listed    map[string]string // name → version of the definition listed
	activated map[string]bool   // Activate: tools this session found
	created   time.Time
}

// New returns a gateway over up. Call [Server.Update] with every new
// catalog (an upstream.Pool's OnChange); New applies the current one.
func New(up Upstream, opts *Options) *Server {
	s := &Server{up: up, sessions: make(map[*mcp.Server]*exposure)}
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Mode == "" {
		s.opts.Mode = ModeSearch
	}
	if s.opts.Percent == 0 {
		s.opts.Percent = policy.DefaultPercent
	}
	if s.opts.ContextWindow == 0 {
		s.opts.ContextWindow = policy.DefaultContextWindow
	}
	if s.opts.Counter == nil {
		s.opts.Counter = policy.Tokenizer{}
	}
	if s.opts.Engine == "" {
		s.opts.Engine = "bm25"
	}
	if s.opts.Version == "" {
		s.opts.Version = "dev"
	}
	if s.opts.PendingWait == 0 {
		s.opts.PendingWait = 10 * time.Second
	}
	ch := make(chan struct{})
	s.changed.Store(&ch)
	s.logger = s.opts.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	// The SDK logs every session start and end at info; only its warnings
	// are the operator's business.
	s.sdkLogger = slog.New(&minLevel{s.logger.Handler(), slog.LevelWarn})
	s.met = newMetrics(s.catalogMetrics)
	s.shared = s.newMCPServer()
	s.Update(up.Catalog())
	return s
}

// MCPServer returns the server that sessions share (all sessions unless
// Activate is set; then it serves stdio, which has one session).
func (s *Server) MCPServer() *mcp.Server { return s.shared }

// newMCPServer makes an mcp.Server with the meta tools and registers its
// exposure.
func (s *Server) newMCPServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "toolshelf", Title: "toolshelf gateway", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: s.instructions(),
		Logger:       s.sdkLogger,
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
	})
	x := &exposure{server: srv, listed: map[string]string{}, activated: map[string]bool{}, created: time.Now()}
	s.mu.Lock()
	s.sessions[srv] = x
	s.mu.Unlock()
	if snap := s.state.Load(); snap != nil {
		s.sync(x, snap)
	}
	return srv
}

func (s *Server) instructions() string {
	return "toolshelf connects to many MCP servers. Their tools are not all listed: " +
		"call search_tools with what you want to do (or select:NAME to fetch tools by name), " +
		"then call_tool with the qualified name of a match and its arguments."
}

// Update makes c the catalog the gateway serves: it rebuilds the search
// engine, decides the auto mode, and changes the tools listed to every
// session (the SDK sends notifications/tools/list_changed).
func (s *Server) Update(c *catalog.Catalog) {
	if c == nil {
		return
	}
	if old := s.state.Load(); old != nil && old.cat.Version() == c.Version() {
		return
	}
	eng, err := search.New(s.opts.Engine, c)
	if err != nil {
		s.logger.Error("search engine", "error", err)
		eng = search.NewBM25(c)
	}
	snap := &snapshot{cat: c, engine: eng, cost: &cost{}}
	switch s.opts.Mode {
	case ModeAll:
		snap.direct = true
	case ModeAuto:
		threshold := policy.Threshold(s.opts.ContextWindow, s.opts.Percent)
		tokens := s.tokens(snap)
		snap.direct = tokens < threshold
		what := "search"
		if snap.direct {
			what = "all tools listed"
		}
		decision := fmt.Sprintf("%s: %d tools, %d tokens vs threshold %d (%d%% of %d)", what, c.Len(), tokens, threshold, s.opts.Percent, s.opts.ContextWindow)
		s.mu.Lock()
		changed := what != s.decision
		s.decision = what
		s.mu.Unlock()
		if changed {
			s.logger.Info("auto mode decision", "mode", what, "tools", c.Len(), "tokens", tokens, "threshold", threshold, "percent", s.opts.Percent, "context_window", s.opts.ContextWindow, "summary", decision)
		}
	}
	s.state.Store(snap)
	next := make(chan struct{})
	close(*s.changed.Swap(&next))
	if s.opts.Embedder != nil {
		go s.embed(snap) // snap is complete and no longer written
	}
	s.mu.Lock()
	xs := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()
	for _, x := range xs {
		s.sync(x, snap)
	}
}

// embed builds the hybrid engine of a snapshot and, if the snapshot is
// still current, makes it the engine. Searches meanwhile are lexical.
func (s *Server) embed(snap *snapshot) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s.logger.Info("embedding tools for hybrid search; searching lexically meanwhile", "tools", snap.cat.Len())
	sem, err := search.NewSemantic(ctx, snap.cat, s.opts.Embedder)
	if err != nil {
		s.logger.Warn("embeddings unavailable; searching lexically", "error", err)
		return
	}
	hybrid := &search.Hybrid{Lexical: snap.engine, Semantic: sem, OnFallback: func(err error) {
		s.logger.Warn("the embeddings endpoint failed; searching lexically until it answers", "error", err)
	}}
	next := *snap
	next.engine = hybrid
	if s.state.CompareAndSwap(snap, &next) {
		s.logger.Info("hybrid search ready", "tools", snap.cat.Len())
	}
}

// tokens returns what listing every tool of a snapshot directly would
// cost, counting it the first time it is asked for.
func (s *Server) tokens(snap *snapshot) int {
	snap.cost.once.Do(func() { snap.cost.tokens = s.countTokens(snap.cat) })
	return snap.cost.tokens
}

// catalogMetrics reports the current catalog's size, the tokens of all
// its definitions, and those kept out of clients' lists.
func (s *Server) catalogMetrics() (tools, tokens, deferred int) {
	snap := s.state.Load()
	tokens = s.tokens(snap)
	if !snap.direct {
		deferred = tokens
	}
	return snap.cat.Len(), tokens, deferred
}

// countTokens estimates what listing every tool directly would cost.
func (s *Server) countTokens(c *catalog.Catalog) int {
	defs := make([]json.RawMessage, 0, c.Len())
	for e := range c.All() {
		if !e.Unverified {
			defs = append(defs, e.Definition())
		}
	}
	n, err := s.opts.Counter.CountTokens(context.Background(), defs)
	if err != nil {
		s.logger.Warn("token count failed; using the character heuristic", "error", err)
		n, _ = policy.Heuristic{}.CountTokens(context.Background(), defs)
	}
	return n
}

// sync makes an mcp.Server list what the snapshot says it should.
func (s *Server) sync(x *exposure, snap *snapshot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]*catalog.Entry{}
	for e := range snap.cat.All() {
		if e.Unverified {
			continue
		}
		if snap.direct || e.AlwaysLoad || x.activated[e.Name] {
			want[e.Name] = e
		}
	}
	if !snap.direct {
		if _, ok := x.listed[toolSearch]; !ok {
			s.addMetaTools(x)
		}
	} else if _, ok := x.listed[toolSearch]; ok {
		x.server.RemoveTools(toolSearch, toolCall)
		delete(x.listed, toolSearch)
		delete(x.listed, toolCall)
	}
	var remove []string
	for name := range x.listed {
		if name == toolSearch || name == toolCall {
			continue
		}
		if _, ok := want[name]; !ok {
			remove = append(remove, name)
			delete(x.listed, name)
		}
	}
	if len(remove) > 0 {
		x.server.RemoveTools(remove...)
	}
	for name, e := range want {
		v := string(e.Raw)
		if x.listed[name] == v {
			continue
		}
		x.server.AddTool(directTool(e), s.forward(e.Name))
		x.listed[name] = v
	}
}

// directTool is an upstream tool as the gateway lists it: the upstream
// definition, every field kept, under its qualified name, with a schema
// clients accept.
func directTool(e *catalog.Entry) *mcp.Tool {
	var t mcp.Tool
	_ = json.Unmarshal(e.Raw, &t)
	t.Name = e.Name
	schema, _ := catalog.NormalizeSchema(e.InputSchema)
	t.InputSchema = schema
	if t.OutputSchema != nil {
		// An output schema that is not an object cannot be served.
		if m, ok := t.OutputSchema.(map[string]any); !ok || m["type"] != "object" {
			t.OutputSchema = nil
		}
	}
	return &t
}

// forward returns the handler of a directly listed tool.
func (s *Server) forward(name string) mcp.ToolHandler {
	return func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return s.call(ctx, name, req.Params.Arguments), nil
	}
}

// call forwards a call upstream, logs it, and turns failures into tool
// errors the model can read.
func (s *Server) call(ctx context.Context, name string, args json.RawMessage) *mcp.CallToolResult {
	ctx, done := bindRequest(ctx)
	defer done()
	start := time.Now()
	server := ""
	if snap := s.state.Load(); snap != nil {
		if e, ok := snap.cat.Lookup(name); ok {
			server = e.Server
		}
	}
	res, err := s.up.Call(ctx, name, args)
	took := time.Since(start)
	outcome := "ok"
	switch {
	case err != nil && ctx.Err() != nil:
		outcome = "cancelled"
	case err != nil:
		outcome = "error"
	case res.IsError:
		outcome = "tool_error"
	}
	s.met.observeCall(server, outcome, took)
	s.logger.Info("call", "tool", name, "server", server, "duration", took.Round(time.Microsecond), "outcome", outcome)
	if err != nil {
		return toolError("%s: %v", name, err)
	}
	return res
}

// awaitPending returns the current snapshot once ok holds for it, or no
// server whose tools are unknown is still connecting, or PendingWait has
// passed. A server that is restarting, or whose tools are cached, has its
// tools in the catalog already and is not waited for.
func (s *Server) awaitPending(ctx context.Context, ok func(*snapshot) bool) *snapshot {
	deadline := time.NewTimer(s.opts.PendingWait)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond) // a server that fails changes no catalog
	defer tick.Stop()
	for {
		ch := *s.changed.Load()
		snap := s.state.Load()
		if ok(snap) || len(unknownPending(snap.cat, s.up.Pending())) == 0 {
			return snap
		}
		select {
		case <-ch:
		case <-tick.C:
		case <-ctx.Done():
			return snap
		case <-deadline.C:
			return snap
		}
	}
}

// unknownPending returns the pending servers that have no tools in c.
func unknownPending(c *catalog.Catalog, pending []string) []string {
	var out []string
	have := c.ServerNames()
	for _, p := range pending {
		if !slices.Contains(have, p) {
			out = append(out, p)
		}
	}
	return out
}

// toolError is a result the model reads as a failed call.
func toolError(format string, args ...any) *mcp.CallToolResult {
	return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf(format, args...)}}}
}

// forgetClosed drops the per-session servers of sessions that have ended,
// so that updates stop reaching them. A server gets its session a moment
// after it is made, so young ones are kept.
func (s *Server) forgetClosed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for srv, x := range s.sessions {
		if srv != s.shared && time.Since(x.created) > time.Minute && !hasSessions(srv) {
			delete(s.sessions, srv)
		}
	}
}

func hasSessions(srv *mcp.Server) bool {
	for range srv.Sessions() {
		return true
	}
	return false
}

// minLevel drops records below a level.
type minLevel struct {
	slog.Handler
	level slog.Level
}

func (h *minLevel) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.level && h.Handler.Enabled(ctx, l)
}

func (h *minLevel) WithAttrs(as []slog.Attr) slog.Handler {
	return &minLevel{h.Handler.WithAttrs(as), h.level}
}

func (h *minLevel) WithGroup(name string) slog.Handler {
	return &minLevel{h.Handler.WithGroup(name), h.level}
}
