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

//lint:file-ignore SA1019 sampling, roots and logging are deprecated by MCP 2026-07-28 (SEP-2577) but clients and servers on earlier revisions use them, and toolshelf relays them on purpose during the deprecation window.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/sandbox"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/shelf"
	"github.com/toolshelf/toolshelf/telemetry"
	"github.com/toolshelf/toolshelf/upstream"
)

// Options configures a Server. Nil means defaults.
type Options struct {
	Logger *slog.Logger
	// Settings is how tools are shown, as [policy.ParseMode] reads serve
	// --mode: always defer (search: the meta tools and the alwaysLoad
	// tools; the default), never (all: every tool listed directly), or
	// auto (all when the catalog's deferrable tools cost less than
	// Settings.Percent of ContextWindow tokens, else search).
	Settings policy.Settings
	// ContextWindow is the auto mode's context window (default 200,000).
	ContextWindow int
	// Counter measures the catalog for the auto mode and /metrics;
	// default the offline tokenizer estimate.
	Counter policy.Counter
	// Activate adds the tools a session finds to that session's tool list.
	Activate bool
	// Engine is the search engine kind (search.DefaultEngine when empty).
	Engine string
	// Embedder is a model's embedder for an Engine that embeds: each
	// catalog is searched with bm25 until its embeddings are ready, and
	// again whenever the embedder fails (see shelf.Options).
	Embedder search.Embedder
	// Version is reported to clients as the server's version.
	Version string
	// Telemetry receives the gateway's spans and metrics; nil keeps
	// metrics (for /metrics) and traces nothing. The caller shuts it down.
	Telemetry *telemetry.Telemetry
	// TraceQueries puts each search's query text on its span. Off, a span
	// has the query's length only: queries hold what users wrote.
	TraceQueries bool
	// PendingWait bounds how long call_tool and search_tools wait for
	// servers that are still connecting when the tool asked for is not
	// there yet, or nothing matched (default 10s). A one-shot client that
	// calls as soon as the gateway starts gets an answer, not a retry.
	PendingWait time.Duration
	// MaxSessions bounds the HTTP sessions served at once (default 500;
	// with Activate each has a server of its own, about 65 KB); a client
	// beyond it is refused with 503 until one ends. SessionIdle is how
	// long an idle session lives (default 30 minutes).
	MaxSessions int
	SessionIdle time.Duration
	// Audit, when set, gets one record per tools/call request (a search
	// or a call); the caller runs it (audit.Log.Run).
	Audit *audit.Log
	// Ledger counts every tool call and holds calls to its tool-call
	// budgets (package ledger); nil counts nothing.
	Ledger *ledger.Ledger
	// AuditArgs adds the arguments' values to each audit record, with
	// the servers' secrets removed and cut at 64 KB.
	AuditArgs bool
	// MaxSubscriptions bounds the resources subscribed to through the
	// gateway at once (default 10,000): each costs a subscription on a
	// server, and a client that subscribes without end must not make the
	// gateway do the same.
	MaxSubscriptions int
	// Learn, when set, learns from use: a search followed in the same
	// session by a call of a tool it found is recorded, and searches rank
	// by what was recorded (search.Learned). The caller runs it
	// (learn.Store.Run).
	Learn *learn.Store
	// Replica names this replica of a fleet (fleet.Member.ID): it leads
	// the request state of each call parked for a client's answers, so
	// that the replica the answers reach knows which one holds the call.
	Replica string
	// Sync, when set, is called before an answer to a tool call leaves:
	// what the audit log and learning took for it is then durable (the
	// journal's Sync: one disk flush serves the answers that wait
	// together).
	Sync func(ctx context.Context) error
	// Ready, when set, is asked before a tool call runs: an error (the
	// journal cannot be written: a full disk, a read-only folder)
	// refuses the call, so that no answer promises what cannot be kept.
	Ready func() error
	// OnActivate, when set, is told of the tools a search added to a
	// session's tool list (Activate), by the session's id: a fleet keeps
	// them for the replica that may take the session over (Reactivate).
	// The search's answer waits for it.
	OnActivate func(ctx context.Context, session string, names []string)
	// Code, when set, is code mode: run_code beside search_tools runs a
	// program that calls tools in this sandbox, and search matches carry
	// each tool's declaration instead of its JSON schema.
	Code *sandbox.Runner
	// Proposer, when set, lists propose_server beside the meta tools: the
	// model asks the person to install a server from a registry
	// (propose.go).
	Proposer Proposer
	// Groups are the configuration's sets of tools and skills, served as
	// groups (groups.go) beside one per server and one per skill.
	// Server.Apply changes them, Results and Budget while the gateway
	// runs.
	Groups []config.GroupConfig
	// Results is what each match of a ranked search carries: compact
	// (name, server, purpose, signature; the default) or the whole
	// definition (shelf.Full). select: always gives whole definitions.
	Results shelf.Form
	// Budget bounds the tokens of a ranked answer's compact matches
	// (shelf.DefaultBudget when zero, none when negative).
	Budget int
	// Tasks keeps the tasks of calls answered with a task handle (MCP's
	// tasks extension, for clients that declare it): in a fleet, the
	// store every replica reads; in memory when nil. TaskAfter is how
	// long a call runs before its client gets a task instead
	// (DefaultTaskAfter when zero).
	Tasks     Tasks
	TaskAfter time.Duration
	// TasksPerCaller bounds the calls one caller may have running as
	// tasks on this replica at once (DefaultTasksPerCaller when 0): past
	// it a call is refused, not started.
	TasksPerCaller int
	// ReplicaAlive, in a fleet, reports whether a replica still serves:
	// a task whose replica is gone mid-call has failed.
	ReplicaAlive func(ctx context.Context, id string) (bool, error)
	// SendTo, in a fleet, sends a request on to the replica id (see
	// Fleet.SendTo): a task's tasks/update and tasks/cancel go to the
	// replica running its call.
	SendTo func(w http.ResponseWriter, r *http.Request, body []byte, id string) error
	// PrivateLists marks lists as depending on who asks (cacheScope
	// "private", MCP 2026-07-28): profiles or people select what a client
	// sees. Activate implies it.
	PrivateLists bool
}

