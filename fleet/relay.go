package fleet

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"time"
)

const (
	sessionHeader = "Mcp-Session-Id"
	// forwardedHeader marks a request one replica sent on to another:
	// the receiver serves it from what it holds and sends it nowhere
	// else. A client that sets it only loses the forwarding.
	forwardedHeader = "Toolshelf-Forwarded"
	// maxBody is the most of a request read to route it; larger ones
	// are served here (and refused by the gateway, whose bound is lower).
	maxBody = 4<<20 + 1
)

// Handler serves one MCP path of this replica (next) as a member of the
// fleet: a request of a session another replica holds goes to that
// replica, a session whose replica is gone is taken over, and the answers
// to a call another replica parked go to that replica.
func (m *Member) Handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A request another replica sent on is served from what this one
		// holds, and sent nowhere else; one that only says so is refused.
		_, forwarded, err := m.Vouched(r)
		if err != nil {
			m.logger.Warn("fleet: refused a request marked as sent on by a replica", "error", err, "client", r.RemoteAddr)
			http.Error(w, "toolshelf: "+err.Error(), http.StatusForbidden)
			return
		}
		clearFleetHeaders(r)
		body, tooLarge := readBody(r)
		if tooLarge {
			// Refused here, wherever the session is: sent on, a body the
			// holder stops reading midway fails the forward, which must
			// not be taken for the holder being gone.
			http.Error(w, fmt.Sprintf("toolshelf: a request body is limited to %d bytes", maxBody-1), http.StatusRequestEntityTooLarge)
			return
		}
		session := r.Header.Get(sessionHeader)
		if session == "" {
			m.serveNew(w, r, body, forwarded, next)
			return
		}
		if local, ok := m.local(r.Context(), r.URL.Path, session); ok {
			m.serveAs(w, r, session, local, next)
			return
		}
		if forwarded {
			// Sent here as the session's holder: what this replica
			// answers is the answer.
			m.served(r, session, serve(w, r, next))
			return
		}
		miss := &missWriter{w: w, h: http.Header{}}
		next.ServeHTTP(miss, r)
		if !miss.missed {
			m.served(r, session, miss.code)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.elsewhere(w, r, body, session, next)
	})
}

// clearFleetHeaders removes what a forwarding replica added, once read.
func clearFleetHeaders(r *http.Request) {
	for _, h := range []string{forwardedHeader, signatureHeader, principalHeader, checkedHeader} {
		r.Header.Del(h)
	}
}

// readBody reads a POST's body for routing, and puts it back; tooLarge
// reports one over maxBody-1 bytes.
func readBody(r *http.Request) (body []byte, tooLarge bool) {
	if r.Method != http.MethodPost || r.Body == nil {
		return nil, false
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody))
	r.Body = io.NopCloser(io.MultiReader(bytes.NewReader(body), r.Body))
	if len(body) >= maxBody {
		return nil, true
	}
	if err != nil {
		return nil, false
	}
	return body, false
}

// message is what routing needs of a JSON-RPC request.
type message struct {
	Method string `json:"method"`
	Params struct {
		RequestState string `json:"requestState"`
	} `json:"params"`
}

// serveNew serves a request without a session: an initialize, whose new
// session is recorded in the store; the answers to a call parked by
// another replica, sent there; anything else, here.
func (m *Member) serveNew(w http.ResponseWriter, r *http.Request, body []byte, forwarded bool, next http.Handler) {
	var msg message
	if body == nil || json.Unmarshal(body, &msg) != nil {
		next.ServeHTTP(w, r)
		return
	}
	if state := msg.Params.RequestState; msg.Method == "tools/call" && state != "" && !forwarded {
		if id, _, ok := strings.Cut(state, "."); ok && id != m.id {
			if rep, ok, err := m.replicaByID(r.Context(), id); err == nil && ok {
				if m.forward(w, r, body, rep) == nil {
					return
				}
			}
			// The replica holding the call is gone: the gateway here says
			// that the call has ended.
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
	}
	if msg.Method == "initialize" {
		// The new session is in the store before the client learns its
		// id, so that any replica can find it from the next request.
		start := &hooked{ResponseWriter: w}
		start.before = func(code int) {
			if id := start.Header().Get(sessionHeader); id != "" && code == http.StatusOK {
				ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 5*time.Second)
				defer cancel()
				if err := m.record(ctx, id, r.URL.Path, body); err != nil {
					m.logger.Warn("fleet: a new session is not in the store; only this replica can serve it", "error", err)
				}
			}
		}
		w = start
	}
	next.ServeHTTP(w, r)
}

