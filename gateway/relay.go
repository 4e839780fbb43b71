//lint:file-ignore SA1019 sampling, roots and logging are deprecated by MCP 2026-07-28 (SEP-2577) but clients and servers on earlier revisions use them, and toolshelf relays them on purpose during the deprecation window.

package gateway

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/telemetry"
	"github.com/toolshelf/toolshelf/upstream"
)

// subscriptions are the sessions subscribed to each server's resources.
// A server is subscribed to once, however many sessions want it, and
// unsubscribed from when the last one leaves.
type subscriptions struct {
	mu sync.Mutex
	by map[subKey]map[*mcp.ServerSession]bool
}

type subKey struct{ server, uri string } // the URI as the server names it

func (s *Server) subscribe(ctx context.Context, req *mcp.SubscribeRequest) error {
	server, orig, ok := s.offers.Load().owner(req.Params.URI)
	if !ok {
		return mcp.ResourceNotFoundError(req.Params.URI)
	}
	k := subKey{server, orig}
	s.subs.mu.Lock()
	sessions := s.subs.by[k]
	first := len(sessions) == 0
	if first && len(s.subs.by) >= s.opts.MaxSubscriptions {
		s.subs.mu.Unlock()
		return &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: fmt.Sprintf("toolshelf holds %d resource subscriptions, the most it keeps; unsubscribe from some first", s.opts.MaxSubscriptions)}
	}
	if sessions == nil {
		sessions = make(map[*mcp.ServerSession]bool)
		s.subs.by[k] = sessions
	}
	sessions[req.Session] = true
	s.subs.mu.Unlock()
	if !first {
		return nil
	}
	if err := s.up.Subscribe(ctx, server, orig); err != nil {
		s.dropSubscriber(k, req.Session)
		return passOn(err)
	}
	return nil
}

func (s *Server) unsubscribe(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	server, orig, ok := s.offers.Load().owner(req.Params.URI)
	if !ok {
		return nil // nothing to end
	}
	if s.dropSubscriber(subKey{server, orig}, req.Session) {
		return passOn(s.up.Unsubscribe(ctx, server, orig))
	}
	return nil
}

// dropSubscriber removes a session's subscription and reports whether it
// was the last one of its resource.
func (s *Server) dropSubscriber(k subKey, ss *mcp.ServerSession) (last bool) {
	s.subs.mu.Lock()
	defer s.subs.mu.Unlock()
	sessions, ok := s.subs.by[k]
	if !ok {
		return false
	}
	delete(sessions, ss)
	if len(sessions) == 0 {
		delete(s.subs.by, k)
		return true
	}
	return false
}

// pruneSubscriptions ends the subscriptions of sessions that have ended
// without unsubscribing.
func (s *Server) pruneSubscriptions(ctx context.Context) {
	live := map[*mcp.ServerSession]bool{}
	for _, srv := range s.servers() {
		for ss := range srv.Sessions() {
			live[ss] = true
		}
	}
	var ended []subKey
	s.subs.mu.Lock()
	for k, sessions := range s.subs.by {
		for ss := range sessions {
			if !live[ss] {
				delete(sessions, ss)
			}
		}
		if len(sessions) == 0 {
			delete(s.subs.by, k)
			ended = append(ended, k)
		}
	}
	s.subs.mu.Unlock()
	for _, k := range ended {
		if err := s.up.Unsubscribe(ctx, k.server, k.uri); err != nil {
			s.logger.Debug("unsubscribe after the last subscriber left", "server", k.server, "error", err)
		}
	}
}

// servers returns every mcp.Server the gateway runs (one, or one per
// session with Activate).
func (s *Server) servers() []*mcp.Server {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]*mcp.Server, 0, len(s.sessions))
	for srv := range s.sessions {
		out = append(out, srv)
	}
	return out
}

// relayNotices passes the upstream's notices on until ctx is done.
func (s *Server) relayNotices(ctx context.Context) {
	for {
		select {
		case n := <-s.up.Notices():
			s.relay(ctx, n)
		case <-ctx.Done():
			return
		}
	}
}

// relay passes on what a server sent that no single request caused: a
// log message to every session that set a level, a resource update to
// the sessions subscribed to it.
func (s *Server) relay(ctx context.Context, n upstream.Notice) {
	switch {
	case n.Log != nil:
		p := *n.Log
		if p.Logger == "" {
			p.Logger = n.Server
		}
		for _, srv := range s.servers() {
			for ss := range srv.Sessions() {
				_ = ss.Log(ctx, &p)
			}
		}
	case n.Updated != "":
		uri := s.offers.Load().served(n.Server, n.Updated)
		for _, srv := range s.servers() {
			_ = srv.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{URI: uri})
		}
	}
}

// logLevels are MCP's log levels, most verbose first.
var logLevels = []mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}

// watchLevel passes a client's logging/setLevel on to the servers when it
// asks for more than they send now: each session then gets what its own
// level lets through (the SDK filters per session).
func (s *Server) watchLevel(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := next(ctx, method, req)
		if p, ok := telemetry.Params(req).(*mcp.SetLoggingLevelParams); ok && err == nil && method == "logging/setLevel" {
			i := slices.Index(logLevels, p.Level)
			s.mu.Lock()
			raise := i >= 0 && (s.logLevel == "" || i < slices.Index(logLevels, s.logLevel))
			if raise {
				s.logLevel = p.Level
			}
			s.mu.Unlock()
			if raise {
				s.up.SetLogLevel(ctx, p.Level)
			}
		}
		return res, err
	}
}