// Server is the gateway. It is safe for concurrent use.
type Server struct {
	// waiting, when set (by tests), is called whenever a request waits
	// for servers still connecting.
	waiting func()

	up   *upstream.Scope
	opts Options
	// settings are the options Apply changes in place: read them here,
	// not in opts.
	settings  atomic.Pointer[Settings]
	logger    *slog.Logger
	sdkLogger *slog.Logger
	tel       *telemetry.Telemetry
	met       *metrics
	shelf     *shelf.Shelf

	state   atomic.Pointer[served]
	changed atomic.Pointer[chan struct{}] // closed and replaced by every Update
	offers  atomic.Pointer[offerTable]
	subs    subscriptions
	rounds  rounds
	learn   learning

	mu       sync.Mutex
	shared   atomic.Pointer[mcp.Server] // the server of every session unless Activate
	sessions map[*mcp.Server]*exposure  // Activate: one server per session
	decision string                     // the last auto-mode decision logged
	// initialized are the ids of the HTTP sessions an initialize started
	// on the shared server (see openSessions).
	initialized map[string]bool
	logLevel    mcp.LoggingLevel // the level asked of servers
}

// served is what the gateway serves from one catalog: the shelf's
// snapshot and the servers' summary.
type served struct {
	*shelf.Snapshot
	direct bool // list every tool directly (all mode, or auto below the threshold)
	// servers says what each server's tools do (policy.Summaries), for
	// search_tools' description and the instructions; notConnected names
	// the servers whose tools are unknown now (see notConnected).
	servers, notConnected string
}

// described is what search_tools' description and the instructions say
// of the servers: those whose tools it finds, then those it cannot see
// now.
func (sn *served) described() string {
	var parts []string
	if sn.servers != "" {
		parts = append(parts, serversHeading+"\n"+sn.servers)
	}
	if sn.notConnected != "" {
		parts = append(parts, notConnectedHeading+"\n"+sn.notConnected)
	}
	return strings.Join(parts, "\n\n")
}

