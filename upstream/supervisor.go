package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/signin"
)

// server is one upstream server and its supervisor's state.
type server struct {
	cfg    serverConfig
	hints  []string // cfg.GrantHints(), said before it runs
	pool   *Pool
	logger *slog.Logger  // redacts what it logs
	relist chan struct{} // list_changed received; buffered 1
	// stop ends the supervisor started for it (Pool.start), and stopped
	// is closed once it has returned, its process stopped.
	stop    context.CancelFunc
	stopped chan struct{}
	settled chan struct{} // closed when the first attempt has ended
	// relistOffer: prompts or resources list_changed received; buffered 1
	relistOffer chan struct{}
	client      *mcp.Client // with the handlers that route to clients
	flights     flights     // requests in flight, with their clients
	calls       callCount   // calls under way, for a stop to wait on
	offers      offerState
	people      people // connections of people (Signin)

	mu       sync.Mutex
	state    State
	err      string
	conn     *conn
	ready    chan struct{} // closed while state is ready
	entries  []catalog.Entry
	rawTools []json.RawMessage // the last tools/list, unfiltered, for the cache
	// secretHeld are the tools whose definition held a secret (cut from
	// it): held out like a poisoned tool (see Pool.judge).
	secretHeld  map[string]bool
	info        catalog.Server
	source      string
	restarts    int
	connectTime time.Duration
	// retryAt is when the supervisor tries again, while it waits; a send
	// on retryNow (buffered 1) ends the wait at once (Pool.Retry).
	retryAt  time.Time
	retryNow chan struct{}
}

func (s *server) status() Status {
	conflict := s.pool.conflict(s.cfg.Name)
	quarantined := s.pool.quarantinedCount(s.cfg.Name)
	c := s.cfg.Containment()
	s.mu.Lock()
	defer s.mu.Unlock()
	st := Status{
		Name: s.cfg.Name, Transport: s.cfg.TransportName(), State: s.state, Error: s.err,
		Tools: len(s.entries) - quarantined, Quarantined: quarantined, Source: s.source, ProtocolVersion: s.info.ProtocolVersion,
		Restarts: s.restarts, ConnectTime: s.connectTime, RetryAt: s.retryAt,
	}
	st.Contained, st.Uncontained, st.Hints = c.Contained, c.Why, s.hints
	if st.Error == "" {
		st.Error = conflict
	}
	return st
}

// run is the server's supervisor: connect, serve until the connection is
// lost, wait, reconnect; until ctx is done.
func (s *server) run(ctx context.Context) {
	defer s.settle()
	defer s.closePeople()
	if s.cfg.Err != nil {
		// The configuration is at fault (an unset variable); retrying
		// cannot help.
		s.fail(s.cfg.Err, nil, false)
		return
	}
	delay := s.pool.opts.RestartDelay
	for {
		start := time.Now()
		c, err := s.connect(ctx)
		if ctx.Err() != nil {
			if c != nil {
				c.close()
			}
			return
		}
		if err == nil {
			s.logger.Info("server ready", "tools", s.status().Tools, "protocol", c.info.ProtocolVersion, "took", time.Since(start).Round(time.Millisecond))
			s.settle()
			err = s.serve(ctx, c)
			c.close()
			if ctx.Err() != nil {
				return
			}
			if time.Since(start) > 2*s.pool.opts.MaxRestartDelay {
				delay = s.pool.opts.RestartDelay // it was up a long time: start over
			}
			s.lost(err)
		}
		s.settle() // the first attempt has ended either way
		s.mu.Lock()
		s.retryAt = time.Now().Add(delay)
		s.mu.Unlock()
		wait := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			wait.Stop()
			return
		case <-wait.C:
		case <-s.retryNow:
			wait.Stop()
		}
		delay = min(2*delay, s.pool.opts.MaxRestartDelay)
		s.mu.Lock()
		s.restarts++
		s.retryAt = time.Time{}
		select {
		case <-s.retryNow: // asked for while this try was on its way
		default:
		}
		s.mu.Unlock()
	}
}

func (s *server) settle() {
	select {
	case <-s.settled:
	default:
		close(s.settled)
	}
}

