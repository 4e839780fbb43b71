package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/telemetry"
	"github.com/toolshelf/toolshelf/upstream"
)

// HostOptions configures a [Host]. Nil means defaults.
type HostOptions struct {
	// Logger gets the host's and its servers' logs; nil is silent. It
	// overrides Server.Logger.
	Logger *slog.Logger
	// Server is every profile's gateway's options. The host runs
	// Server.Audit and Server.Learn (their Run), and stops them after
	// everything else so that the last calls' records are kept. A zero
	// PendingWait is the pool's longest start timeout.
	Server Options
	// Profiles are the configuration's profiles, each served at
	// /mcp/<name> and opened by its tokens (see HTTPOptions.Tokens).
	Profiles []config.Profile
	// Only, when set, names the one profile served, at /mcp and over
	// stdio (serve --profile); the others are not served.
	Only string
	// AuthToken, AdminToken and Stateless are the HTTP surface's (see
	// HTTPOptions).
	AuthToken  string
	AdminToken string
	Stateless  bool
	// Fleet, when set, is the fleet this host is a replica of: the host
	// runs it, and the fleet sends on the requests of sessions other
	// replicas hold.
	Fleet Fleet
	// People lets the team's people in with their own access tokens
	// (see HTTPOptions.People).
	People *People
	// Changes, when set, is the shared store's change feed: the host
	// follows it while it runs, so that what other replicas change (pins,
	// sign-ins, learned pairs) reaches this one.
	Changes Changes
}

// Changes is a feed of the changes replicas make to a shared store
// (store.DB is one).
type Changes interface {
	// Follow hears of changes until ctx is done, and logs to logger
	// when it loses the store and tries again.
	Follow(ctx context.Context, logger *slog.Logger)
}

// Host is what `toolshelf serve` runs: a pool, one gateway per profile
// over the pool's scope of that profile, the audit log and the usage
// store, and the HTTP surface in front of them (/mcp, /mcp/<profile>,
// /healthz, /metrics). [Host.Run] owns the lifetime of all of it.
type Host struct {
	pool   *upstream.Pool
	opts   HostOptions
	logger *slog.Logger
	main   *Server // at /mcp and over stdio
	// so are the options every gateway is made with, a profile's added
	// by Apply too.
	so Options
	// routes are the MCP paths at the version of the profiles served
	// (hostroutes.go); behind holds, by gateway, what its door lets
	// requests through to (its sessions live there), and open the
	// requests under way, for a change of who opens a path to end the
	// ones it no longer lets in. large bounds large messages on every
	// path.
	routes atomic.Pointer[hostRoutes]
	behind map[*Server]http.Handler
	open   openRequests
	large  chan struct{}
	// run is Run's context and ran its gateways' goroutines, for the
	// gateways of profiles Apply adds; stops ends each one's Run.
	run   context.Context
	ran   sync.WaitGroup
	stops map[*Server]context.CancelFunc
	// announce carries the address of a fleet's replica to runFleet.
	announce chan string
	mounts   []mount
	// applyMu serialises Apply and guards behind, run and stops;
	// profiles are the ones applied last.
	applyMu  sync.Mutex
	profiles []config.Profile
}

