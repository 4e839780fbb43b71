package gateway

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
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
}

// Handler serves MCP over streamable HTTP at /mcp, each upstream's state
// at /healthz, and Prometheus metrics at /metrics.
//
// The transport is stateless (every MCP revision, 2026-07-28 included, and
// any number of gateway replicas) unless the gateway activates tools per
// session, which needs sessions: then it is stateful, for clients on
// revisions before 2026-07-28, which are the ones activation is for.
func (s *Server) Handler(opts *HTTPOptions) http.Handler {
	if opts == nil {
		opts = &HTTPOptions{}
	}
	getServer := func(*http.Request) *mcp.Server { return s.shared }
	if s.opts.Activate {
		getServer = func(*http.Request) *mcp.Server {
			s.forgetClosed()
			return s.newMCPServer()
		}
	}
	mcpHandler := mcp.NewStreamableHTTPHandler(getServer, &mcp.StreamableHTTPOptions{
		Stateless:                    !s.opts.Activate,
		Logger:                       s.sdkLogger,
		MaxRequestBodyBytes:          MaxRequestBytes,
		PropagateRequestCancellation: true,
		SessionTimeout:               30 * time.Minute,
	})
	var h http.Handler = mcpHandler
	if !s.opts.Activate {
		h = withRequestContext(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/mcp", checkOrigin(bearer(opts.AuthToken, h)))
	mux.Handle("/metrics", bearer(opts.AuthToken, http.HandlerFunc(s.met.serve)))
	mux.HandleFunc("/healthz", s.healthz)
	return mux
}

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
		h.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), requestContextKey{}, r.Context())))
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
		scheme, got, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "Bearer") || subtle.ConstantTimeCompare([]byte(strings.TrimLeft(got, " ")), want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="toolshelf"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, r)
	})
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

// health is the /healthz document.
type health struct {
	Status  string            `json:"status"` // ok, or degraded when a server is not ready
	Tools   int               `json:"tools"`
	Mode    string            `json:"mode"`
	Servers []upstream.Status `json:"servers"`
}

func (s *Server) healthz(w http.ResponseWriter, r *http.Request) {
	snap := s.state.Load()
	h := health{Status: "ok", Tools: snap.Catalog.Len(), Mode: s.Mode(), Servers: s.up.Status()}
	if h.Servers == nil {
		h.Servers = []upstream.Status{}
	}
	for _, st := range h.Servers {
		if st.State != upstream.StateReady && st.State != upstream.StateDisabled {
			h.Status = "degraded"
		}
	}
	w.Header().Set("Content-Type", "application/json")
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(h)
}

// ServeStdio serves one client over stdin and stdout until the client
// disconnects or ctx is done.
func (s *Server) ServeStdio(ctx context.Context, t mcp.Transport) error {
	err := s.shared.Run(ctx, t)
	if errors.Is(err, context.Canceled) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}
