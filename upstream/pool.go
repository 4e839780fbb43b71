// Package upstream connects toolshelf to the user's MCP servers.
//
// A [Pool] starts every configured server in parallel (stdio processes,
// streamable HTTP or legacy SSE endpoints), lists all pages of each
// server's tools, and publishes one immutable [catalog.Catalog] snapshot
// of all of them. It keeps that snapshot current: a server's
// notifications/tools/list_changed makes it list again, a crashed server
// is restarted with exponential backoff, and the last good tool list of
// every server is cached on disk so that tools are searchable before the
// servers have started. Calls are forwarded to the owning server.
//
// Servers misbehave in practice, and the pool tolerates it: banners on
// stdout, schemas without "type":"object", fields the SDK does not model
// (the raw tools/list bytes are kept), servers that hang (killed at their
// deadline, with what they printed kept for the error), and servers that
// do not answer tools/list at all (see the discovery fallbacks in
// fallback.go). Nothing one server does stops the others.
package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"reflect"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/internal/folders"
	"github.com/toolshelf/toolshelf/launcher"
	"github.com/toolshelf/toolshelf/pin"
	"github.com/toolshelf/toolshelf/rules"
	"github.com/toolshelf/toolshelf/signin"
	"github.com/toolshelf/toolshelf/telemetry"
)

// State is where a server is in its life.
type State string

const (
	StateConnecting State = "connecting" // first start, initialize, tools/list
	StateReady      State = "ready"      // connected; its tools are live
	StateFailed     State = "failed"     // could not connect; retried with backoff unless its configuration is at fault
	StateRestarting State = "restarting" // the connection was lost; reconnecting
	StateDisabled   State = "disabled"   // "disabled": true in the configuration
	StateNeedsAuth  State = "needs-auth" // asks for sign-in; toolshelf auth login NAME
)

// Where a server's current tools came from.
const (
	SourceLive        = "live"        // tools/list on the current connection
	SourceCache       = "cache"       // the disk cache; not yet confirmed
	SourceOutput      = "output"      // tool definitions the server printed
	SourceAutoApprove = "autoApprove" // the configuration's autoApprove names
)

// Status reports one server's state.
type Status struct {
	Name      string `json:"name"`
	Transport string `json:"transport"`
	State     State  `json:"state"`
	// Error says why the server failed or was restarted.
	Error string `json:"error,omitempty"`
	// Tools is the number of tools in the catalog from this server, and
	// Source where they came from.
	Tools int `json:"tools"`
	// Quarantined is the number of the server's tools that the lock
	// file keeps out (see [Pool.Quarantined]).
	Quarantined     int    `json:"quarantined,omitempty"`
	Source          string `json:"source,omitempty"`
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Restarts counts reconnections after the first attempt.
	Restarts int `json:"restarts"`
	// ConnectTime is how long the last successful connect and listing took.
	ConnectTime time.Duration `json:"connectTime,omitempty"`
	// Contained is set for a stdio server that runs in a sandbox;
	// Uncontained says why a stdio server does not.
	Contained   bool   `json:"contained,omitempty"`
	Uncontained string `json:"uncontained,omitempty"`
	// Hints are what a person should know of a contained server's grants
	// before it runs: a write grant it cannot write, a path its
	// arguments or environment name that it is not given.
	Hints []string `json:"hints,omitempty"`
	// RetryAt is when a failed or lost server is tried again; zero when
	// no try is waiting (see Pool.Retry).
	RetryAt time.Time `json:"retryAt,omitzero"`
}

