package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/signin"
	"golang.org/x/oauth2"
)

// A server marked "signin": "per-person" or "exchange" is called on a
// connection of each person's own, carrying that person's credentials:
// a remote server that binds its sessions to the user who opened them
// (as the go-sdk's does) sees each person as themselves, and one person's
// token is never on another's requests. The server's shared connection
// (the gateway's own sign-in) only lists its tools.

// maxPersonConns bounds a server's connections of people at once; the
// least recently used goes first.
const maxPersonConns = 256

// personIdle is how long a person's connection is kept unused.
const personIdle = 10 * time.Minute

// people are a server's connections of people, by subject.
type people struct {
	mu sync.Mutex
	m  map[string]*personConn
}

type personConn struct {
	ready chan struct{} // closed when dialing has ended
	c     *conn
	err   error
	used  time.Time
	// signins is the sign-ins' change count (signin.Store.Changes) when
	// the person's sign-in was last seen: a moved count is looked at
	// again before the connection carries another call.
	signins uint64
	// person is the latest person (their latest token) who used the
	// connection: an exchange is made with it.
	person atomic.Pointer[identity.Person]
}

// A SignInError is a call that needs the person to sign in to the server
// first: the person opens URL, and the call can be made again once Done
// is closed.
type SignInError struct {
	Server string
	URL    string
	Flow   *signin.Flow
}

func (e *SignInError) Error() string {
	return fmt.Sprintf("server %s takes each person's own sign-in, and you have not signed in to it yet: open %s, sign in, then call again", e.Server, e.URL)
}

