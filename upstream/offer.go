//lint:file-ignore SA1019 sampling, roots and logging are deprecated by MCP 2026-07-28 (SEP-2577) but clients and servers on earlier revisions use them, and toolshelf relays them on purpose during the deprecation window.

package upstream

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Offer is what a server offers besides tools: its prompts, resources and
// resource templates as it listed them, and what its capabilities say it
// accepts. Like tools, offers are cached on disk and kept while the
// server restarts.
type Offer struct {
	Server string `json:"-"`
	// Unprefixed: the server's tools keep their own names ("prefix":
	// false), and so do its apps' ui:// URIs.
	Unprefixed bool                    `json:"-"`
	Prompts    []*mcp.Prompt           `json:"prompts,omitempty"`
	Resources  []*mcp.Resource         `json:"resources,omitempty"`
	Templates  []*mcp.ResourceTemplate `json:"resourceTemplates,omitempty"`
	// Subscribe: resources/subscribe; Complete: completion/complete;
	// Logging: logging/setLevel.
	Subscribe bool `json:"subscribe,omitempty"`
	Complete  bool `json:"complete,omitempty"`
	Logging   bool `json:"logging,omitempty"`
	// Apps are the server's apps (MCP Apps' ui:// resources) as read
	// when its tools were listed, by URI; the pool judges them against
	// the lock file and serves them (Scope.App).
	Apps map[string]*mcp.ReadResourceResult `json:"apps,omitempty"`
	// Skills are the server's skills (skills.go) as it listed them; the
	// pool judges them against the lock file and serves the trusted ones
	// (Scope.Skills).
	Skills []Skill `json:"skills,omitempty"`
	// SkillDirectories: the server reads its skills' folders
	// (resources/directory/read, the skills extension's directoryRead).
	SkillDirectories bool `json:"skillDirectories,omitempty"`
	// OffersSkills: the server declares the skills extension. Its
	// skill:// resources, and every file under the root of a skill it
	// listed (SkillRoots, served or left out), are served as skills or
	// not at all: a skill left out (a wrong digest, held for a person)
	// is not read as a resource either.
	OffersSkills bool     `json:"offersSkills,omitempty"`
	SkillRoots   []string `json:"skillRoots,omitempty"`
}

func (o *Offer) empty() bool {
	return len(o.Prompts) == 0 && len(o.Resources) == 0 && len(o.Templates) == 0 && !o.Complete && len(o.Skills) == 0
}

// maxOffered bounds the prompts, resources or templates kept of one
// server: a server that pages without end must not take the memory.
const maxOffered = 10_000

// listOffer lists what the connection's server offers besides tools, as
// its capabilities announce. A listing that fails leaves that part empty
// and is reported in err; the rest is kept.
func (c *conn) listOffer(ctx context.Context) (Offer, error) {
	var o Offer
	caps := c.caps
	if caps == nil {
		return o, nil
	}
	var errs []error
	if caps.Prompts != nil {
		o.Prompts, errs = collect(c.session.Prompts(ctx, nil), "prompts/list", errs)
	}
	if caps.Resources != nil {
		o.Resources, errs = collect(c.session.Resources(ctx, nil), "resources/list", errs)
		o.Templates, errs = collect(c.session.ResourceTemplates(ctx, nil), "resources/templates/list", errs)
		o.Subscribe = caps.Resources.Subscribe
	}
	if offersSkills(caps) {
		var err error
		o.OffersSkills = true
		if o.Skills, o.SkillRoots, err = c.listSkills(ctx); err != nil {
			errs = append(errs, err)
		}
		o.SkillDirectories = readsSkillDirectories(caps)
	}
	o.Complete = caps.Completions != nil
	o.Logging = caps.Logging != nil
	return o, errors.Join(errs...)
}

// collect reads a paged listing, up to maxOffered items.
func collect[T any](seq func(func(T, error) bool), method string, errs []error) ([]T, []error) {
	var out []T
	for v, err := range seq {
		if err != nil {
			if rpc := (*jsonrpc.Error)(nil); errors.As(err, &rpc) && rpc.Code == jsonrpc.CodeMethodNotFound {
				return out, errs // announced but not served: nothing offered
			}
			return out, append(errs, fmt.Errorf("%s: %w", method, err))
		}
		if len(out) == maxOffered {
			return out, append(errs, fmt.Errorf("%s: more than %d items; the rest are left out", method, maxOffered))
		}
		out = append(out, v)
	}
	return out, errs
}

// offers tracks the offers of a pool's servers and the resource
// subscriptions made through it.
type offerState struct {
	mu       sync.Mutex
	offer    Offer
	subs     map[string]int // URIs subscribed to, as the server names them, and by how many
	logLevel mcp.LoggingLevel
}

// Offers returns what every server offers besides tools, sorted by
// server name; servers that offer nothing are left out.
func (p *Pool) Offers() []Offer {
	var out []Offer
	for _, s := range p.list() {
		s.offers.mu.Lock()
		o := s.offers.offer
		s.offers.mu.Unlock()
		if !o.empty() {
			o.Server, o.Unprefixed = s.cfg.Name, s.cfg.NoPrefix
			out = append(out, o)
		}
	}
	return out
}

// setOffer replaces a server's offer and publishes it.
func (s *server) setOffer(o Offer) {
	s.offers.mu.Lock()
	s.offers.offer = o
	s.offers.mu.Unlock()
	s.pool.publish()
}