// Options configures a Pool. The zero value is usable.
type Options struct {
	// Logger receives state changes and server misbehaviour. Nil is silent.
	Logger *slog.Logger
	// CacheDir holds the last good tool list of each server. Empty
	// disables the disk cache; [DefaultCacheDir] is the usual choice.
	CacheDir string
	// Version is toolshelf's version as reported to servers ("dev" when
	// empty).
	Version string
	// MaxStarting bounds how many servers start at once (default four
	// per core): a hundred node servers started together on a small
	// machine would each miss its timeout, which counts from its own
	// start, not from the pool's.
	MaxStarting int
	// RestartDelay is the wait before the first reconnection; it doubles
	// with every failure up to MaxRestartDelay. Defaults: 1s and 1m.
	RestartDelay    time.Duration
	MaxRestartDelay time.Duration
	// CallDrain bounds how long a server that Reconfigure stops or
	// restarts is left to answer the calls under way (default 30s): a
	// call still running after it ends with the server.
	CallDrain time.Duration
	// Tokens holds the sign-ins of remote servers that ask for OAuth
	// (toolshelf auth login). Nil sends no token: such a server fails
	// with its 401.
	Tokens *signin.Store
	// Pins, when set, holds back every tool whose definition is not the
	// one pinned in the lock file (see [Quarantined]); tools seen for the first
	// time are pinned or quarantined as the lock's trust setting says. The pool
	// reads the file again when another process changes it.
	Pins *pin.Lock
	// Secrets are toolshelf's own tokens (and the variables they came
	// from): withheld from every server's environment and cut from
	// tool results and errors before a client sees them.
	Secrets config.Secrets
	// Telemetry receives a client span for each request sent to a
	// server (its context in the request's _meta) and
	// mcp.client.operation.duration; nil records nothing.
	Telemetry *telemetry.Telemetry
	// Hide are toolshelf's own files and folders (its configuration,
	// lock file, token files, state): no contained server sees them, even
	// inside a path it was given. Secrets.Files and toolshelf's
	// configuration, cache and state folders are hidden too.
	Hide []string
	// Getenv is the environment of the program running toolshelf, which
	// places toolshelf's own folders (package folders) and servers'
	// package caches; os.Getenv when nil.
	Getenv func(string) string
	// Policies are the operators' rules (configuration "policies"), in
	// Cedar: asked about every call after the profile, the server's tool
	// filter and the lock file (see [Scope.Reach]); nil permits all.
	Policies *rules.Live
	// Rules are asked after those about every call.
	Rules []Rule
	// Flows sign people in to servers marked "signin": "per-person"
	// through the gateway's callback; nil: such a server's calls of a
	// person not signed in fail, saying so.
	Flows *signin.Flows
	// Identity is the team's identity provider, which exchanges a
	// person's token for servers marked "signin": "exchange".
	Identity *identity.Verifier
	// NoContain runs every stdio server uncontained, as a program that
	// contains toolshelf itself may choose; servers are contained by
	// default where the system allows (see [Containment]).
	NoContain bool
}

// Pool is a set of upstream servers and the catalog of their tools.
// Its methods are safe for concurrent use.
type Pool struct {
	opts   Options
	logger *slog.Logger
	tel    *telemetry.Telemetry
	ops    *clientOps
	// set is the servers, replaced whole when the configuration changes
	// (Reconfigure): a reader takes the set of the moment.
	set atomic.Pointer[serverSet]
	// refused is why the configuration's last change was not applied
	// (ConfigRefused), "" while what is served is the file's.
	refused atomic.Pointer[string]
	// reconfMu serialises Reconfigure; run is Run's context and wg its
	// servers' goroutines, for the servers a change adds.
	reconfMu sync.Mutex
	run      context.Context
	wg       sync.WaitGroup

	snap     atomic.Pointer[catalog.Catalog]
	changed  atomic.Pointer[chan struct{}] // closed and replaced by every new snapshot
	pubMu    sync.Mutex                    // serialises publish
	running  atomic.Bool
	starting chan struct{} // a slot per server starting (MaxStarting)
	// published, when set (by tests), sees every snapshot in order.
	published func(*catalog.Catalog)
	// conflicts are the name collisions of the last snapshot, by server
	// (servers with "prefix": false); guarded by pubMu.
	conflicts map[string]string
	dropped   atomic.Int64 // notices dropped
	// scopes get the servers' notices (see Pool.Scope).
	scopesMu sync.Mutex
	scopes   []*Scope
	// fixed, when set, says where a pool without servers got its fixed
	// catalog (see Fixed).
	fixed string
	back  sync.Map // progress token → backRoute (see Progress)
	// quarantined are the tools the lock file keeps out, by server;
	// guarded by pubMu. quarantines counts them since the start.
	quarantined map[string][]Quarantined
	quarantines atomic.Int64
	// apps are the servers' apps the lock file trusts, by server and URI
	// (see Scope.App); guarded by pubMu.
	apps map[string]map[string]*mcp.ReadResourceResult
	// skills are the servers' skills the lock file trusts, by server
	// (skills.go).
	skills map[string][]Skill
	// defs and nextDefs are the canonical definitions of the last
	// publish's tools and of this one's, by raw definition; guarded by
	// pubMu.
	defs, nextDefs map[string]pin.Definition
	// redact cuts every secret (Options.Secrets, every server's) from
	// what servers send back, what is logged and errors; replaced when
	// the configuration changes.
	redact atomic.Pointer[Redactor]
}