// exposure tracks which tools an mcp.Server currently lists.
type exposure struct {
	server    *mcp.Server
	listed    map[string]string // name → version of the definition listed
	activated map[string]bool   // Activate: tools this session found
	offered   map[string]string // prompts, resources, templates served → their definition
	created   time.Time
	started   bool // Activate: its session's initialize was answered
	// shared: the server of every session (Server.shared), or one that
	// was until skills came (declareSkills); skills: it declares the
	// skills extension.
	shared, skills bool
}

// Checklist is the deferral checklist of the gateway's tools: search_tools
// is the search tool, call_tool the way to call what it finds.
var Checklist = policy.Checklist{SearchTool: toolSearch, Essential: []string{toolCall}}

// New returns a gateway over up, serving its current catalog. [Server.Run]
// follows up's changes; tests and callers with a fixed catalog may call
// [Server.Update] instead. The error is an unknown engine kind.
func New(up *upstream.Scope, opts *Options) (*Server, error) {
	s := &Server{up: up, sessions: make(map[*mcp.Server]*exposure), initialized: make(map[string]bool)}
	s.subs.by = make(map[subKey]map[*mcp.ServerSession]bool)
	s.offers.Store(&offerTable{})
	if opts != nil {
		s.opts = *opts
	}
	if s.opts.Settings.Mode == "" {
		s.opts.Settings.Mode = policy.ModeAlways
	}
	if s.opts.Settings.Percent == 0 {
		s.opts.Settings.Percent = policy.DefaultPercent
	}
	if s.opts.ContextWindow == 0 {
		s.opts.ContextWindow = policy.DefaultContextWindow
	}
	if s.opts.Version == "" {
		s.opts.Version = "dev"
	}
	if s.opts.PendingWait == 0 {
		s.opts.PendingWait = 10 * time.Second
	}
	if s.opts.MaxSessions <= 0 {
		s.opts.MaxSessions = 500
	}
	if s.opts.MaxSubscriptions <= 0 {
		s.opts.MaxSubscriptions = 10_000
	}
	if s.opts.SessionIdle <= 0 {
		s.opts.SessionIdle = 30 * time.Minute
	}
	ch := make(chan struct{})
	s.changed.Store(&ch)
	s.Apply(Settings{Results: s.opts.Results, Budget: s.opts.Budget, Groups: s.opts.Groups})
	s.logger = s.opts.Logger
	if s.logger == nil {
		s.logger = slog.New(slog.DiscardHandler)
	}
	s.logger = s.logger.With("profile", s.up.Profile())
	sh, err := shelf.New(&shelf.Options{
		Engine: s.opts.Engine, Embedder: s.opts.Embedder, Counter: s.opts.Counter,
		Checklist: Checklist, Extra: MetaDefinitions(), Logger: s.logger, Learned: s.learned(), Budget: s.opts.Budget,
	})
	if err != nil {
		return nil, err
	}
	s.shelf = sh
	// The SDK logs every session start and end at info; only its warnings
	// are the operator's business.
	s.sdkLogger = slog.New(&minLevel{s.logger.Handler(), slog.LevelWarn})
	s.tel = s.opts.Telemetry
	if s.tel == nil {
		if s.tel, err = telemetry.New(context.Background(), &telemetry.Options{Getenv: noEnv}); err != nil {
			return nil, err
		}
	}
	if s.met, err = newMetrics(s.tel, s.up.Profile(), s.catalogMetrics); err != nil {
		return nil, err
	}
	s.learn.unused = func() { s.met.unused.Add(context.Background(), 1, s.met.byProfile()) }
	s.shared.Store(s.newMCPServer())
	s.sessions[s.shared.Load()].shared = true
	s.Update(up.Catalog())
	s.updateOffers(up.Offers())
	return s, nil
}

// Settings are the options a change of the configuration changes while
// the gateway serves, sessions going on (see Options).
type Settings struct {
	Results shelf.Form
	Budget  int
	Groups  []config.GroupConfig
}

