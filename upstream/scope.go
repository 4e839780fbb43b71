//lint:file-ignore SA1019 sampling, roots and logging are deprecated by MCP 2026-07-28 (SEP-2577) but clients and servers on earlier revisions use them, and toolshelf relays them on purpose during the deprecation window.

package upstream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/rules"
)

// Scope is the pool as one profile sees it: its catalog, calls, sessions,
// subscriptions, status and quarantined tools, all limited to the profile, and
// the notices of the profile's servers. It is what every face and command
// works through, so that a profile's limits are enforced in one place:
// where calls go upstream, not only in what is listed (a client that
// names a tool outside its profile exactly is refused here). A nil
// profile is the default one, every tool of every server.
//
// Scopes of one pool share its connections: a server's subscription is
// made once for all of them (the pool counts), and its notices go to
// every scope that shows the server.
type Scope struct {
	pool *Pool
	// profile is the scope's profile (nil: every tool), replaced whole
	// by SetProfile.
	profile atomic.Pointer[config.Profile]
	notices chan Notice

	mu        sync.Mutex
	base, cat *catalog.Catalog // the pool's catalog, and the profile's part of it
	set       *rules.Set       // the rules cat was made with
}

// Scope returns the pool as profile sees it (nil: every tool). Call it
// before Run, or at least before the notices that matter: a scope gets
// the notices sent after it was made.
func (p *Pool) Scope(profile *config.Profile) *Scope {
	sc := &Scope{pool: p, notices: make(chan Notice, 256)}
	sc.profile.Store(profile)
	p.scopesMu.Lock()
	p.scopes = append(p.scopes, sc)
	p.scopesMu.Unlock()
	return sc
}

// Close lets the scope go: it gets no more notices (a profile removed
// from the configuration).
func (sc *Scope) Close() {
	p := sc.pool
	p.scopesMu.Lock()
	p.scopes = slices.DeleteFunc(p.scopes, func(x *Scope) bool { return x == sc })
	p.scopesMu.Unlock()
}

// Profile returns the name of the scope's profile.
func (sc *Scope) Profile() string {
	if p := sc.profile.Load(); p != nil {
		return p.Name
	}
	return config.DefaultProfile
}

// SetProfile makes the scope's tools a new version of its profile (the
// same name: a change of the configuration), at once: its catalog is
// narrowed anew, and every gateway of the pool hears of the change
// (Changed) and lists again. A scope of every tool stays so.
func (sc *Scope) SetProfile(p *config.Profile) {
	if sc.profile.Load() == nil || p == nil {
		return
	}
	sc.mu.Lock()
	sc.profile.Store(p)
	sc.base = nil // narrowed again at the next Catalog
	sc.mu.Unlock()
	sc.pool.touch()
}

// HasServer reports whether the scope's profile may use a server.
func (sc *Scope) HasServer(name string) bool {
	p := sc.profile.Load()
	return p == nil || p.HasServer(name)
}

// Catalog returns the profile's part of the pool's current catalog:
// its tools under the names the whole catalog gives them, its "load"
// tools marked alwaysLoad, without the tools the operators' rules forbid
// it whatever the call, and with the question of those a rule asks
// about every time (catalog.Entry.Asks).
func (sc *Scope) Catalog() *catalog.Catalog {
	base := sc.pool.Catalog()
	var set *rules.Set
	if live := sc.pool.opts.Policies; live != nil {
		set = live.Current()
	}
	if sc.profile.Load() == nil && set == nil {
		return base
	}
	sc.mu.Lock()
	defer sc.mu.Unlock()
	if base != sc.base || set != sc.set {
		cat := base
		if p := sc.profile.Load(); p != nil {
			cat = p.Narrow(cat)
		}
		if set != nil {
			cat = cat.Map(func(e catalog.Entry) (catalog.Entry, bool) {
				switch d := set.Static(requestOf(context.Background(), sc, &Call{Tool: &e})); d.Effect {
				case rules.Forbid:
					return e, false
				case rules.Ask:
					e.Asks = d.Message
					if e.Asks == "" {
						e.Asks = "a person is asked before each call"
					}
				}
				return e, true
			})
		}
		sc.base, sc.set, sc.cat = base, set, cat
	}
	return sc.cat
}