// serverSet is a pool's servers at one time.
type serverSet struct {
	list   []*server // sorted by name
	byName map[string]*server
}

// list is the pool's servers now, sorted by name.
func (p *Pool) list() []*server {
	if set := p.set.Load(); set != nil {
		return set.list
	}
	return nil
}

// server is the pool's server name now, nil when there is none.
func (p *Pool) server(name string) *server {
	if set := p.set.Load(); set != nil {
		return set.byName[name]
	}
	return nil
}

// redactor cuts every secret the pool holds now.
func (p *Pool) redactor() *Redactor { return p.redact.Load() }

// redactor is the pool's (see Pool.redactor).
func (s *server) redactor() *Redactor { return s.pool.redactor() }

// NewPool returns a pool of the given servers; nothing is started until
// [Pool.Run]. Cached tool lists are loaded at once, so the pool's first
// catalog already holds the tools of every server seen before.
func NewPool(configs []config.ServerConfig, opts *Options) *Pool {
	p := &Pool{nextDefs: make(map[string]pin.Definition)}
	if opts != nil {
		p.opts = *opts
	}
	if p.opts.RestartDelay <= 0 {
		p.opts.RestartDelay = time.Second
	}
	if p.opts.MaxRestartDelay <= 0 {
		p.opts.MaxRestartDelay = time.Minute
	}
	if p.opts.CallDrain <= 0 {
		p.opts.CallDrain = 30 * time.Second
	}
	if p.opts.Version == "" {
		p.opts.Version = "dev"
	}
	if p.opts.MaxStarting <= 0 {
		p.opts.MaxStarting = 4 * runtime.GOMAXPROCS(0)
	}
	p.starting = make(chan struct{}, p.opts.MaxStarting)
	p.logger = p.opts.Logger
	if p.logger == nil {
		p.logger = slog.New(slog.DiscardHandler)
	}
	p.tel = p.opts.Telemetry
	if p.tel == nil {
		p.tel = telemetry.Discard()
	}
	var err error
	if p.ops, err = newClientOps(p.tel); err != nil {
		p.logger.Warn("no mcp.client.operation.duration", "error", err)
	}
	ch := make(chan struct{})
	p.changed.Store(&ch)
	set := &serverSet{byName: make(map[string]*server)}
	for _, cfg := range p.plans(configs) {
		s := p.newServer(cfg)
		set.list = append(set.list, s)
		set.byName[cfg.Name] = s
	}
	p.set.Store(set)
	p.publish()
	return p
}