// Apply makes the gateway's settings st from the next request on.
func (s *Server) Apply(st Settings) {
	s.settings.Store(&st)
	if s.shelf != nil {
		s.shelf.SetBudget(st.Budget)
	}
}

// Profile returns the name of the profile the gateway serves.
func (s *Server) Profile() string { return s.up.Profile() }

// Snapshot returns what the gateway serves now: its catalog, its search
// (with what was learned), and the policy's view of it.
func (s *Server) Snapshot() *shelf.Snapshot { return s.state.Load().Snapshot }

// Scope returns the pool as the gateway's profile sees it.
func (s *Server) Scope() *upstream.Scope { return s.up }

// Run follows the upstream's catalog, embeds each new one when a model's
// embedder is configured, passes servers' notices to clients, and forgets
// ended sessions, until ctx is done. It returns when every goroutine it
// started has ended.
func (s *Server) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	wg.Go(func() { s.shelf.Run(ctx) })
	// Notices go to clients from a goroutine of their own: a slow client
	// must not hold up the catalog.
	wg.Go(func() { s.relayNotices(ctx) })
	defer wg.Wait()
	sweep := time.NewTicker(time.Minute)
	defer sweep.Stop()
	for {
		ch := s.up.Changed()
		s.Update(s.up.Catalog())
		s.updateOffers(s.up.Offers())
		s.updateSkills()
		for changed := false; !changed; {
			select {
			case <-ch:
				changed = true
			case <-sweep.C:
				s.learn.sweep(s.liveSessions())
				s.forgetClosed()
				s.pruneSubscriptions(ctx)
			case <-ctx.Done():
				return nil
			}
		}
	}
}

// Mode names how tools are shown: search, all or auto:N.
func (s *Server) Mode() string {
	switch st := s.opts.Settings; st.Mode {
	case policy.ModeStandard:
		return "all"
	case policy.ModeAuto:
		return fmt.Sprintf("auto:%d", st.Percent)
	}
	return "search"
}

// MCPServer returns the server that sessions share (all sessions unless
// Activate is set; then it serves stdio, which has one session).
func (s *Server) MCPServer() *mcp.Server { return s.shared.Load() }

// newMCPServer makes an mcp.Server with the meta tools and registers its
// exposure.
func (s *Server) newMCPServer() *mcp.Server {
	// Prompts, resources, completions and logging are declared whether
	// or not a server offers them yet: servers connect after clients do,
	// and a session's capabilities cannot change.
	// Tasks, MCP Apps (the servers' apps, served as theirs), groups, and
	// skills once a server offers them.
	extensions := map[string]any{tasksExtension: map[string]any{}, appsExtension: map[string]any{}, groupsExtension: map[string]any{}}
	skills := s.up.HasSkills()
	if skills {
		extensions[upstream.SkillsExtension] = s.skillsSettings()
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "toolshelf", Title: "toolshelf gateway", Version: s.opts.Version}, &mcp.ServerOptions{
		Instructions: s.instructions(),
		Logger:       s.sdkLogger,
		Capabilities: &mcp.ServerCapabilities{
			Extensions:  extensions,
			Tools:       &mcp.ToolCapabilities{ListChanged: true},
			Prompts:     &mcp.PromptCapabilities{ListChanged: true},
			Resources:   &mcp.ResourceCapabilities{ListChanged: true, Subscribe: true},
			Completions: &mcp.CompletionCapabilities{},
			Logging:     &mcp.LoggingCapabilities{},
		},
		CompletionHandler: s.complete,
		// A client's progress on a server's request goes back to it.
		ProgressNotificationHandler: func(ctx context.Context, req *mcp.ProgressNotificationServerRequest) {
			s.up.Progress(ctx, req.Params)
		},
		SubscribeHandler:   s.subscribe,
		UnsubscribeHandler: s.unsubscribe,
		SetCacheable:       s.cacheable,
	})
	x := &exposure{server: srv, listed: map[string]string{}, activated: map[string]bool{}, offered: map[string]string{}, created: time.Now(), skills: skills}
	srv.AddReceivingMiddleware(s.knowPerson, s.traceRequests, s.runAsTask, s.watchLevel, s.describeServers, s.awaitLists, s.narrowDiscover, s.callScoped(x))
	s.mu.Lock()
	s.sessions[srv] = x
	s.mu.Unlock()
	if snap := s.state.Load(); snap != nil {
		s.sync(x, snap)
	}
	s.syncOffers(x, s.offers.Load())
	return srv
}