// local returns this replica's id of a session of path it took over. A
// session is its path's: the same id on another profile's path is no
// session there.
// A session being taken over here is waited for: a request that arrives
// while it starts again (the client's other requests, sent here or on by
// another replica) is served by it, not told it does not exist.
func (m *Member) local(ctx context.Context, path, session string) (string, bool) {
	k := adoptedKey{path, session}
	m.mu.Lock()
	id, ok := m.adopted[k]
	starting := m.restoring[k]
	m.mu.Unlock()
	if ok || starting == nil {
		return id, ok
	}
	select {
	case <-starting:
	case <-ctx.Done():
		return "", false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	id, ok = m.adopted[k]
	return id, ok
}

// startRestore marks a session as being taken over here; it returns
// false when it already is (by another request).
func (m *Member) startRestore(k adoptedKey) (done func(), ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.restoring[k] != nil {
		return nil, false
	}
	ch := make(chan struct{})
	m.restoring[k] = ch
	return func() {
		m.mu.Lock()
		delete(m.restoring, k)
		m.mu.Unlock()
		close(ch)
	}, true
}

// adoptedKey names a session taken over: its path and the client's id.
type adoptedKey struct{ path, session string }

// serveAs serves a request of a session taken over, under the session's
// id here.
func (m *Member) serveAs(w http.ResponseWriter, r *http.Request, session, local string, next http.Handler) {
	r.Header.Set(sessionHeader, local)
	// The client keeps its own id for the session.
	rename := &hooked{ResponseWriter: w}
	rename.before = func(int) {
		if rename.Header().Get(sessionHeader) == local {
			rename.Header().Set(sessionHeader, session)
		}
	}
	code := serve(rename, r, next)
	if code == http.StatusNotFound {
		// Ended here too (idle, or closed).
		m.mu.Lock()
		delete(m.adopted, adoptedKey{r.URL.Path, session})
		m.mu.Unlock()
	}
	m.served(r, session, code)
}

// served notes a request of a session this replica holds.
func (m *Member) served(r *http.Request, session string, code int) {
	switch {
	case r.Method == http.MethodDelete && code < 300:
		m.forget(context.WithoutCancel(r.Context()), session)
	case code < 300:
		m.touch(session)
	}
}

// elsewhere serves a request of a session this replica does not hold:
// by the replica that holds it, or, when that one is gone, here, after
// taking the session over.
func (m *Member) elsewhere(w http.ResponseWriter, r *http.Request, body []byte, session string, next http.Handler) {
	ctx := r.Context()
	for range 3 {
		// Taken over here meanwhile (by another request of the client).
		if local, ok := m.local(ctx, r.URL.Path, session); ok {
			m.serveAs(w, r, session, local, next)
			return
		}
		holder, ok, err := m.holder(ctx, session)
		if err != nil {
			m.logger.Warn("fleet: the store cannot be reached to find a session's replica", "error", err)
			http.Error(w, "toolshelf: this session is held by another replica, and the fleet's store cannot be reached to find it", http.StatusServiceUnavailable)
			return
		}
		if !ok || holder.id == m.id || holder.path != r.URL.Path {
			// Unknown, ended here, or a session of another profile's
			// path, which this path must not serve or take over.
			http.Error(w, "session not found", http.StatusNotFound)
			return
		}
		if holder.alive {
			err := m.forward(w, r, body, holder)
			if err == nil {
				return
			}
			// A holder whose heartbeat is fresh keeps its session,
			// whatever went wrong on the way: taking it over would leave
			// two replicas holding it. It is taken over once it stops
			// beating.
			m.logger.Warn("fleet: a session's replica did not serve a request sent on to it", "replica", holder.id, "error", err)
			if !errors.Is(err, errUnreached) {
				http.Error(w, "toolshelf: the replica holding this session failed while serving this request, and may have acted on it; the session goes on (taken over once that replica is silent, if it is gone), and the request may be sent again", http.StatusBadGateway)
				return
			}
			// Not reached: killed, most likely. Its heartbeat goes stale
			// within gone; the request waits for that, then the session
			// is taken over (or found with whoever took it first).
			if !m.waitGone(ctx, session, holder.id) {
				w.Header().Set("Retry-After", strconv.Itoa(int(gone.Seconds())))
				http.Error(w, "toolshelf: the replica holding this session cannot be reached, yet it still beats; try again shortly", http.StatusServiceUnavailable)
				return
			}
			continue
		}
		done, ok := m.startRestore(adoptedKey{r.URL.Path, session})
		if !ok {
			continue // another request is taking it over here: served by it above
		}
		initialize, activated, ok, err := m.claim(ctx, session, r.URL.Path, holder.id)
		if err != nil {
			done()
			http.Error(w, "toolshelf: this session's replica is gone, and the fleet's store cannot be reached to take it over", http.StatusServiceUnavailable)
			return
		}
		if !ok {
			done()
			continue // another replica took it over first: find that one
		}
		local, err := m.restore(r, initialize, next)
		if err != nil {
			done()
			m.logger.Warn("fleet: a session could not be started again here", "error", err)
			http.Error(w, fmt.Sprintf("toolshelf: this session's replica is gone, and starting the session again failed: %v", err), http.StatusBadGateway)
			return
		}
		m.mu.Lock()
		m.adopted[adoptedKey{r.URL.Path, session}] = local
		react := m.react
		m.mu.Unlock()
		done()
		if len(activated) > 0 && react != nil {
			react(r.URL.Path, local, activated)
		}
		m.logger.Info("fleet: took over a session of a replica that is gone", "replica", holder.id)
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.serveAs(w, r, session, local, next)
		return
	}
	http.Error(w, "toolshelf: this session moved between replicas while it was looked for; try again", http.StatusServiceUnavailable)
}

// waitGone waits until the replica holding a session (by id) is no
// longer alive in the store, or holds it no longer; false when it still
// beats after gone and a beat more, or ctx ends.
func (m *Member) waitGone(ctx context.Context, session, id string) bool {
	deadline := time.NewTimer(gone + Beat)
	defer deadline.Stop()
	tick := time.NewTicker(Beat / 4)
	defer tick.Stop()
	for {
		h, ok, err := m.holder(ctx, session)
		if err == nil && (!ok || h.id != id || !h.alive) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-deadline.C:
			return false
		case <-tick.C:
		}
	}
}

