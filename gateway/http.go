package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/signin"
	"github.com/toolshelf/toolshelf/upstream"
)

// MaxRequestBytes bounds one HTTP request body. Tool arguments are small;
// a client sending more is broken or hostile.
const MaxRequestBytes = 4 << 20

// HTTPOptions configures [Server.Handler].
type HTTPOptions struct {
	// AuthToken, when set, is required as "Authorization: Bearer <token>"
	// on every request but /healthz.
	AuthToken string
	// AdminToken opens /metrics and /healthz's details (AuthToken when
	// empty). With neither, /metrics refuses everyone and /healthz says
	// only up or degraded: what they tell (servers' errors, tool counts,
	// traffic) is not for any process that reaches the listener.
	AdminToken string
	// Stateless serves without sessions: any number of gateway replicas
	// can answer a client, but servers cannot send it requests (sampling,
	// elicitation, roots), which need the session to answer on. Ignored
	// with Activate, whose tool lists are per session.
	Stateless bool
	// Tokens binds bearer tokens to the profiles they open (token →
	// profile name). A profile's path takes AuthToken or one of its own
	// tokens; a token of another profile is refused with 403. When some
	// profile has tokens, a path with neither (/mcp without AuthToken)
	// is closed: fail closed. Without any token it is open.
	Tokens map[string]string
	// Relay, when set, wraps each profile's MCP handler after the
	// request is authorized: a fleet's replicas send a request of a
	// session, or the answers to a call, that another replica holds to
	// that replica (fleet.Member.Handler).
	Relay func(http.Handler) http.Handler
	// People, when set, lets people open profiles with access tokens of
	// the team's identity provider, beside the static tokens.
	People *People
	// Vouch, when set, reports whether a request was sent on by another
	// replica of the fleet (fleet.Member.Vouched): such a request carries
	// no token, for the replica that received it checked the client's,
	// and it is served as the person that replica authenticated (nil for
	// a static token). An error is a request that claims so falsely.
	Vouch func(r *http.Request) (*identity.Person, bool, error)
}

// Handler serves the gateway over streamable HTTP at /mcp, each
// upstream's state at /healthz, and Prometheus metrics at /metrics. A
// [Host] serves several gateways, one per profile, the same way.
//
// Clients of revisions before MCP 2026-07-28 get sessions unless
// opts.Stateless: a server's request to a client (sampling, elicitation,
// roots) is sent on the client's session, and activation keeps a tool list
// per session. A client of 2026-07-28, which has no sessions, is served
// without one on the same path: its server requests are input-required
// rounds, and it is not activated for.
func (s *Server) Handler(opts *HTTPOptions) http.Handler {
	if opts == nil {
		opts = &HTTPOptions{}
	}
	return handler(s, nil, opts)
}

// handler serves main at /mcp and each of others at /mcp/<profile>.
func handler(main *Server, others []*Server, opts *HTTPOptions) http.Handler {
	mux := http.NewServeMux()
	relay := opts.relay()
	// One bound on large messages for every path: the go-sdk's decoding
	// of a message costs about 25 times its size (screen.go).
	large := make(chan struct{}, maxLargeMessages)
	mux.Handle("/mcp", main.frontDoor(opts, relay, large))
	for _, p := range others {
		mux.Handle("/mcp/"+p.Profile(), p.frontDoor(opts, relay, large))
	}
	if pp := opts.People; pp != nil {
		mux.Handle(metadataPrefix, pp.metadata("/mcp"))
		mux.Handle(metadataPrefix+"/mcp", pp.metadata("/mcp"))
		for _, p := range others {
			mux.Handle(metadataPrefix+"/mcp/"+p.Profile(), pp.metadata("/mcp/"+p.Profile()))
		}
	}
	serveRest(mux, main, opts)
	return mux
}

// relay is opts.Relay, or a handler's own self.
func (o *HTTPOptions) relay() func(http.Handler) http.Handler {
	if o.Relay == nil {
		return func(h http.Handler) http.Handler { return h }
	}
	return o.Relay
}

// serveRest serves what is not an MCP path: people's sign-ins to
// servers, /metrics and /healthz.
func serveRest(mux *http.ServeMux, main *Server, opts *HTTPOptions) {
	if pp := opts.People; pp != nil && pp.Flows != nil {
		// A person's sign-in link, the check of who opened it, and
		// the return: each goes (in a fleet) to the replica where
		// the sign-in waits, by its state.
		relay := pp.Relay
		if relay == nil {
			relay = func(h http.Handler) http.Handler { return h }
		}
		c := newConsent(pp, main.logger)
		mux.Handle(signin.BeginPath, relay(http.HandlerFunc(c.begin)))
		mux.Handle(ConfirmPath, relay(http.HandlerFunc(c.confirm)))
		mux.Handle(signin.CallbackPath, relay(c.callback(pp.Flows.Callback())))
		mux.Handle(SigninsPath, pp.signins())
	}
	// Every gateway of a host records into the host's one telemetry.
	admin := opts.admin()
	mux.Handle("/metrics", adminOnly(admin, main.tel.MetricsHandler()))
	mux.Handle("/healthz", main.healthz(admin))
	mux.Handle(UsagePath, main.usageHandler(opts))
}