// connect dials the server and lists its tools within the server's
// timeout. On failure it records the error and applies the discovery
// fallbacks; on success the server is ready.
func (s *server) connect(ctx context.Context) (*conn, error) {
	select {
	case s.pool.starting <- struct{}{}:
		defer func() { <-s.pool.starting }()
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// The package first, on a bound of its own: the start's timeout
	// counts from the installed program (install.go).
	if err := s.install(ctx); err != nil {
		return nil, err
	}
	start := time.Now()
	dctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout())
	defer cancel()
	c, err := dial(dctx, &s.cfg, s.client, &s.flights, s.logger)
	var tools []json.RawMessage
	var fromFunctions bool
	if err == nil {
		tools, fromFunctions, err = c.listTools(dctx)
	}
	var offer Offer
	if err == nil {
		var oerr error
		if offer, oerr = c.listOffer(dctx); oerr != nil {
			s.logger.Warn("listing prompts or resources failed; serving what was listed", "error", s.redactor().Redact(oerr.Error()))
		}
		if offer.Apps, oerr = c.readApps(dctx, tools, offer.Resources); oerr != nil {
			s.logger.Warn("reading the server's apps failed; those are not served", "error", s.redactor().Redact(oerr.Error()))
		}
	}
	if err != nil {
		if dctx.Err() == context.DeadlineExceeded && ctx.Err() == nil {
			err = fmt.Errorf("no answer within %v; stopped it (a slow server, or a busy machine, may need a longer \"timeout\" in its configuration)%s", s.cfg.StartTimeout(), stderrNote(c))
		}
		out := c.output()
		c.close()
		if ctx.Err() == nil {
			s.fail(err, out, true)
		}
		return nil, err
	}
	if fromFunctions {
		s.logger.Warn(`tools/list answered with "functions" instead of "tools"; read them anyway`)
	}
	// Publish the tools before the server stops counting as pending, so
	// that nobody sees it neither pending nor in the catalog; the offer
	// (with the apps) in the same publish as the tools, so that the lock
	// file judges the server's tools and apps together.
	s.offers.mu.Lock()
	s.offers.offer = offer
	s.offers.mu.Unlock()
	s.accept(c.info, tools)
	s.restore(dctx, c)
	s.mu.Lock()
	s.conn = c
	s.state = StateReady
	s.err = ""
	s.connectTime = time.Since(start)
	close(s.ready)
	s.mu.Unlock()
	return c, nil
}

// accept makes a tool list the server just gave its live tools: published
// in a new snapshot, and cached on disk for the next start.
func (s *server) accept(info catalog.Server, tools []json.RawMessage) {
	tools = s.setTools(info, tools, SourceLive)
	s.mu.Lock()
	s.rawTools = tools
	s.mu.Unlock()
	s.pool.publish()
	s.saveCache()
}

// acceptOffer makes an offer the server just gave its live offer, as
// accept does for tools.
func (s *server) acceptOffer(o Offer) {
	s.setOffer(o)
	s.saveCache()
}

// saveCache writes the server's tools and offer for the next start.
func (s *server) saveCache() {
	s.mu.Lock()
	info, tools := s.info, s.rawTools
	s.mu.Unlock()
	if tools == nil {
		return // not listed on this run yet
	}
	s.offers.mu.Lock()
	o := s.offers.offer
	s.offers.mu.Unlock()
	if err := saveCache(s.pool.opts.CacheDir, &s.cfg, info, tools, &o); err != nil {
		s.logger.Warn("could not cache the tool list", "error", err)
	}
}

func stderrNote(c *conn) string {
	if c == nil || c.proc == nil {
		return ""
	}
	if tail := c.proc.StderrSaid(512); tail != "" {
		return "; stderr: " + tail
	}
	return ""
}

// serve keeps a connected server's tools current until the connection
// ends or ctx is done.
func (s *server) serve(ctx context.Context, c *conn) error {
	ended := make(chan error, 1)
	go func() { ended <- c.wait() }()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-ended:
			if err == nil {
				err = errors.New("connection closed")
			}
			return c.explain(err)
		case <-s.relist:
			lctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout())
			tools, _, err := c.listTools(lctx)
			cancel()
			if err != nil {
				s.logger.Warn("tools/list after list_changed failed; keeping the previous list", "error", err)
				continue
			}
			s.rereadApps(ctx, c, tools)
			s.accept(c.info, tools)
			s.logger.Info("tool list changed", "tools", s.status().Tools)
		case <-s.relistOffer:
			lctx, cancel := context.WithTimeout(ctx, s.cfg.StartTimeout())
			o, err := c.listOffer(lctx)
			cancel()
			if err != nil {
				s.logger.Warn("listing prompts or resources after list_changed failed; keeping the previous lists", "error", s.redactor().Redact(err.Error()))
				continue
			}
			s.mu.Lock()
			tools := s.rawTools
			s.mu.Unlock()
			lctx, cancel = context.WithTimeout(ctx, s.cfg.StartTimeout())
			o.Apps, err = c.readApps(lctx, tools, o.Resources)
			cancel()
			if err != nil {
				s.logger.Warn("reading the server's apps failed; those are not served", "error", s.redactor().Redact(err.Error()))
			}
			s.acceptOffer(o)
		}
	}
}