// NewHost returns a host of pool's tools. The error is a profile that
// Only names and the profiles lack, or an unknown engine.
func NewHost(pool *upstream.Pool, opts *HostOptions) (*Host, error) {
	h := &Host{pool: pool, announce: make(chan string, 1), behind: map[*Server]http.Handler{},
		stops: map[*Server]context.CancelFunc{}, large: make(chan struct{}, maxLargeMessages)}
	if opts != nil {
		h.opts = *opts
	}
	h.profiles = h.opts.Profiles
	h.logger = h.opts.Logger
	if h.logger == nil {
		h.logger = slog.New(slog.DiscardHandler)
	}
	so := h.opts.Server
	so.Logger = h.logger
	if f := h.opts.Fleet; f != nil {
		so.Replica = f.ID()
		so.ReplicaAlive = f.Alive
		so.SendTo = f.SendTo
		if so.Activate {
			so.OnActivate = f.Activated
		}
		f.OnTakeover(h.reactivate)
	}
	if so.Telemetry == nil {
		// One for every profile's gateway: /metrics serves them all.
		tel, err := telemetry.New(context.Background(), &telemetry.Options{Getenv: noEnv})
		if err != nil {
			return nil, err
		}
		so.Telemetry = tel
	}
	if so.PendingWait == 0 {
		so.PendingWait = pool.StartTimeout()
	}
	// What a client lists depends on who it is when the host serves
	// profiles or people: no cache may keep it for another.
	so.PrivateLists = so.PrivateLists || len(h.opts.Profiles) > 0 || h.opts.People != nil
	h.so = so
	var others []*Server
	for i := range h.opts.Profiles {
		p := &h.opts.Profiles[i]
		if h.opts.Only != "" && p.Name != h.opts.Only {
			continue
		}
		g, err := New(pool.Scope(p), &so)
		if err != nil {
			return nil, err
		}
		if h.opts.Only != "" {
			h.main = g
		} else {
			others = append(others, g)
		}
	}
	if h.opts.Only != "" && h.main == nil {
		return nil, errors.New("no profile " + h.opts.Only)
	}
	if h.main == nil {
		g, err := New(pool.Scope(nil), &so)
		if err != nil {
			return nil, err
		}
		h.main = g
	}
	var claims map[string][]string
	if h.opts.People != nil {
		claims = h.opts.People.Claims[config.DefaultProfile]
	}
	h.routes.Store(h.makeRoutes(others, h.opts.Profiles, claims))
	return h, nil
}

// Apply makes the host serve a new version of the configuration's
// profiles and settings while it runs: every gateway's settings; each
// profile's tools (its servers, tool filter, tools kept loaded), each
// session listing again where what it sees changed; a profile added
// served at its path, one removed gone from it; who opens each (its
// tokens, its people's claims) from the next request, and every request
// under way (a session's stream) that the new version would not let in
// ended. claims are who opens /mcp (identity's own "claims"), when
// people sign in. It returns what it left for a restart: serve
// --profile's profile gone.
func (h *Host) Apply(profiles []config.Profile, claims map[string][]string, st Settings) (unapplied []string) {
	h.applyMu.Lock()
	defer h.applyMu.Unlock()
	for _, g := range h.servers() {
		g.Apply(st)
	}
	find := func(name string) *config.Profile {
		if i := slices.IndexFunc(profiles, func(p config.Profile) bool { return p.Name == name }); i >= 0 {
			return &profiles[i]
		}
		return nil
	}
	var others []*Server
	if h.opts.Only != "" {
		p := find(h.opts.Only)
		if p == nil {
			return []string{"profiles (serve --profile " + h.opts.Only + "'s is gone)"}
		}
		h.main.Scope().SetProfile(p)
	} else {
		was := h.routes.Load().others
		for i := range profiles {
			p := &profiles[i]
			if j := slices.IndexFunc(was, func(g *Server) bool { return g.Profile() == p.Name }); j >= 0 {
				was[j].Scope().SetProfile(p)
				others = append(others, was[j])
				continue
			}
			g, err := New(h.pool.Scope(p), &h.so)
			if err != nil {
				h.logger.Error("profile "+p.Name+" cannot be served", "error", err)
				continue
			}
			h.startGateway(g)
			others = append(others, g)
		}
		for _, g := range was {
			if find(g.Profile()) == nil {
				h.stopGateway(g)
			}
		}
	}
	rt := h.makeRoutes(others, profiles, claims)
	h.routes.Store(rt)
	h.open.recheck(rt)
	h.profiles = profiles
	return nil
}

// Main returns the gateway served at /mcp and over stdio.
func (h *Host) Main() *Server { return h.main }

// Pool returns the pool the host serves.
func (h *Host) Pool() *upstream.Pool { return h.pool }

// Gateways returns the host's gateways: the one at /mcp first, then each
// profile's.
func (h *Host) Gateways() []*Server { return h.servers() }

// Gateway returns the gateway of a profile (the one at /mcp for its own
// profile's name), or nil.
func (h *Host) Gateway(profile string) *Server {
	for _, g := range h.servers() {
		if g.Profile() == profile {
			return g
		}
	}
	return nil
}

// At returns the gateway served at an MCP path of Handler (/mcp or
// /mcp/<profile>), or nil.
func (h *Host) At(path string) *Server {
	if path == "/mcp" {
		return h.main
	}
	if p, ok := strings.CutPrefix(path, "/mcp/"); ok {
		for _, g := range h.routes.Load().others {
			if g.Profile() == p {
				return g
			}
		}
	}
	return nil
}