// mcpHandler is the streamable HTTP transport of one gateway.
func (s *Server) mcpHandler(opts *HTTPOptions) http.Handler {
	// The SDK asks for a server on every request (for its protocol
	// versions), not only for a new session: with Activate the server of
	// a new session is made once, by capSessions, and carried in the
	// request's context.
	getServer := func(r *http.Request) *mcp.Server {
		if srv, ok := r.Context().Value(sessionServerKey{}).(*mcp.Server); ok {
			return srv
		}
		return s.shared.Load()
	}
	transport := func(stateless bool) http.Handler {
		return mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
			Stateless:                    stateless,
			Logger:                       s.sdkLogger,
			MaxRequestBodyBytes:          MaxRequestBytes,
			PropagateRequestCancellation: true,
			SessionTimeout:               s.opts.SessionIdle,
		})
	}
	// Tasks and call headers are MCP 2026-07-28's: served on the path
	// without sessions.
	stateless := checkCall(s.withTasks(withRequestContext(transport(true)), s.up.Profile()))
	if opts.Stateless && !s.opts.Activate {
		return stateless
	}
	// With sessions, a client cancels with notifications/cancelled;
	// the SDK gives handlers the context of the session's first
	// request, so requests cannot be bound to their HTTP requests.
	sessions := s.capSessions(transport(false))
	// Both eras on one path: a client of MCP 2026-07-28, which has no
	// sessions, is served statelessly (its server requests become
	// input-required rounds); an older client gets a session.
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Session-Id") == "" && sessionless(r.Header.Get("Mcp-Protocol-Version")) {
			stateless.ServeHTTP(w, r)
			return
		}
		sessions.ServeHTTP(w, r)
	})
}

// startsSession reports whether a request is an initialize, which starts
// a session; other requests without a session id (a newer client's
// discovery) are served statelessly. A body whose envelope cannot be
// read as the SDK reads it counts as one: it passes the cap on sessions.
func startsSession(r *http.Request) bool {
	e := envelopeOf(r)
	return e == nil || e.bad != "" || e.method == "initialize"
}

// sessionServerKey carries the server of a new session (Activate).
type sessionServerKey struct{}

// capSessions makes the server of a new session (a POST without a
// session id), or refuses it while MaxSessions are open: each costs a
// server of its own, and a client that opens sessions without end would
// take the memory.
func (s *Server) capSessions(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && startsSession(r) {
			if s.openSessions() >= s.opts.MaxSessions {
				s.forgetClosed()
			}
			if n := s.openSessions(); n >= s.opts.MaxSessions {
				s.met.refusedSession(r.Context())
				w.Header().Set("Retry-After", "60")
				http.Error(w, fmt.Sprintf("toolshelf: %d sessions are open, the most it serves (--max-sessions); try again when one ends", n), http.StatusServiceUnavailable)
				return
			}
			if s.opts.Activate {
				srv := s.newMCPServer()
				r = r.WithContext(context.WithValue(r.Context(), sessionServerKey{}, srv))
				// Once its session has started, a server whose session
				// has ended can go at once (forgetClosed).
				h.ServeHTTP(&onHeader{ResponseWriter: w, f: func() {
					if w.Header().Get("Mcp-Session-Id") != "" {
						s.mu.Lock()
						if x := s.sessions[srv]; x != nil {
							x.started = true
						}
						s.mu.Unlock()
					}
				}}, r)
				return
			}
			// Counted as the answer starts, before the client can go on
			// to open another: after ServeHTTP returned would leave a
			// moment in which a new session was not counted.
			h.ServeHTTP(&onHeader{ResponseWriter: w, f: func() {
				if id := w.Header().Get("Mcp-Session-Id"); id != "" {
					s.mu.Lock()
					s.initialized[id] = true
					s.mu.Unlock()
				}
			}}, r)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// onHeader calls f once, as the status is written.
type onHeader struct {
	http.ResponseWriter
	f    func()
	done bool
}

func (o *onHeader) WriteHeader(code int) {
	if !o.done {
		o.done = true
		o.f()
	}
	o.ResponseWriter.WriteHeader(code)
}

func (o *onHeader) Write(b []byte) (int, error) {
	if !o.done {
		o.WriteHeader(http.StatusOK)
	}
	return o.ResponseWriter.Write(b)
}

func (o *onHeader) Flush() { _ = http.NewResponseController(o.ResponseWriter).Flush() }

func (o *onHeader) Unwrap() http.ResponseWriter { return o.ResponseWriter }

// requestContextKey carries an HTTP request's context into the tool
// handlers it leads to.
type requestContextKey struct{}

// withRequestContext lets a tool call end when its HTTP request does. In
// stateless mode each request is a session of its own, but for MCP
// revisions before 2026-07-28 the SDK runs handlers on a context detached
// from the request (keeping its values): a client that disconnects would
// leave the upstream call running.
func withRequestContext(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx := context.WithValue(r.Context(), requestContextKey{}, r.Context())
		h.ServeHTTP(w, r.WithContext(context.WithValue(ctx, callerKey{}, callerOf(r))))
	})
}