// errUnreached is a forward's error when the other replica could not be
// connected to, so it never saw the request.
var errUnreached = errors.New("the replica could not be reached")

// forward sends a request to the replica to and streams its answer
// back, signed for that replica alone. When it fails before any answer,
// nothing is written.
func (m *Member) forward(w http.ResponseWriter, r *http.Request, body []byte, to replica) error {
	target, err := url.Parse(to.address)
	if err != nil || target.Host == "" {
		return fmt.Errorf("%w: address %q", errUnreached, to.address)
	}
	principal, err := m.sealedPrincipal(r.Context())
	if err != nil {
		return err
	}
	var failed error
	proxy := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			m.sign(pr.Out, body, principal, to.id)
		},
		Transport:     m.relay,
		FlushInterval: -1, // event streams as they come
		ErrorHandler: func(_ http.ResponseWriter, _ *http.Request, err error) {
			var op *net.OpError
			if errors.As(err, &op) && op.Op == "dial" {
				err = fmt.Errorf("%w: %v", errUnreached, err)
			}
			failed = err
		},
	}
	if body != nil {
		r.Body = io.NopCloser(bytes.NewReader(body))
	}
	proxy.ServeHTTP(w, r)
	return failed
}

// SendTo sends a request (whose body is body) on to the replica id,
// signed as the fleet's, and streams its answer back: a task's requests
// go to the replica running its call. When it fails before any answer,
// nothing is written.
func (m *Member) SendTo(w http.ResponseWriter, r *http.Request, body []byte, id string) error {
	rep, ok, err := m.replicaByID(r.Context(), id)
	if err != nil {
		return err
	}
	if !ok {
		return fmt.Errorf("%w: replica %s is not serving", errUnreached, id)
	}
	return m.forward(w, r, body, rep)
}