// personConn returns the connection of the person ctx carries, dialing
// it on first use.
func (s *server) personConn(ctx context.Context) (*conn, error) {
	p := identity.PersonOf(ctx)
	if p == nil {
		return nil, fmt.Errorf("server %s takes each person's own credentials (\"signin\": %q), and this caller is no signed-in person (a static token, or stdio): open the gateway with an access token of the team's identity provider", s.cfg.Name, s.cfg.Signin)
	}
	now := time.Now()
	s.people.mu.Lock()
	if s.people.m == nil {
		s.people.m = map[string]*personConn{}
	}
	s.sweepLocked(now)
	pc := s.people.m[p.Subject]
	if pc != nil {
		select {
		case <-pc.ready:
			if pc.err != nil || pc.c.dead() {
				delete(s.people.m, p.Subject)
				pc = nil
			}
		default:
		}
	}
	dial := pc == nil
	if dial {
		pc = &personConn{ready: make(chan struct{}), signins: s.signins()}
		s.people.m[p.Subject] = pc
	}
	pc.used = now
	pc.person.Store(p)
	s.people.mu.Unlock()
	if !dial && s.signedOut(pc, p.Subject) {
		// Signed out since the connection was opened (here or on
		// another replica): it carries no more calls, and the next
		// dial asks the person to sign in.
		s.dropPerson(p.Subject)
		return s.personConn(ctx)
	}

	if dial {
		pc.c, pc.err = s.dialPerson(ctx, pc, p)
		close(pc.ready)
	}
	select {
	case <-pc.ready:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	if pc.err != nil {
		s.people.mu.Lock()
		if s.people.m[p.Subject] == pc {
			delete(s.people.m, p.Subject)
		}
		s.people.mu.Unlock()
		return nil, s.signInFirst(ctx, p, pc.err)
	}
	return pc.c, nil
}

// signins is the sign-ins' change count, 0 where the server keeps none
// of people.
func (s *server) signins() uint64 {
	if s.cfg.Signin != config.SigninPerPerson || s.pool.opts.Tokens == nil {
		return 0
	}
	return s.pool.opts.Tokens.Changes()
}

// signedOut reports whether the person's sign-in of the server is gone
// since pc was last checked. A store that cannot say is taken as gone:
// the call then asks the store again from a new dial, which says why.
func (s *server) signedOut(pc *personConn, subject string) bool {
	now := s.signins()
	s.people.mu.Lock()
	seen := pc.signins
	s.people.mu.Unlock()
	if now == seen {
		return false
	}
	rec, err := s.pool.opts.Tokens.GetKey(signin.Key{Server: s.cfg.Name, Resource: s.cfg.URL, Subject: subject})
	if err != nil || rec == nil {
		return true
	}
	s.people.mu.Lock()
	pc.signins = now
	s.people.mu.Unlock()
	return false
}

// sweepLocked closes the connections unused for personIdle, and the
// least recently used beyond maxPersonConns.
func (s *server) sweepLocked(now time.Time) {
	for len(s.people.m) >= maxPersonConns {
		var oldest string
		for sub, pc := range s.people.m {
			if oldest == "" || pc.used.Before(s.people.m[oldest].used) {
				oldest = sub
			}
		}
		s.dropLocked(oldest)
	}
	for sub, pc := range s.people.m {
		if now.Sub(pc.used) > personIdle {
			s.dropLocked(sub)
		}
	}
}

func (s *server) dropLocked(subject string) {
	pc := s.people.m[subject]
	delete(s.people.m, subject)
	go func() {
		<-pc.ready
		if pc.c != nil {
			pc.c.close()
		}
	}()
}

// dropPerson closes a person's connection: their token was refused.
func (s *server) dropPerson(subject string) {
	s.people.mu.Lock()
	defer s.people.mu.Unlock()
	if s.people.m[subject] != nil {
		s.dropLocked(subject)
	}
}

// closePeople closes every person's connection: the server stops.
func (s *server) closePeople() {
	s.people.mu.Lock()
	defer s.people.mu.Unlock()
	for sub := range s.people.m {
		s.dropLocked(sub)
	}
}

// dialPerson connects to the server with the person's credentials.
func (s *server) dialPerson(ctx context.Context, pc *personConn, p *identity.Person) (*conn, error) {
	cfg := s.cfg
	// A configured Authorization header is the gateway's own credential
	// (for listing): a person's requests carry theirs alone.
	cfg.Headers = maps.Clone(cfg.Headers)
	maps.DeleteFunc(cfg.Headers, func(k, _ string) bool { return strings.EqualFold(k, "Authorization") })
	switch cfg.Signin {
	case config.SigninPerPerson:
		if s.pool.opts.Tokens == nil {
			return nil, fmt.Errorf("server %s takes each person's own sign-in, and this gateway keeps no sign-ins", cfg.Name)
		}
		cfg.oauth = s.pool.opts.Tokens.HandlerOf(signin.Key{Server: cfg.Name, Resource: cfg.URL, Subject: p.Subject}, nil)
	case config.SigninExchange:
		if s.pool.opts.Identity == nil {
			return nil, fmt.Errorf(`server %s takes a token exchanged at the team's identity provider, and the configuration has no "identity"`, cfg.Name)
		}
		cfg.oauth = &exchanging{v: s.pool.opts.Identity, pc: pc, audience: cfg.exchangeAudience(), server: cfg.Name}
	}
	dctx, cancel := context.WithTimeout(ctx, cfg.StartTimeout())
	defer cancel()
	c, err := dial(dctx, &cfg, s.client, &s.flights, s.logger)
	if err != nil {
		c.close()
		return nil, err
	}
	return c, nil
}

func (cfg *serverConfig) exchangeAudience() string {
	if cfg.Audience != "" {
		return cfg.Audience
	}
	return cfg.URL
}

// signInFirst turns a person's refused sign-in into a SignInError with
// the URL that signs them in, when the gateway can sign people in.
func (s *server) signInFirst(ctx context.Context, p *identity.Person, err error) error {
	var na *signin.NeedsAuthError
	flows := s.pool.opts.Flows
	redirect := signin.RedirectOf(ctx)
	if !errors.As(err, &na) || s.cfg.Signin != config.SigninPerPerson || flows == nil || redirect == "" {
		return err
	}
	fl, ferr := flows.Begin(ctx, signin.Key{Server: s.cfg.Name, Resource: s.cfg.URL, Subject: p.Subject}, redirect, s.cfg.Headers)
	if ferr != nil {
		return fmt.Errorf("%w; starting the sign-in failed: %v", err, ferr)
	}
	return &SignInError{Server: s.cfg.Name, URL: fl.URL, Flow: fl}
}

// exchanging is the OAuth handler of a person's connection to a server
// marked "signin": "exchange": each request carries a token the provider
// gave for the server's audience in exchange for the person's latest
// token.
type exchanging struct {
	v        *identity.Verifier
	pc       *personConn
	audience string
	server   string
}

func (h *exchanging) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	tok, err := h.v.Exchange(ctx, h.pc.person.Load(), h.audience)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", h.server, err)
	}
	return oauth2.StaticTokenSource(tok), nil
}

func (h *exchanging) Authorize(_ context.Context, _ *http.Request, resp *http.Response) error {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	h.v.ForgetExchange(h.pc.person.Load(), h.audience)
	return fmt.Errorf("server %s refused the token exchanged for it (HTTP %d)", h.server, resp.StatusCode)
}
