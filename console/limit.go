package console

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// limiter counts failures by key in fixed windows. It holds at most
// maxKeys keys: past that, the oldest window's keys are dropped first,
// so a flood of addresses costs bounded memory.
type limiter struct {
	mu     sync.Mutex
	max    int
	window time.Duration
	keys   map[string]*tries
	now    func() time.Time
}

type tries struct {
	n     int
	start time.Time
}

const maxKeys = 4096

func newLimiter(max int, window time.Duration) *limiter {
	return &limiter{max: max, window: window, keys: map[string]*tries{}, now: time.Now}
}

// blocked returns how long key must wait, or 0.
func (l *limiter) blocked(key string) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	t, ok := l.keys[key]
	if !ok {
		return 0
	}
	left := t.start.Add(l.window).Sub(l.now())
	if left <= 0 {
		delete(l.keys, key)
		return 0
	}
	if t.n >= l.max {
		return left
	}
	return 0
}

// fail counts a failure of key and returns the window's count.
func (l *limiter) fail(key string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	now := l.now()
	t, ok := l.keys[key]
	if !ok || now.Sub(t.start) >= l.window {
		if !ok && len(l.keys) >= maxKeys {
			l.prune(now)
		}
		t = &tries{start: now}
		l.keys[key] = t
	}
	t.n++
	return t.n
}

// prune drops the keys whose window is over, or all when none is.
func (l *limiter) prune(now time.Time) {
	for k, t := range l.keys {
		if now.Sub(t.start) >= l.window {
			delete(l.keys, k)
		}
	}
	if len(l.keys) >= maxKeys {
		clear(l.keys)
	}
}

// clientAddr is the request's client address without its port.
func clientAddr(r *http.Request) string {
	if h, _, err := net.SplitHostPort(r.RemoteAddr); err == nil {
		return h
	}
	return r.RemoteAddr
}

// blocked returns how long a client address must wait before it signs in
// again: by this process's count, and by the fleet's when there is one.
// A fleet's count that cannot be read leaves this process's.
func (c *Console) blocked(ctx context.Context, addr string) time.Duration {
	wait := c.tries.blocked(addr)
	if c.opts.Attempts != nil {
		if n, left, err := c.opts.Attempts.Failures(ctx, addr, time.Minute); err == nil && n >= signInFailures {
			wait = max(wait, left)
		}
	}
	return wait
}

// failed counts a failed sign-in, here and in the fleet, and returns the
// larger count.
func (c *Console) failed(ctx context.Context, addr string) int {
	n := c.tries.fail(addr)
	if c.opts.Attempts != nil {
		if m, err := c.opts.Attempts.Failed(ctx, addr, time.Minute); err == nil {
			n = max(n, m)
		} else {
			c.log.Warn("console: a failed sign-in could not be counted for the fleet", "error", err)
		}
	}
	return n
}