// Changed returns a channel that is closed when the catalog next changes.
func (sc *Scope) Changed() <-chan struct{} { return sc.pool.Changed() }

// Pending returns the profile's servers still connecting.
func (sc *Scope) Pending() []string {
	return slices.DeleteFunc(sc.pool.Pending(), func(s string) bool { return !sc.HasServer(s) })
}

// Unavailable is a server of a scope whose tools a search cannot see
// now: starting, failed, or waiting for a sign-in, with none of its tools
// in the catalog. A client is told of it, so that a model does not take
// "no match" for "no such tool" and reword its search again and again.
type Unavailable struct {
	Server string `json:"server"`
	// State is "starting", "failed" or "needs sign-in".
	State string `json:"state"`
	// Why is the first line of its error (secrets cut), when it has one.
	Why string `json:"why,omitempty"`
}

// String is u as a model reads it: "memory (failed: …)".
func (u Unavailable) String() string {
	if u.Why == "" {
		return u.Server + " (" + u.State + ")"
	}
	return u.Server + " (" + u.State + ": " + u.Why + ")"
}

// Unavailable returns the profile's servers whose tools are unknown now
// (see the type), in name order.
func (sc *Scope) Unavailable() []Unavailable { return unavailable(sc.Status()) }

// Unavailable returns every server whose tools are unknown now (see the
// type), in name order: for a face without profiles, the library's.
func (p *Pool) Unavailable() []Unavailable { return unavailable(p.Status()) }

func unavailable(status []Status) []Unavailable {
	var out []Unavailable
	for _, st := range status {
		if st.Tools > 0 || st.Quarantined > 0 {
			continue
		}
		u := Unavailable{Server: st.Name}
		switch st.State {
		case StateConnecting, StateRestarting:
			u.State = "starting"
		case StateFailed:
			u.State = "failed"
		case StateNeedsAuth:
			u.State = "needs sign-in"
		default:
			continue
		}
		u.Why = truncate(whyDown(st.Error), 160)
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b Unavailable) int { return strings.Compare(a.Server, b.Server) })
	return out
}

// whyDown is the part of a server's error a model can act on: what the
// server said on stderr when it said something (secrets cut, as in every
// Status), else the error's first line.
func whyDown(err string) string {
	if i := strings.LastIndex(err, "stderr: "); i >= 0 {
		err = strings.TrimRight(err[i+len("stderr: "):], ")")
	}
	line, _, _ := strings.Cut(err, "\n")
	return strings.TrimSpace(line)
}

// Status returns the state of the profile's servers.
func (sc *Scope) Status() []Status {
	return slices.DeleteFunc(sc.pool.Status(), func(s Status) bool { return !sc.HasServer(s.Name) })
}

// ConfigProblem is the pool's (see Pool.ConfigRefused).
func (sc *Scope) ConfigProblem() string { return sc.pool.ConfigProblem() }

// Held returns the profile's servers' tools that the lock file keeps out.
func (sc *Scope) Quarantined() []Quarantined {
	return slices.DeleteFunc(sc.pool.Quarantined(), func(h Quarantined) bool { return !sc.HasServer(h.Server) })
}