// bindRequest returns a context that is also cancelled when the HTTP
// request that ctx came from ends.
func bindRequest(ctx context.Context) (context.Context, context.CancelFunc) {
	rc, ok := ctx.Value(requestContextKey{}).(context.Context)
	if !ok {
		return ctx, func() {}
	}
	ctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(rc, cancel)
	return ctx, func() { stop(); cancel() }
}

// bearer requires the token, compared in constant time. The scheme's
// name is case-insensitive (RFC 9110, 11.1): "bearer" is as good as
// "Bearer".
func bearer(token string, h http.Handler) http.Handler {
	if token == "" {
		return h
	}
	want := []byte(token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !validBearer(r, want) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolshelf"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// admin is the token of /metrics and /healthz's details.
func (o *HTTPOptions) admin() string {
	if o.AdminToken != "" {
		return o.AdminToken
	}
	return o.AuthToken
}

// adminOnly serves h to requests with the admin token; without a token
// set, to none.
func adminOnly(token string, h http.Handler) http.Handler {
	if token == "" {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolshelf"`)
			http.Error(w, "this route needs the admin token, and none is set (serve --auth-token-file)", http.StatusUnauthorized)
		})
	}
	return bearer(token, h)
}

// authorize lets a request to a profile's path through when it carries
// AuthToken or a token of that profile; a token of another profile gets
// 403, no token or an unknown one 401.
func (o *HTTPOptions) authorize(profile string, h http.Handler) http.Handler {
	var own [][]byte
	if o.AuthToken != "" {
		own = append(own, []byte(o.AuthToken))
	}
	others := map[string][]byte{} // profile → a token of it, for the 403
	var otherTokens [][]byte
	for tok, p := range o.Tokens {
		if p == profile {
			own = append(own, []byte(tok))
		} else {
			otherTokens = append(otherTokens, []byte(tok))
			others[string(tok)] = []byte(p)
		}
	}
	if len(own) == 0 && len(o.Tokens) == 0 && o.People == nil && o.Vouch == nil {
		return h
	}
	// When profiles carry tokens the operator meant the gateway to be
	// closed: a path no token opens stays closed rather than open to
	// anyone who can reach it (on loopback, any local process).
	refusal := "missing or wrong bearer token"
	if len(own) == 0 {
		refusal = fmt.Sprintf("profile %s is closed: the configuration's profiles have tokens, and this path needs one of its own or the admin token (--auth-token-file), which is not set", o.profileName(profile))
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o.Vouch != nil {
			p, ok, err := o.Vouch(r)
			switch {
			case err != nil:
				http.Error(w, "toolshelf: "+err.Error(), http.StatusForbidden)
				return
			case ok && p != nil:
				asPerson(p, w, vouch(r), h)
				return
			case ok:
				h.ServeHTTP(w, vouch(r))
				return
			}
		}
		if len(own) == 0 && len(o.Tokens) == 0 && o.People == nil {
			h.ServeHTTP(w, r) // an open gateway
			return
		}
		for _, t := range own {
			if validBearer(r, t) {
				h.ServeHTTP(w, r)
				return
			}
		}
		for _, t := range otherTokens {
			if validBearer(r, t) {
				http.Error(w, fmt.Sprintf("this token opens profile %s, not %s", others[string(t)], o.profileName(profile)), http.StatusForbidden)
				return
			}
		}
		if o.People != nil {
			o.People.personal(profile, w, r, h)
			return
		}
		w.Header().Set("WWW-Authenticate", `Bearer realm="toolshelf"`)
		http.Error(w, refusal, http.StatusUnauthorized)
	})
}