// restore starts a session here like the one a client started on a
// replica that is gone: the client's initialize request and the
// initialized notification, sent to this replica's own handler with the
// client's credentials. It returns the new session's id.
func (m *Member) restore(r *http.Request, initialize []byte, next http.Handler) (string, error) {
	send := func(body []byte, session string) *recorder {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodPost, r.URL.String(), bytes.NewReader(body))
		req.Host, req.RemoteAddr = r.Host, r.RemoteAddr
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if a := r.Header.Get("Authorization"); a != "" {
			req.Header.Set("Authorization", a)
		}
		if session != "" {
			req.Header.Set(sessionHeader, session)
		}
		rec := &recorder{h: http.Header{}}
		next.ServeHTTP(rec, req)
		return rec
	}
	rec := send(initialize, "")
	local := rec.h.Get(sessionHeader)
	if rec.code != http.StatusOK || local == "" {
		return "", fmt.Errorf("initialize answered HTTP %d", rec.code)
	}
	if rec := send([]byte(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), local); rec.code >= 300 {
		return "", fmt.Errorf("notifications/initialized answered HTTP %d", rec.code)
	}
	return local, nil
}

// serve serves r and returns the status written.
func serve(w http.ResponseWriter, r *http.Request, next http.Handler) int {
	h, ok := w.(*hooked)
	if !ok {
		h = &hooked{ResponseWriter: w}
	}
	next.ServeHTTP(h, r)
	if h.code == 0 {
		return http.StatusOK
	}
	return h.code
}

// missWriter holds back a 404 (the session is not here), and passes
// anything else through.
type missWriter struct {
	w      http.ResponseWriter
	h      http.Header
	code   int
	missed bool
}

func (mw *missWriter) Header() http.Header { return mw.h }

func (mw *missWriter) WriteHeader(code int) {
	if mw.code != 0 {
		return
	}
	mw.code = code
	if code == http.StatusNotFound {
		mw.missed = true
		return
	}
	maps.Copy(mw.w.Header(), mw.h)
	mw.w.WriteHeader(code)
}

func (mw *missWriter) Write(b []byte) (int, error) {
	if mw.code == 0 {
		mw.WriteHeader(http.StatusOK)
	}
	if mw.missed {
		return len(b), nil
	}
	return mw.w.Write(b)
}

func (mw *missWriter) Flush() {
	if mw.code != 0 && !mw.missed {
		_ = http.NewResponseController(mw.w).Flush()
	}
}

func (mw *missWriter) Unwrap() http.ResponseWriter { return mw.w }

// hooked writes through, calling before (when set) once, as the status
// is written, and remembering the status.
type hooked struct {
	http.ResponseWriter
	before func(code int)
	code   int
}

func (h *hooked) WriteHeader(code int) {
	if h.code == 0 {
		h.code = code
		if h.before != nil {
			h.before(code)
		}
	}
	h.ResponseWriter.WriteHeader(code)
}

func (h *hooked) Write(b []byte) (int, error) {
	if h.code == 0 {
		h.WriteHeader(http.StatusOK)
	}
	return h.ResponseWriter.Write(b)
}

func (h *hooked) Flush() { _ = http.NewResponseController(h.ResponseWriter).Flush() }

func (h *hooked) Unwrap() http.ResponseWriter { return h.ResponseWriter }

// recorder takes the answer to a request restore sends.
type recorder struct {
	h    http.Header
	code int
}

func (rec *recorder) Header() http.Header { return rec.h }

func (rec *recorder) WriteHeader(code int) {
	if rec.code == 0 {
		rec.code = code
	}
}

func (rec *recorder) Write(b []byte) (int, error) {
	rec.WriteHeader(http.StatusOK)
	return len(b), nil
}

func (rec *recorder) Flush() {}