// setTools replaces the server's tools, and returns their definitions as
// kept: a secret one held (toolshelf's, another server's, its own) is cut
// from it, so that it reaches no client, lock file or cache, and the tool
// is held out.
func (s *server) setTools(info catalog.Server, raws []json.RawMessage, source string) []json.RawMessage {
	info.Name = s.cfg.Name
	held := map[string]bool{}
	cloned := false
	for i, raw := range raws {
		if cut := s.redactor().CutRaw(raw); string(cut) != string(raw) {
			if !cloned {
				raws, cloned = slices.Clone(raws), true // the caller's are the server's answer
			}
			raws[i] = cut
			var t struct {
				Name string `json:"name"`
			}
			json.Unmarshal(cut, &t)
			held[t.Name] = true
			s.logger.Warn("a tool's definition held a secret: cut, and the tool is held out", "tool", truncate(t.Name, 64))
		}
	}
	es, bad := entries(&s.cfg, raws, source == SourceOutput || source == SourceAutoApprove)
	for _, err := range bad {
		s.logger.Warn("skipped a tool the server listed", "error", err)
	}
	for i := range es {
		es[i].Stale = source == SourceCache
	}
	s.mu.Lock()
	s.entries, s.info, s.source, s.secretHeld = es, info, source, held
	s.mu.Unlock()
	return raws
}

// fail records a failed attempt. Tools already known (from the cache or
// an earlier connection) are kept; otherwise the discovery fallbacks are
// tried on what the server printed, then on the autoApprove names.
func (s *server) fail(err error, output []byte, retry bool) {
	state := StateFailed
	if errors.Is(err, signin.ErrNeedsAuth) {
		// Its tools stay searchable from the cache; it is tried again,
		// so that a sign-in in another terminal is picked up.
		state = StateNeedsAuth
		var na *signin.NeedsAuthError
		if errors.As(err, &na) {
			err = na
		}
	}
	s.logger.Warn("server failed", "error", err, "retrying", retry)
	s.mu.Lock()
	s.state, s.err = state, s.redactor().Redact(err.Error())
	have := len(s.entries) > 0 && (s.source == SourceLive || s.source == SourceCache)
	s.mu.Unlock()
	if !have {
		if tools := outputTools(output); len(tools) > 0 {
			s.logger.Warn("using tool definitions the server printed instead of answering tools/list", "tools", len(tools))
			s.setTools(catalog.Server{}, tools, SourceOutput)
		} else if len(s.cfg.AutoApprove) > 0 {
			s.setTools(catalog.Server{}, approvedTools(s.cfg.AutoApprove), SourceAutoApprove)
		}
	}
	s.markStale()
	s.pool.publish()
}

// lost records the end of a ready connection.
func (s *server) lost(err error) {
	s.logger.Warn("connection lost; restarting", "error", err)
	s.mu.Lock()
	s.state, s.err, s.conn = StateRestarting, s.redactor().Redact(err.Error()), nil
	s.ready = make(chan struct{})
	s.mu.Unlock()
	s.markStale()
	s.pool.publish()
}

// markStale flags live tools as unconfirmed while the server is away.
func (s *server) markStale() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.source != SourceLive {
		return
	}
	s.source = SourceCache
	es := make([]catalog.Entry, len(s.entries))
	for i, e := range s.entries {
		e.Stale = true
		es[i] = e
	}
	s.entries = es
}

// waitReady returns the server's connection, waiting up to the server's
// timeout while it connects or restarts.
func (s *server) waitReady(ctx context.Context) (*conn, error) {
	var timer *time.Timer // made when there is something to wait for: most calls find the server ready
	for {
		s.mu.Lock()
		state, c, ready, reason := s.state, s.conn, s.ready, s.err
		s.mu.Unlock()
		switch state {
		case StateReady:
			if !c.dead() {
				return c, nil
			}
			// The process has exited and the supervisor has not yet
			// noticed: wait for the restart rather than call into a
			// closed connection.
			ready = nil
		case StateDisabled:
			return nil, fmt.Errorf("server %s is disabled", s.cfg.Name)
		case StateFailed, StateNeedsAuth:
			return nil, fmt.Errorf("server %s is not available: %s", s.cfg.Name, reason)
		}
		if timer == nil {
			timer = time.NewTimer(s.cfg.StartTimeout())
			defer timer.Stop()
		}
		poll := time.After(10 * time.Millisecond) // for a change that closes no channel
		select {
		case <-ready:
		case <-poll:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-timer.C:
			return nil, fmt.Errorf("server %s is still %s after %v%s", s.cfg.Name, state, s.cfg.StartTimeout(), reasonNote(reason))
		}
	}
}

func reasonNote(reason string) string {
	if reason == "" {
		return ""
	}
	return " (" + reason + ")"
}
