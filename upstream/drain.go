package upstream

import (
	"sync"
	"time"
)

// callCount counts a server's calls under way, so that one stopped by a
// change of the configuration answers them first.
type callCount struct {
	mu   sync.Mutex
	n    int
	idle chan struct{} // closed when n falls to 0; nil until asked for
}

func (c *callCount) begin() {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
}

func (c *callCount) end() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n--; c.n == 0 && c.idle != nil {
		close(c.idle)
		c.idle = nil
	}
}

// quiet returns a channel closed once no call is under way.
func (c *callCount) quiet() <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n == 0 {
		done := make(chan struct{})
		close(done)
		return done
	}
	if c.idle == nil {
		c.idle = make(chan struct{})
	}
	return c.idle
}

// drainCalls waits until the servers have answered the calls they are
// answering, or bound has passed.
func drainCalls(servers []*server, bound time.Duration) {
	timer := time.NewTimer(bound)
	defer timer.Stop()
	for _, s := range servers {
		select {
		case <-s.calls.quiet():
		case <-timer.C:
			return
		}
	}
}