// Access says who may open a profile's path, for the start-up log.
func (o *HTTPOptions) Access(profile string) string {
	n := 0
	for _, p := range o.Tokens {
		if p == profile {
			n++
		}
	}
	if o.People != nil {
		people := "no person (the profile has no \"claims\")"
		if c := o.People.Claims[o.profileName(profile)]; len(c) > 0 {
			people = "people with " + identity.DescribeClaims(c)
		}
		switch {
		case o.AuthToken != "" && n > 0:
			return fmt.Sprintf("%s, its %d token(s) or the admin token", people, n)
		case o.AuthToken != "":
			return people + " or the admin token"
		case n > 0:
			return fmt.Sprintf("%s or its %d token(s)", people, n)
		}
		return people
	}
	switch {
	case o.AuthToken != "" && n > 0:
		return fmt.Sprintf("its %d token(s) or the admin token", n)
	case o.AuthToken != "":
		return "the admin token (--auth-token-file)"
	case n > 0:
		return fmt.Sprintf("its %d token(s)", n)
	case len(o.Tokens) > 0:
		return "no one: profiles have tokens and no admin token is set (--auth-token-file)"
	}
	return "anyone who can reach the address"
}

func (o *HTTPOptions) profileName(profile string) string {
	if profile == "" {
		return config.DefaultProfile
	}
	return profile
}

// validBearer reports whether a request carries the token.
func validBearer(r *http.Request, token []byte) bool {
	scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	return strings.EqualFold(scheme, "Bearer") && subtle.ConstantTimeCompare([]byte(strings.TrimLeft(got, " ")), token) == 1
}

// checkOrigin refuses requests from a browser page of another origin, as
// the MCP specification asks of HTTP servers (DNS rebinding): a request
// with an Origin header is served only when the origin's host is the host
// the request was sent to, or both are loopback.
func checkOrigin(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		origin := r.Header.Get("Origin")
		if origin != "" && !sameOrigin(origin, r.Host) {
			http.Error(w, "cross-origin request refused", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

func sameOrigin(origin, host string) bool {
	u, err := url.Parse(origin)
	if err != nil || u.Host == "" {
		return false
	}
	oh, reqHost := u.Hostname(), host
	if h, _, err := net.SplitHostPort(host); err == nil {
		reqHost = h
	}
	reqHost = strings.Trim(reqHost, "[]")
	if strings.EqualFold(u.Host, host) {
		return true
	}
	return isLoopbackHost(oh) && isLoopbackHost(reqHost)
}

func isLoopbackHost(h string) bool {
	if strings.EqualFold(h, "localhost") {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// health is the /healthz document. Without the token (when one is set)
// it says only whether the gateway is up and how many servers are ready:
// a server's state and error can name hosts, users and what a broken
// server printed.
type health struct {
	// Status is ok, or degraded when a server is not ready or the
	// configuration's last change was refused.
	Status string `json:"status"`
	Tools  int    `json:"tools"`
	Mode   string `json:"mode,omitempty"`
	Ready  int    `json:"serversReady"`
	Total  int    `json:"serversTotal"`
	// Quarantined counts the tools the lock file keeps out.
	Quarantined int               `json:"quarantined,omitempty"`
	Servers     []upstream.Status `json:"servers,omitempty"`
	// ConfigError is why the configuration's last change was not applied
	// (with its file and line): what is served is the file as it was.
	ConfigError string `json:"configError,omitempty"`
}

func (s *Server) healthz(token string) http.Handler {
	authorized := func(r *http.Request) bool { return token != "" && validBearer(r, []byte(token)) }
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		snap := s.state.Load()
		servers := s.up.Status()
		h := health{Status: "ok", Tools: snap.Catalog.Len(), Total: len(servers)}
		for _, st := range servers {
			switch st.State {
			case upstream.StateReady:
				h.Ready++
			case upstream.StateDisabled:
			default:
				h.Status = "degraded"
			}
		}
		problem := s.up.ConfigProblem()
		if problem != "" {
			h.Status = "degraded"
		}
		if authorized(r) {
			h.Mode, h.Servers, h.ConfigError = s.Mode(), servers, problem
			for _, st := range servers {
				h.Quarantined += st.Quarantined
			}
			if h.Servers == nil {
				h.Servers = []upstream.Status{}
			}
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(h)
	})
}

// ServeStdio serves one client over stdin and stdout until the client
// disconnects or ctx is done.
func (s *Server) ServeStdio(ctx context.Context, t mcp.Transport) error {
	if st, ok := t.(*stdioTransport); ok {
		answer := func(e *envelope) []byte {
			res, rpcErr, ok := s.answerExtension(ctx, e)
			if !ok {
				return nil
			}
			return rpcResponse(e.id, res, rpcErr)
		}
		st.answers.Store(&answer)
	}
	err := s.shared.Load().Run(ctx, t)
	if errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}