// Session runs f with the named server's live session, as a request made
// for the client WithClient put in ctx, waiting for the server as Call
// does. The error f returns is passed on with secrets removed.
func (p *Pool) Session(ctx context.Context, server string, f func(context.Context, *mcp.ClientSession) error) error {
	s, c, err := p.ready(ctx, server)
	if err != nil {
		return err
	}
	_, end := s.flights.start(ctx)
	defer end()
	if err := f(ctx, c.session); err != nil {
		if ctx.Err() == nil {
			err = c.explain(err)
		}
		return &redactedError{s.redactor().Redact(err.Error()), err}
	}
	return nil
}

// ready returns a server and its connection, waiting for a server that is
// starting, up to its timeout.
func (p *Pool) ready(ctx context.Context, server string) (*server, *conn, error) {
	s := p.server(server)
	if s == nil {
		return nil, nil, p.noServer(server)
	}
	c, err := s.waitReady(ctx)
	return s, c, err
}

// Subscribe subscribes to a resource of a server; the server's updates of
// it come as Notices. Subscriptions are counted: the server is asked
// once, however many scopes (profiles' gateways) subscribe, and again
// whenever it reconnects, until the last one unsubscribes.
func (p *Pool) Subscribe(ctx context.Context, server, uri string) error {
	s := p.server(server)
	if s == nil {
		return p.noServer(server)
	}
	s.offers.mu.Lock()
	if s.offers.subs == nil {
		s.offers.subs = make(map[string]int)
	}
	s.offers.subs[uri]++
	first := s.offers.subs[uri] == 1
	s.offers.mu.Unlock()
	if !first {
		return nil
	}
	err := p.Session(ctx, server, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri})
	})
	if err != nil {
		s.release(uri)
	}
	return err
}

// Unsubscribe ends a subscription made with Subscribe; the server is told
// when the last subscriber leaves.
func (p *Pool) Unsubscribe(ctx context.Context, server, uri string) error {
	s := p.server(server)
	if s == nil {
		return p.noServer(server)
	}
	if !s.release(uri) {
		return nil
	}
	return p.Session(ctx, server, func(ctx context.Context, cs *mcp.ClientSession) error {
		return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
}

// release counts one subscriber of uri fewer and reports whether it was
// the last.
func (s *server) release(uri string) bool {
	s.offers.mu.Lock()
	defer s.offers.mu.Unlock()
	if s.offers.subs[uri] == 0 {
		return false
	}
	s.offers.subs[uri]--
	if s.offers.subs[uri] > 0 {
		return false
	}
	delete(s.offers.subs, uri)
	return true
}

// setLogLevel asks the servers keep reports true for (all when nil) that
// log to send their log messages at level and above, now and whenever
// one connects. A failure is logged.
func (p *Pool) setLogLevel(ctx context.Context, level mcp.LoggingLevel, keep func(string) bool) {
	for _, s := range p.list() {
		if keep != nil && !keep(s.cfg.Name) {
			continue
		}
		s.offers.mu.Lock()
		s.offers.logLevel = level
		logs := s.offers.offer.Logging
		s.offers.mu.Unlock()
		s.mu.Lock()
		c := s.conn
		s.mu.Unlock()
		if logs && c != nil && !c.dead() {
			if err := c.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
				s.logger.Warn("logging/setLevel failed", "error", s.redactor().Redact(err.Error()))
			}
		}
	}
}

// restore makes a new connection what the last one was: subscribed to
// the same resources and logging at the same level.
func (s *server) restore(ctx context.Context, c *conn) {
	s.offers.mu.Lock()
	subs := slices.Sorted(func(yield func(string) bool) {
		for u := range s.offers.subs {
			if !yield(u) {
				return
			}
		}
	})
	level := s.offers.logLevel
	s.offers.mu.Unlock()
	if level != "" && c.caps != nil && c.caps.Logging != nil {
		if err := c.session.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			s.logger.Warn("logging/setLevel failed", "error", s.redactor().Redact(err.Error()))
		}
	}
	for _, u := range subs {
		if err := c.session.Subscribe(ctx, &mcp.SubscribeParams{URI: u}); err != nil {
			s.logger.Warn("could not subscribe again after reconnecting", "uri", u, "error", s.redactor().Redact(err.Error()))
		}
	}
}

// notice passes a Notice to every scope that shows its server; a scope
// whose queue is full loses it, and the loss is counted.
//
// A notice reaches only the scopes whose profile may use its server. A
// log message the server sent while no single request was in flight on it
// may carry any client's data (what a call was given, logged after it
// returned), so it reaches a profile only if the server is that profile's
// alone; the unscoped view, which sees every server, gets it too. A
// resource update reaches only the sessions subscribed to the resource.
// (docs/design.md, "What a server sends to which client".)
func (p *Pool) notice(n Notice) {
	p.scopesMu.Lock()
	defer p.scopesMu.Unlock()
	shared := false
	if n.Log != nil {
		profiles := 0
		for _, sc := range p.scopes {
			if sc.profile.Load() != nil && sc.HasServer(n.Server) {
				profiles++
			}
		}
		shared = profiles > 1
	}
	for _, sc := range p.scopes {
		if !sc.HasServer(n.Server) || shared && sc.profile.Load() != nil {
			continue
		}
		select {
		case sc.notices <- n:
		default:
			if d := p.dropped.Add(1); d&(d-1) == 0 { // log at 1, 2, 4, 8, ...
				p.logger.Warn("server notices dropped: nobody reads them fast enough", "dropped", d)
			}
		}
	}
}