// Run runs the pool, every gateway, the audit log, the usage store and,
// in a fleet, the fleet member and the store's change feed until ctx is
// done, and returns once all of them have: the audit log and
// the usage store last, so that the records of the last calls are kept.
// The error is the pool's or the audit log's.
func (h *Host) Run(ctx context.Context) error {
	tctx, stopTail := context.WithCancel(context.WithoutCancel(ctx))
	defer stopTail()
	var tail sync.WaitGroup
	var auditErr error
	if a := h.opts.Server.Audit; a != nil {
		tail.Go(func() { auditErr = a.Run(tctx) })
	}
	if u := h.opts.Server.Learn; u != nil {
		tail.Go(func() { u.Run(tctx) })
	}

	var wg sync.WaitGroup
	var poolErr error
	wg.Go(func() { poolErr = h.pool.Run(ctx) })
	h.applyMu.Lock()
	h.run = ctx
	for _, g := range h.servers() {
		h.startGateway(g)
	}
	h.applyMu.Unlock()
	wg.Go(func() { h.warnProfiles(ctx) })
	if h.opts.Fleet != nil {
		wg.Go(func() { h.runFleet(ctx) })
	}
	if h.opts.Changes != nil {
		wg.Go(func() { h.opts.Changes.Follow(ctx, h.logger) })
	}
	wg.Wait()
	h.applyMu.Lock() // an Apply under way ends first, and none after starts a gateway
	h.ran.Wait()
	h.applyMu.Unlock()

	stopTail()
	tail.Wait()
	return errors.Join(poolErr, auditErr)
}

// servers returns every gateway the host runs.
func (h *Host) servers() []*Server { return append([]*Server{h.main}, h.routes.Load().others...) }

// warnProfiles logs, once the servers have started, the profiles'
// patterns and load names that match none of their tools: a typo would
// otherwise silently give a profile nothing, or everything.
func (h *Host) warnProfiles(ctx context.Context) {
	if len(h.opts.Profiles) == 0 || h.pool.Wait(ctx) != nil {
		return
	}
	for i := range h.opts.Profiles {
		p := &h.opts.Profiles[i]
		for _, w := range p.Unmatched(h.pool.Catalog()) {
			h.logger.Warn("profile "+p.Name+": "+w, "profile", p.Name)
		}
	}
}

// Route is one path of the HTTP surface: which profile it serves, and
// who may open it (for the start-up log).
type Route struct {
	Path, Profile, Access string
}

// httpOptions are the HTTP surface's options, with the tokens and people
// of a version of the profiles.
func (h *Host) httpOptions(tokens map[string]string, people *People) *HTTPOptions {
	o := &HTTPOptions{AuthToken: h.opts.AuthToken, AdminToken: h.opts.AdminToken, Stateless: h.opts.Stateless, Tokens: tokens, People: people}
	if f := h.opts.Fleet; f != nil {
		o.Relay, o.Vouch = f.Handler, f.Vouched
		if o.People != nil {
			pp := *o.People
			pp.Relay = f.FlowHandler
			o.People = &pp
		}
	}
	return o
}

// Routes returns the host's MCP paths.
func (h *Host) Routes() []Route {
	rt := h.routes.Load()
	o := rt.opts
	out := []Route{{"/mcp", h.main.Profile(), o.Access(h.main.Profile())}}
	for _, g := range rt.others {
		out = append(out, Route{"/mcp/" + g.Profile(), g.Profile(), o.Access(g.Profile())})
	}
	return out
}

// Handler serves the host over streamable HTTP: the main gateway at /mcp,
// each profile's at /mcp/<profile> (as the profiles are now: see Apply),
// the servers' state at /healthz and every gateway's metrics at /metrics.
func (h *Host) Handler() http.Handler {
	mux := http.NewServeMux()
	paths := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := h.routes.Load().paths[r.URL.Path]
		if hd == nil {
			http.NotFound(w, r)
			return
		}
		hd.ServeHTTP(w, r)
	})
	mux.Handle("/mcp", paths)
	mux.Handle("/mcp/", paths)
	if h.opts.People != nil {
		mux.Handle(metadataPrefix, paths)
		mux.Handle(metadataPrefix+"/", paths)
	}
	serveRest(mux, h.main, h.routes.Load().opts)
	for _, m := range h.mounts {
		mux.Handle(m.prefix, m.handler)
		mux.Handle(m.prefix+"/", m.handler)
	}
	return mux
}
