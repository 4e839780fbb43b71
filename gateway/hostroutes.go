package gateway

import (
	"context"
	"net/http"
	"strings"
	"sync"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
)

// hostRoutes are a host's MCP paths at one version of the configuration's
// profiles, replaced whole when it changes (Host.Apply).
type hostRoutes struct {
	others []*Server // at /mcp/<profile>
	// opts are the HTTP options of this version: who opens each path.
	opts *HTTPOptions
	// paths are the handlers of /mcp, /mcp/<profile> and, with people,
	// their protected resource metadata.
	paths map[string]http.Handler
}

// makeRoutes makes the routes of the gateways of profiles (main's at
// /mcp, others' at /mcp/<profile>): each path's door, of this version's
// tokens and people (claims open /mcp), in front of what is behind it, which the host keeps
// across versions (the sessions are there). applyMu is held, or the host
// is being made.
func (h *Host) makeRoutes(others []*Server, profiles []config.Profile, claims map[string][]string) *hostRoutes {
	tokens := map[string]string{}
	for _, p := range profiles {
		for _, t := range p.Tokens {
			tokens[t] = p.Name
		}
	}
	var people *People
	if h.opts.People != nil {
		pp := *h.opts.People
		pp.Claims = map[string]map[string][]string{config.DefaultProfile: claims}
		for _, p := range profiles {
			pp.Claims[p.Name] = p.Claims
		}
		people = &pp
	}
	rt := &hostRoutes{others: others, opts: h.httpOptions(tokens, people), paths: map[string]http.Handler{}}
	relay := rt.opts.relay()
	for _, g := range append([]*Server{h.main}, others...) {
		path := "/mcp"
		if g != h.main {
			path += "/" + g.Profile()
		}
		behind := h.behind[g]
		if behind == nil {
			behind = g.behindDoor(rt.opts, relay, h.large)
			h.behind[g] = behind
		}
		rt.paths[path] = checkOrigin(rt.opts.authorize(g.Profile(), h.open.track(g.Profile(), path, behind)))
		if people != nil {
			rt.paths[metadataPrefix+path] = people.metadata(path)
			if path == "/mcp" {
				rt.paths[metadataPrefix] = people.metadata(path)
			}
		}
	}
	return rt
}

// startGateway runs a gateway until the host's run ends or stopGateway;
// applyMu is held. Before Run, Run starts it.
func (h *Host) startGateway(g *Server) {
	if h.run == nil || h.run.Err() != nil {
		return
	}
	ctx, stop := context.WithCancel(h.run)
	h.stops[g] = stop
	h.ran.Go(func() {
		defer stop()
		g.Run(ctx)
	})
}

// stopGateway ends the Run of the gateway of a profile removed, and lets
// its scope go; applyMu is held.
func (h *Host) stopGateway(g *Server) {
	if stop := h.stops[g]; stop != nil {
		stop()
		delete(h.stops, g)
	}
	delete(h.behind, g)
	g.Scope().Close()
}

// openRequests are the requests under way on a host's MCP paths (a
// session's stream lasts as long as the session), each with what let it
// in, so that a change of who opens a path ends the ones it no longer
// lets in: a token taken out of the configuration ends its use, also of
// a stream opened before.
type openRequests struct {
	mu sync.Mutex
	m  map[*openRequest]struct{}
}

type openRequest struct {
	profile, path string
	bearer        string           // the Authorization header's token, if any
	person        *identity.Person // the person it was served as, if any
	vouched       bool             // sent on by another replica, which checked it
	cancel        context.CancelFunc
}

// track serves h, a path's handler behind its door, keeping each request
// under way.
func (o *openRequests) track(profile, path string, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithCancel(r.Context())
		defer cancel()
		q := &openRequest{profile: profile, path: path, person: identity.PersonOf(ctx), vouched: vouched(ctx), cancel: cancel}
		if scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " "); ok && strings.EqualFold(scheme, "Bearer") {
			q.bearer = strings.TrimSpace(token)
		}
		o.mu.Lock()
		if o.m == nil {
			o.m = map[*openRequest]struct{}{}
		}
		o.m[q] = struct{}{}
		o.mu.Unlock()
		defer func() {
			o.mu.Lock()
			delete(o.m, q)
			o.mu.Unlock()
		}()
		h.ServeHTTP(w, r.WithContext(ctx))
	})
}

// recheck ends the requests under way that rt would not let in.
func (o *openRequests) recheck(rt *hostRoutes) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for q := range o.m {
		if !rt.admits(q) {
			q.cancel()
		}
	}
}

// admits reports whether the routes would let a request in again as it
// was let in: its path is still served, and what opened it still opens
// it (the door's own decision, authorize, for a new request).
func (rt *hostRoutes) admits(q *openRequest) bool {
	o := rt.opts
	switch {
	case rt.paths[q.path] == nil:
		return false
	case q.vouched:
		return true // the replica that checked the client decides
	case q.person != nil:
		return o.People != nil && o.People.opens(q.profile, q.person)
	case q.bearer != "" && q.bearer == o.AuthToken:
		return true
	case q.bearer != "" && o.Tokens[q.bearer] == q.profile:
		return true
	}
	// Let in without a credential of its own: only while the path is
	// open to anyone.
	return o.AuthToken == "" && len(o.Tokens) == 0 && o.People == nil
}