// plans makes each configured server's plan: its environment (without
// what the others' secrets withhold), toolshelf's files to cover, its own
// cache, its sign-in; and the redactor of every secret there is now.
func (p *Pool) plans(configs []config.ServerConfig) []serverConfig {
	environ := os.Environ()
	kept := newWithheld(p.opts.Secrets, configs)
	// One redactor of every secret: a server's answer may carry another
	// server's key (an uncontained one read it), and no client may get it.
	all := slices.Clone(p.opts.Secrets.Values)
	for i := range configs {
		all = append(all, configs[i].SecretValues()...)
	}
	p.redact.Store(NewRedactor(all...))
	own := folders.Own(p.opts.Getenv)
	for _, d := range own {
		// Made now, private, so that the sandbox covers the folder
		// itself: one not made yet is covered by the nearest folder that
		// is, which may hold the server's own program.
		os.MkdirAll(d, 0o700)
	}
	hide := slices.Concat(p.opts.Hide, p.opts.Secrets.Files, own)
	out := make([]serverConfig, 0, len(configs))
	for _, sc := range configs {
		cfg := serverConfig{Plan: launcher.Plan{ServerConfig: sc}}
		if cfg.TransportName() == "stdio" {
			cfg.Environ = serverEnv(&cfg.ServerConfig, environ, kept, p.logger.With("server", cfg.Name))
			cfg.Hide, cfg.CacheDir = hide, launcher.CacheDir(p.opts.Getenv, cfg.Name)
			if p.opts.NoContain {
				cfg.Uncontained = "the program running toolshelf turned containment off (upstream.Options.NoContain)"
			}
		}
		switch {
		case cfg.URL == "" || cfg.Dial != nil || hasAuthorization(cfg.Headers):
		case cfg.OAuth != nil && cfg.OAuth.Grant == config.GrantClientCredentials:
			cfg.oauth = signin.ClientCredentials(cfg.OAuth.ClientID, cfg.OAuth.ClientSecret)
		case p.opts.Tokens != nil:
			cfg.oauth = p.opts.Tokens.Handler(cfg.Name, cfg.URL, nil)
		}
		out = append(out, cfg)
	}
	return out
}

// newServer makes a server of the pool from its plan; nothing starts.
func (p *Pool) newServer(cfg serverConfig) *server {
	s := &server{
		cfg:         cfg,
		pool:        p,
		logger:      slog.New(&redactingHandler{p.logger.Handler(), p.redactor}).With("server", cfg.Name),
		relist:      make(chan struct{}, 1),
		retryNow:    make(chan struct{}, 1),
		settled:     make(chan struct{}),
		relistOffer: make(chan struct{}, 1),
		ready:       make(chan struct{}),
		state:       StateConnecting,
	}
	if !cfg.Disabled {
		s.hints = cfg.GrantHints()
	}
	if cfg.Disabled {
		s.state = StateDisabled
		close(s.settled)
	} else if f, ok := loadCache(p.opts.CacheDir, &cfg); ok {
		s.setTools(f.Server, f.Tools, SourceCache)
		if f.Offer != nil {
			s.offers.offer = *f.Offer
		}
	}
	s.client = mcp.NewClient(&mcp.Implementation{Name: ClientName, Version: p.opts.Version}, s.clientOptions())
	s.client.AddReceivingMiddleware(s.rootsMiddleware)
	s.client.AddSendingMiddleware(s.traceRequests)
	return s
}

// Run connects to every enabled server in parallel and keeps them
// connected (listing again on list_changed, restarting crashed servers)
// until ctx is done. Then it disconnects every server and returns once
// every process it started has exited and every goroutine it started has
// ended. A pool runs once; Run on a pool that has run returns an error.
// Use [Pool.Wait] to wait for the first attempts to end.
func (p *Pool) Run(ctx context.Context) error {
	if !p.running.CompareAndSwap(false, true) {
		return errors.New("upstream: the pool is already running or has run")
	}
	p.logContainment()
	var wg sync.WaitGroup
	if p.opts.Pins != nil {
		wg.Go(func() { p.watchPins(ctx) })
	}
	if p.opts.Policies != nil {
		for _, w := range p.opts.Policies.Current().Warnings {
			p.logger.Warn("a rule may not mean what it says", "rule", w)
		}
		// A change can hide or show tools: publish the catalog again.
		wg.Go(func() { p.opts.Policies.Watch(ctx, p.logger.With("component", "rules"), p.publish) })
	}
	p.reconfMu.Lock()
	p.run = ctx
	for _, s := range p.list() {
		p.start(s)
	}
	p.reconfMu.Unlock()
	<-ctx.Done()
	// Under reconfMu: a Reconfigure under way ends first, and none
	// after starts a server (see start).
	p.reconfMu.Lock()
	p.wg.Wait()
	p.reconfMu.Unlock()
	wg.Wait()
	return nil
}