// listTTL is how long a client may keep a list (ttlMs): lists change
// when servers come and go, which subscriptions/listen and list_changed
// tell of at once.
const listTTL = 60_000

// cacheable sets the cache fields (ttlMs, cacheScope) of list results
// and of resources/read: private where the list depends on who asks
// (PrivateLists, Activate), and an app (the pinned copy) kept as long as a
// list; another resource is the server's to say, and is stale at once.
func (s *Server) cacheable(_ context.Context, req mcp.Request, c *mcp.Cacheable) {
	scope := "public"
	if s.opts.PrivateLists || s.opts.Activate {
		scope = "private"
	}
	if r, ok := req.(*mcp.ReadResourceRequest); ok {
		if r.Params == nil || !isApp(r.Params.URI) {
			return
		}
	}
	if c.CacheScope == "" || c.CacheScope == "public" {
		c.CacheScope = scope
	}
	if c.TTLMs == 0 {
		c.TTLMs = listTTL
	}
}

func (s *Server) instructions() string {
	return "toolshelf connects to many MCP servers. Their tools are not all listed: " +
		"call search_tools with what you want to do (or select:NAME to fetch tools by name), " +
		"then call_tool with the qualified name of a match and its arguments."
}

// serversHeading introduces the servers' summaries.
const serversHeading = "Connected servers, whose tools search_tools finds:"

// describeServers adds to the initialize result's instructions what each
// server's tools do, as they are when the client connects: the SDK fixes
// a server's instructions when it is made, before any server is up.
func (s *Server) describeServers(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if err != nil {
			return res, err
		}
		snap := s.state.Load()
		if snap == nil || snap.described() == "" || snap.direct {
			return res, err
		}
		// MCP 2026-07-28 clients discover instead of initializing.
		switch r := res.(type) {
		case *mcp.InitializeResult:
			r.Instructions += "\n\n" + snap.described()
		case *mcp.DiscoverResult:
			r.Instructions += "\n\n" + snap.described()
		}
		return res, err
	}
}

// awaitLists holds a client's first lists until the servers still
// starting have started or failed (within PendingWait): a one-shot client
// (the Inspector CLI) asks once and does not wait for list_changed. The
// tool list waits only when it lists the tools themselves (all mode, or
// auto below the threshold); in search mode it is the meta tools. A
// server/discover waits as the offers' lists do: it says what they offer.
func (s *Server) awaitLists(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		switch method {
		case "tools/list":
			if snap := s.state.Load(); snap != nil && snap.direct && len(s.up.Pending()) > 0 {
				s.awaitPending(ctx, func(*served) bool { return false })
			}
		case "prompts/list", "resources/list", "resources/templates/list", "server/discover":
			if len(s.up.Pending()) > 0 {
				s.awaitPending(ctx, func(*served) bool { return false })
				s.updateOffers(s.up.Offers())
			}
		}
		return next(ctx, method, req)
	}
}

// Update makes c the catalog the gateway serves: the shelf builds its
// engine, the policy decides what is listed, and every session's tool
// list follows (the SDK sends notifications/tools/list_changed).
func (s *Server) Update(c *catalog.Catalog) {
	if c == nil {
		return
	}
	if old := s.state.Load(); old != nil && old.Catalog.Version() == c.Version() {
		// The tools are as they were; a server may have failed, started
		// or asked for a sign-in, which search_tools' description says.
		if line := s.notConnected(); line != old.notConnected {
			snap := *old
			snap.notConnected = line
			s.publish(&snap)
		}
		return
	}
	s.serve(s.shelf.Update(c))
}

// notConnectedHeading introduces the servers whose tools are unknown now.
const notConnectedHeading = "Not connected now, so search_tools cannot see their tools:"