// Offers returns what the profile's servers offer besides tools.
func (sc *Scope) Offers() []Offer {
	offers := slices.DeleteFunc(sc.pool.Offers(), func(o Offer) bool { return !sc.HasServer(o.Server) })
	live := sc.pool.opts.Policies
	if live == nil {
		return offers
	}
	// A prompt or resource a rule forbids whatever the request is not
	// listed, as such a tool is not (its get or read is refused too).
	set := live.Current()
	forbids := func(action, kind, server, name string) bool {
		r := &rules.Request{Profile: sc.Profile(), Action: action, Kind: kind, Server: server, Tool: name, Name: name}
		return set.Static(r).Effect == rules.Forbid
	}
	for i, o := range offers {
		o.Prompts = slices.DeleteFunc(slices.Clone(o.Prompts), func(p *mcp.Prompt) bool { return p != nil && forbids("prompt", "Prompt", o.Server, p.Name) })
		o.Resources = slices.DeleteFunc(slices.Clone(o.Resources), func(r *mcp.Resource) bool { return r != nil && forbids("read", "Resource", o.Server, r.URI) })
		offers[i] = o
	}
	return offers
}

// Session runs f with a server's session (see [Pool.Session]), if the
// profile may use the server.
func (sc *Scope) Session(ctx context.Context, server string, f func(context.Context, *mcp.ClientSession) error) error {
	if !sc.HasServer(server) {
		return fmt.Errorf("server %s is not in profile %s", server, sc.Profile())
	}
	return sc.pool.Session(ctx, server, f)
}

// Subscribe subscribes to a resource of one of the profile's servers. The
// pool subscribes upstream once, however many scopes ask.
func (sc *Scope) Subscribe(ctx context.Context, server, uri string) error {
	if !sc.HasServer(server) {
		return fmt.Errorf("server %s is not in profile %s", server, sc.Profile())
	}
	return sc.pool.Subscribe(ctx, server, uri)
}

// Unsubscribe ends a subscription made with Subscribe.
func (sc *Scope) Unsubscribe(ctx context.Context, server, uri string) error {
	if !sc.HasServer(server) {
		return nil
	}
	return sc.pool.Unsubscribe(ctx, server, uri)
}

// SetLogLevel asks the profile's servers that log to send their log
// messages at level and above.
func (sc *Scope) SetLogLevel(ctx context.Context, level mcp.LoggingLevel) {
	sc.pool.setLogLevel(ctx, level, sc.HasServer)
}

// Notices returns the notices of the profile's servers (see [Notice]).
// A scope nobody reads loses notices rather than hold up the others.
func (sc *Scope) Notices() <-chan Notice { return sc.notices }

// Progress passes a client's progress on a server's request back to the
// server (see [Pool.Progress]).
func (sc *Scope) Progress(ctx context.Context, params *mcp.ProgressNotificationParams) bool {
	return sc.pool.Progress(ctx, params)
}

// Redact removes every server's secrets and toolshelf's own from s.
func (sc *Scope) Redact(s string) string { return sc.pool.Redact(s) }

// Secrets is the redactor of every secret the pool holds (see
// [Pool.Secrets]).
func (sc *Scope) Secrets() *Redactor { return sc.pool.Secrets() }

// Fixed returns a pool without servers whose catalog is cat: a catalog
// file or the built-in catalog, served for search only. Its tools can be
// listed and found; calling one is an error that says why (source names
// where the catalog came from: "the built-in catalog").
func Fixed(cat *catalog.Catalog, source string) *Pool {
	p := NewPool(nil, nil)
	p.fixed = source
	p.snap.Store(cat)
	return p
}

// noServers is the error for a call to a pool without servers.
func (p *Pool) noServers() error {
	return fmt.Errorf("toolshelf is serving %s, which has no servers to call; configure your MCP servers to call tools", p.fixed)
}

// noServer is the error for a server the pool does not have.
func (p *Pool) noServer(name string) error {
	if p.fixed != "" {
		return fmt.Errorf("toolshelf is serving %s, which has no servers", p.fixed)
	}
	return fmt.Errorf("no server %q", name)
}

// StartTimeout is the longest time any of the pool's servers has to start
// and list its tools: how long a request may wait for servers still
// connecting (DefaultTimeout for a pool without servers).
func (p *Pool) StartTimeout() time.Duration {
	var longest time.Duration
	for _, s := range p.list() {
		longest = max(longest, s.cfg.StartTimeout())
	}
	if longest == 0 {
		return config.DefaultTimeout
	}
	return longest
}