// start runs a server's supervisor until the pool's run ends or the
// server is stopped (Reconfigure); reconfMu is held.
func (p *Pool) start(s *server) {
	s.stopped = make(chan struct{})
	if s.cfg.Disabled || p.run.Err() != nil {
		close(s.stopped)
		return
	}
	ctx, stop := context.WithCancel(p.run)
	s.stop = stop
	p.wg.Go(func() {
		defer close(s.stopped)
		defer stop()
		s.run(ctx)
	})
}

// Changes says what a Reconfigure did, by server name.
type Changes struct {
	Added, Removed, Restarted []string
}

// Empty reports whether nothing changed.
func (c Changes) Empty() bool { return len(c.Added)+len(c.Removed)+len(c.Restarted) == 0 }

// Reconfigure makes the pool's servers those of configs while it runs:
// a server added is started (its package installed first, as at any first
// start), one removed is stopped and its tools leave the catalog, one
// whose plan changed (command, arguments, environment, grants, network,
// headers, sign-in, trust) is stopped and started again with the new
// one; the others serve on, their connections untouched. A server
// stopped answers the calls under way first (up to Options.CallDrain). The redactor
// takes the new secrets at once. The catalog is published again, so every
// session's lists follow. Before Run, the servers are only replaced.
func (p *Pool) Reconfigure(configs []config.ServerConfig) Changes {
	p.reconfMu.Lock()
	defer p.reconfMu.Unlock()
	old := p.set.Load()
	if old == nil {
		old = &serverSet{} // a pool of a fixed catalog gets servers
	}
	next := &serverSet{byName: make(map[string]*server)}
	var ch Changes
	var stopping, starting []*server
	for _, cfg := range p.plans(configs) {
		s := old.byName[cfg.Name]
		switch {
		case s != nil && samePlan(&s.cfg, &cfg):
			// Kept as it runs.
		case s != nil:
			ch.Restarted = append(ch.Restarted, cfg.Name)
			stopping = append(stopping, s)
			s = nil
		default:
			ch.Added = append(ch.Added, cfg.Name)
		}
		if s == nil {
			s = p.newServer(cfg)
			starting = append(starting, s)
		}
		next.list = append(next.list, s)
		next.byName[cfg.Name] = s
	}
	for _, s := range old.list {
		if next.byName[s.cfg.Name] == nil {
			ch.Removed = append(ch.Removed, s.cfg.Name)
			stopping = append(stopping, s)
		}
	}
	p.set.Store(next)
	// The tools of a server removed leave every list at once; the calls
	// it is answering are answered before it stops.
	p.publish()
	drainCalls(stopping, p.opts.CallDrain)
	for _, s := range stopping {
		if s.stop != nil {
			s.stop()
			<-s.stopped
		}
	}
	if p.run != nil {
		// Once the old ones have stopped: a restarted server's process
		// and cache are not shared with its predecessor's.
		for _, s := range starting {
			p.start(s)
		}
	}
	return ch
}

// SetTrust changes the lock file's trust (the configuration's "trust"
// changed while the pool runs) and judges every tool again by it.
func (p *Pool) SetTrust(t pin.Trust) {
	if p.opts.Pins == nil {
		return
	}
	was := p.opts.Pins.Trust()
	p.opts.Pins.SetTrust(t)
	if p.opts.Pins.Trust() != was {
		p.publish()
	}
}

// ConfigRefused records that the configuration's last change did not load
// (err; nil once one loads), for /healthz and the console: the servers
// serve on as they were. Its secrets are cut, as in every status.
func (p *Pool) ConfigRefused(err error) {
	why := ""
	if err != nil {
		why = p.redactor().Redact(err.Error())
	}
	if old := p.refused.Swap(&why); old == nil || *old != why {
		p.publish()
	}
}

// ConfigProblem is why the configuration's last change was not applied,
// or "" (see ConfigRefused).
func (p *Pool) ConfigProblem() string {
	if why := p.refused.Load(); why != nil {
		return *why
	}
	return ""
}

// samePlan reports whether a server's plan is unchanged: what it runs
// with, and how it signs in.
func samePlan(a, b *serverConfig) bool {
	x, y := a.Plan, b.Plan
	if (x.Dial == nil) != (y.Dial == nil) || (a.oauth == nil) != (b.oauth == nil) {
		return false
	}
	x.Dial, y.Dial = nil, nil // a function is equal to nothing, itself included
	return reflect.DeepEqual(x, y)
}