// notConnected names the scope's servers whose tools are unknown now,
// each with its state and why, a line each.
func (s *Server) notConnected() string {
	var lines []string
	for _, u := range s.up.Unavailable() {
		lines = append(lines, "- "+u.String())
	}
	return strings.Join(lines, "\n")
}

// serve makes a shelf's snapshot the one every session is served.
func (s *Server) serve(sn *shelf.Snapshot) {
	snap := &served{Snapshot: sn, servers: strings.Join(policy.Summaries(sn.Catalog), "\n"), notConnected: s.notConnected()}
	s.publish(snap)
}

// publish makes snap the state every session is served.
func (s *Server) publish(snap *served) {
	switch s.opts.Settings.Mode {
	case policy.ModeStandard:
		snap.direct = true
	case policy.ModeAuto:
		snap.direct = !s.decide(snap).Enabled
	}
	// The sessions' servers list the new catalog before anyone waiting
	// for it is told (awaitPending answers a first tools/list once the
	// state is current), and again after, for a session made meanwhile
	// from the old state; sync changes only what differs.
	s.syncAll(snap)
	s.state.Store(snap)
	next := make(chan struct{})
	close(*s.changed.Swap(&next))
	s.syncAll(snap)
}

// syncAll makes every session's server list what snap says.
func (s *Server) syncAll(snap *served) {
	s.mu.Lock()
	xs := slices.Collect(maps.Values(s.sessions))
	s.mu.Unlock()
	for _, x := range xs {
		s.sync(x, snap)
	}
}

// decide runs the policy's definitive gate on a snapshot, as doctor does,
// and logs the decision when it changes.
func (s *Server) decide(snap *served) policy.Decision {
	view := snap.View(context.Background())
	d := view.Decide(policy.Request{
		Settings: s.opts.Settings, ContextWindow: s.opts.ContextWindow,
		SearchAvailable: true, Pending: s.up.Pending(),
	})
	what := "search"
	if !d.Enabled {
		what = "all tools listed"
	}
	s.mu.Lock()
	changed := what != s.decision
	s.decision = what
	s.mu.Unlock()
	if changed {
		s.logger.Info("auto mode decision", "mode", what, "tools", snap.Catalog.Len(), "tokens", view.All.Tokens,
			"deferrable_tokens", d.Tokens, "threshold", d.Threshold, "summary", d.String())
	}
	return d
}

// catalogMetrics reports the current catalog's size, the tokens of all
// its definitions, and those kept out of clients' lists.
func (s *Server) catalogMetrics() (tools, tokens, deferred int) {
	snap := s.state.Load()
	view := snap.View(context.Background())
	tokens = view.All.Tokens
	if !snap.direct {
		deferred = view.Deferrable.Tokens
	}
	return snap.Catalog.Len(), tokens, deferred
}