// Wait blocks until every server has either connected or failed once, or
// ctx is done.
func (p *Pool) Wait(ctx context.Context) error {
	for _, s := range p.list() {
		select {
		case <-s.settled:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	return nil
}

// Catalog returns the current snapshot of every server's tools.
func (p *Pool) Catalog() *catalog.Catalog { return p.snap.Load() }

// Changed returns a channel that is closed when the pool next publishes:
// its catalog, its offers or a server's state (and error) changed.
func (p *Pool) Changed() <-chan struct{} { return *p.changed.Load() }

// Status returns the state of every server, sorted by name.
func (p *Pool) Status() []Status {
	out := make([]Status, 0, len(p.list()))
	for _, s := range p.list() {
		out = append(out, s.status())
	}
	return out
}

// Retry has a server that failed or lost its connection tried again now
// rather than when its backoff ends. It is an error for a server that is
// not waiting to be tried, or whose configuration is at fault.
func (p *Pool) Retry(name string) error {
	for _, s := range p.list() {
		if s.cfg.Name != name {
			continue
		}
		if s.cfg.Err != nil {
			return fmt.Errorf("server %s: its configuration is at fault, which a retry cannot mend: %v", name, s.cfg.Err)
		}
		s.mu.Lock()
		waiting, state := !s.retryAt.IsZero(), s.state
		s.mu.Unlock()
		if !waiting {
			return fmt.Errorf("server %s is %s: no try is waiting", name, state)
		}
		select {
		case s.retryNow <- struct{}{}:
		default: // one is on its way already
		}
		return nil
	}
	return p.noServer(name)
}

// Redact removes every server's secrets (expanded variables, headers,
// client secrets, credentials in URLs) from s.
func (p *Pool) Redact(s string) string { return p.redactor().Redact(s) }

// Secrets is the redactor of every secret the pool holds, for what
// reaches a client by other ways than Call: prompts, resources, a
// program's output.
func (p *Pool) Secrets() *Redactor { return p.redactor() }

// Pending returns the names of the servers still connecting or
// reconnecting: their tools may yet appear.
func (p *Pool) Pending() []string {
	var names []string
	for _, s := range p.list() {
		s.mu.Lock()
		if s.state == StateConnecting || s.state == StateRestarting {
			names = append(names, s.cfg.Name)
		}
		s.mu.Unlock()
	}
	return names
}

// Errors returned by Call, for callers that word them for a model.
var (
	ErrUnknownTool = errors.New("unknown tool")
	// ErrServerDown is a call of a tool whose server is starting, failed
	// or waits for a sign-in, and has none of its tools listed.
	ErrServerDown = errors.New("server not connected")
	ErrUnverified = errors.New("tool has not been listed by its server")
)

// call calls a resolved tool with the given JSON arguments (an object,
// or empty for none) and returns the server's result with every secret
// cut. A server that is connecting or restarting is waited for, up to its
// timeout. Cancelling ctx cancels the call on the server. Only a scope
// calls it, after its rules (see [Scope.Reach]).
func (p *Pool) call(ctx context.Context, e *catalog.Entry, args json.RawMessage) (*mcp.CallToolResult, error) {
	if p.fixed != "" {
		return nil, p.noServers()
	}
	name := e.Name
	s := p.server(e.Server)
	if s == nil {
		return nil, fmt.Errorf("%w %q", ErrUnknownTool, name)
	}
	var c *conn
	var err error
	if s.cfg.Signin == config.SigninPerPerson || s.cfg.Signin == config.SigninExchange {
		c, err = s.personConn(ctx)
	} else {
		c, err = s.waitReady(ctx)
	}
	if err != nil {
		return nil, err
	}
	s.calls.begin()
	defer s.calls.end()
	token, end := s.flights.start(ctx)
	defer end()
	s.offers.mu.Lock()
	level := s.offers.logLevel
	s.offers.mu.Unlock()
	res, err := c.call(ctx, e.Tool, args, token, level)
	if tc := taskCaptureOf(ctx); tc != nil {
		tc.mu.Lock()
		tc.redact = p.redactor() // a task handle's message may quote a secret, as a result may
		tc.mu.Unlock()
	}
	if token != "" {
		// The response may overtake progress sent before it: pass that on
		// before the caller answers its client, which ignores progress of
		// a request it has its answer to.
		s.flights.drain(ctx, token)
	}
	if err != nil {
		var na *signin.NeedsAuthError
		if who := identity.PersonOf(ctx); who != nil && errors.As(err, &na) {
			// The person's token was refused mid-session (revoked,
			// expired past refreshing): the next call dials anew.
			s.dropPerson(who.Subject)
		}
		return nil, &redactedError{fmt.Sprintf("server %s: %s", e.Server, s.redactor().Redact(err.Error())), err}
	}
	p.redactor().cutResult(res)
	return res, nil
}

// redactedError is an error whose message has had secrets removed; it
// still unwraps to the error it came from, for errors.Is.
type redactedError struct {
	msg string
	err error
}

func (e *redactedError) Error() string { return e.msg }
func (e *redactedError) Unwrap() error { return e.err }

// publish builds a new catalog from every server's tools and, if it
// differs from the current one, stores it and tells Changed's waiters.
func (p *Pool) publish() {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	var all []catalog.Entry
	var infos []catalog.Server
	owner := make(map[string]string) // a tool's name → the server that has it
	conflicts := make(map[string]string)
	quarantined := make(map[string][]Quarantined)
	apps := make(map[string]map[string]*mcp.ReadResourceResult)
	skills := make(map[string][]Skill)
	for _, s := range p.list() {
		s.offers.mu.Lock()
		trusted, heldApps := p.judgeApps(s, s.offers.offer.Apps)
		trustedSkills, heldSkills := p.judgeSkills(s, s.offers.offer.Skills)
		s.offers.mu.Unlock()
		heldApps = append(heldApps, heldSkills...)
		if len(trusted) > 0 {
			apps[s.cfg.Name] = trusted
		}
		if len(trustedSkills) > 0 {
			skills[s.cfg.Name] = trustedSkills
		}
		s.mu.Lock()
		kept, h := p.judge(s, s.entries)
		if h = append(h, heldApps...); len(h) > 0 {
			quarantined[s.cfg.Name] = h
		}
		for _, e := range kept {
			name := e.Tool
			if !e.Unprefixed {
				name = catalog.Prefix + e.Server + "__" + e.Tool
			}
			if o, ok := owner[name]; ok && o != e.Server {
				// Names kept as the servers give them must be unique:
				// the server first in name order keeps the name.
				conflicts[s.cfg.Name] = fmt.Sprintf("tool %q is also a tool of server %s; it is left out (set \"prefix\": true on one of them)", e.Tool, o)
				continue
			}
			owner[name] = e.Server
			all = append(all, e)
		}
		if s.state != StateDisabled {
			infos = append(infos, s.info)
		}
		s.mu.Unlock()
	}
	p.noteConflicts(conflicts)
	p.apps = apps
	p.skills = skills
	p.noteQuarantined(quarantined)
	c := catalog.New(all, infos)
	if old := p.snap.Load(); old != nil && old.Version() == c.Version() {
		// The tools are as they were, but a server's state or error,
		// or its offers, changed: the console shows them.
		p.touch()
		return
	}
	p.snap.Store(c)
	if p.published != nil {
		p.published(c)
	}
	p.touch()
}

// touch tells Changed's waiters that something changed.
func (p *Pool) touch() {
	next := make(chan struct{})
	close(*p.changed.Swap(&next))
}

// noteConflicts logs name collisions when they change, and keeps them for
// Status.
func (p *Pool) noteConflicts(conflicts map[string]string) {
	if maps.Equal(conflicts, p.conflicts) {
		return
	}
	for name, msg := range conflicts {
		if p.conflicts[name] != msg {
			p.logger.Error("tool name collision", "server", name, "error", msg)
		}
	}
	p.conflicts = conflicts
}

// conflict returns a server's name collision, if it has one.
func (p *Pool) conflict(server string) string {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	return p.conflicts[server]
}