// sync makes an mcp.Server list what the snapshot says it should.
func (s *Server) sync(x *exposure, snap *served) {
	s.mu.Lock()
	defer s.mu.Unlock()
	want := map[string]*catalog.Entry{}
	for e := range snap.Catalog.All() {
		if e.Unverified {
			continue
		}
		if snap.direct || e.AlwaysLoad || x.activated[e.Name] {
			want[e.Name] = e
		}
	}
	if !snap.direct {
		if d, ok := x.listed[toolSearch]; !ok || d != snap.described() {
			// The description names the servers: a new one, or one that
			// failed, changes it, and the SDK tells the session
			// (tools/list_changed).
			s.addMetaTools(x, snap.described())
		}
	} else if _, ok := x.listed[toolSearch]; ok {
		x.server.RemoveTools(toolSearch, toolCall, toolCode, toolPropose)
		delete(x.listed, toolSearch)
		delete(x.listed, toolCall)
		delete(x.listed, toolCode)
		delete(x.listed, toolPropose)
	}
	var remove []string
	for name := range x.listed {
		if name == toolSearch || name == toolCall || name == toolCode || name == toolPropose {
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
	withApps(e, &t)
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
		ctx, bad := withBadArgs(ctx)
		res := s.audited(ctx, req, "call", name, func(ctx context.Context) *mcp.CallToolResult {
			return s.forClient(ctx, req, func(ctx context.Context) *mcp.CallToolResult {
				e, err := s.up.Resolve(name)
				if err != nil {
					return toolError("%s: %v", name, err)
				}
				return s.reach(ctx, req.Session, &upstream.Call{Tool: e, Args: req.Params.Arguments, Via: "direct"})
			})
		})
		return bad.answer(name, res)
	}
}

// badArgs carries a call's arguments refused for having no one form
// (upstream.ArgumentsError) from reach to the handler, which answers it
// as invalid params (-32602): the client's request, not the tool, failed.
type badArgs struct{ err *upstream.ArgumentsError }

type badArgsKey struct{}

func withBadArgs(ctx context.Context) (context.Context, *badArgs) {
	h := &badArgs{}
	return context.WithValue(ctx, badArgsKey{}, h), h
}

// refuseArgs is the tool error for a failed call, and notes arguments
// refused for having no one form for the handler to answer as such.
func refuseArgs(ctx context.Context, tool string, err error) *mcp.CallToolResult {
	var bad *upstream.ArgumentsError
	if h, ok := ctx.Value(badArgsKey{}).(*badArgs); ok && errors.As(err, &bad) {
		h.err = bad
	}
	return toolError("%s: %v", tool, err)
}

// answer is the handler's answer: res, or the refusal of the arguments.
func (h *badArgs) answer(tool string, res *mcp.CallToolResult) (*mcp.CallToolResult, error) {
	if h.err != nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: cut(tool, echoLimit) + ": " + h.err.Error()}
	}
	return res, nil
}

// reach is the gateway's side of every tool call, however the client
// reached the tool (call_tool, a tool listed directly, a program's call):
// the scope's one call path asks the rules and calls, and this records
// the call once (metrics, the log, what search learns) and turns a
// failure into a tool error the model can read.
func (s *Server) reach(ctx context.Context, ss *mcp.ServerSession, c *upstream.Call) *mcp.CallToolResult {
	ctx, done := bindRequest(ctx)
	defer done()
	if c.Client == "" {
		c.Client = clientName(ss)
	}
	entry, refused := s.countCall(ctx, c)
	if refused != nil {
		return refused
	}
	start := time.Now()
	res, err := s.up.Reach(ctx, c)
	if err != nil {
		// Declared here: errors.As takes its address, which puts it on
		// the heap, and most calls have no error.
		var needs *upstream.SignInError
		if errors.As(err, &needs) && signInFirst(ctx, ss, needs) {
			res, err = s.up.Reach(ctx, c)
		}
	}
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
	s.met.observeCall(ctx, c.Tool.Server, outcome, took)
	s.settleCall(ctx, entry, outcome, took)
	// Per call at debug: the audit log is the record of calls, and a busy
	// gateway's log must not grow with its traffic. Asked first: the
	// arguments of a line not written cost four allocations a call.
	if s.logger.Enabled(ctx, slog.LevelDebug) {
		s.logger.Debug("call", "tool", c.Tool.Name, "server", c.Tool.Server, "via", c.Via, "duration", took.Round(time.Microsecond), "outcome", outcome)
	}
	if n, ok := ctx.Value(callNoteKey{}).(*callNote); ok && c.Canonical() {
		n.args = c.Args // the record holds what the server got
	}
	if err != nil {
		res = refuseArgs(ctx, c.Tool.Name, err)
		noteRefusal(ctx, err)
	}
	appResult(res, appsOf(c.Tool))
	// A directly listed tool teaches search only when an --activate
	// search put it there.
	if c.Via != "direct" || s.opts.Activate {
		s.noteCall(ctx, ss, c.Tool.Name, c.Tool.Server, !res.IsError)
	}
	return res
}

// noteRefusal puts a refusal by the operators' rules in the call's audit
// record (see callNote).
func noteRefusal(ctx context.Context, err error) {
	var refusal *upstream.Refusal
	if n, ok := ctx.Value(callNoteKey{}).(*callNote); ok && errors.As(err, &refusal) {
		n.decision, n.rule = refusal.Decision, strings.Join(refusal.Rules, ", ")
	}
}

// clientName is the name a session's client gave in its initialize.
func clientName(ss *mcp.ServerSession) string {
	if ss == nil {
		return ""
	}
	if p := ss.InitializeParams(); p != nil && p.ClientInfo != nil {
		return p.ClientInfo.Name
	}
	return ""
}

// awaitPending returns the current snapshot once ok holds for it, or no
// server whose tools are unknown is still connecting, or PendingWait has
// passed. A server that is restarting, or whose tools are cached, has its
// tools in the catalog already and is not waited for.
func (s *Server) awaitPending(ctx context.Context, ok func(*served) bool) *served {
	// The timers are made when there is something to wait for: most
	// requests find every server's tools known.
	var deadline *time.Timer
	var tick *time.Ticker
	for {
		ch := *s.changed.Load()
		snap := s.state.Load()
		// A server that is no longer pending has published its tools,
		// but Run may not have taken that catalog yet: wait for it.
		up := s.up.Catalog()
		current := up == nil || up == snap.Catalog || up.Version() == snap.Catalog.Version()
		if current && (ok(snap) || len(unknownPending(snap.Catalog, s.up.Pending())) == 0) {
			return snap
		}
		if s.waiting != nil {
			s.waiting()
		}
		if deadline == nil {
			deadline = time.NewTimer(s.opts.PendingWait)
			defer deadline.Stop()
			tick = time.NewTicker(100 * time.Millisecond) // a server that fails changes no catalog
			defer tick.Stop()
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
// so that updates stop reaching them and their places count free again.
func (s *Server) forgetClosed() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for srv, x := range s.sessions {
		// A server whose initialize has not been answered yet has no
		// session so far; one whose initialize never was is kept a
		// minute, in case it still will be.
		if srv != s.shared.Load() && (x.started || x.shared || time.Since(x.created) > time.Minute) && !hasSessions(srv) {
			delete(s.sessions, srv)
		}
	}
}

// liveSessions returns the sessions open now, on the shared server and
// on the per-session ones (Activate).
func (s *Server) liveSessions() map[*mcp.ServerSession]bool {
	s.mu.Lock()
	servers := make([]*mcp.Server, 0, len(s.sessions)+1)
	servers = append(servers, s.shared.Load())
	for srv := range s.sessions {
		if srv != s.shared.Load() {
			servers = append(servers, srv)
		}
	}
	s.mu.Unlock()
	live := map[*mcp.ServerSession]bool{}
	for _, srv := range servers {
		for ss := range srv.Sessions() {
			live[ss] = true
		}
	}
	return live
}

// openSessions is the number of sessions served: per-session servers
// kept (Activate), or the shared server's sessions.
func (s *Server) openSessions() int {
	if s.opts.Activate {
		return s.sessionCount()
	}
	// Only sessions that an initialize started count: the SDK also serves
	// a newer client's server/discover on a short-lived session of its own.
	live := map[string]bool{}
	s.mu.Lock()
	defer s.mu.Unlock()
	for srv, x := range s.sessions {
		if x.shared {
			for ss := range srv.Sessions() {
				live[ss.ID()] = true
			}
		}
	}
	for id := range s.initialized {
		if !live[id] {
			delete(s.initialized, id)
		}
	}
	return len(s.initialized)
}

// sessionCount is the number of per-session servers kept.
func (s *Server) sessionCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, x := range s.sessions {
		if !x.shared {
			n++
		}
	}
	return n
}

// declareSkills makes the server of every session one that declares the
// skills extension, once a server offers skills: a server's capabilities
// are fixed when it is made. Requests and sessions from now on get the
// new one; sessions open on the old one keep it.
func (s *Server) declareSkills() {
	s.mu.Lock()
	x := s.sessions[s.shared.Load()]
	s.mu.Unlock()
	if x == nil || x.skills || !s.up.HasSkills() {
		return
	}
	srv := s.newMCPServer()
	s.mu.Lock()
	s.sessions[srv].shared = true
	s.mu.Unlock()
	s.shared.Store(srv)
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
