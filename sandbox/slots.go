package sandbox

import (
	"context"
	"sync"
)

// Programs run in a bounded number of slots (Options.MaxRunning), shared
// fairly between those who run them (a profile, later a person: the
// tenant the context names, WithTenant). A tenant holds at most half of
// the slots, rounded up, so that however long its programs wait on slow
// tools, another tenant's program finds a free slot at once; a slot that
// frees goes to the waiting tenant that holds the fewest, first come
// first served among equals.

type tenantKey struct{}

// WithTenant names who runs the programs started with ctx, for the fair
// sharing of slots; without it, every program is one tenant's.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

func tenantOf(ctx context.Context) string {
	t, _ := ctx.Value(tenantKey{}).(string)
	return t
}

// slots is the fair semaphore.
type slots struct {
	mu      sync.Mutex
	n       int            // slots in all
	free    int            // slots not held
	held    map[string]int // tenant → slots held
	waiting []*slotWaiter  // in order of arrival
}

type slotWaiter struct {
	tenant string
	ready  chan struct{} // closed when the slot is granted
}

func newSlots(n int) *slots {
	return &slots{n: n, free: n, held: map[string]int{}}
}

// perTenant is the most slots one tenant may hold.
func (s *slots) perTenant() int { return max(1, (s.n+1)/2) }

// acquire takes a slot for tenant, waiting as long as ctx lets it. It
// reports whether it had to wait.
func (s *slots) acquire(ctx context.Context, tenant string) (waited bool, err error) {
	s.mu.Lock()
	if len(s.waiting) == 0 && s.free > 0 && s.held[tenant] < s.perTenant() {
		s.take(tenant)
		s.mu.Unlock()
		return false, nil
	}
	w := &slotWaiter{tenant: tenant, ready: make(chan struct{})}
	s.waiting = append(s.waiting, w)
	s.grant() // a slot may be free for this tenant though others wait
	s.mu.Unlock()
	select {
	case <-w.ready:
		return false, nil
	default:
	}
	select {
	case <-w.ready:
		return true, nil
	case <-ctx.Done():
		s.mu.Lock()
		defer s.mu.Unlock()
		select {
		case <-w.ready:
			// Granted as the context ended: give it back.
			s.releaseLocked(tenant)
		default:
			for i, o := range s.waiting {
				if o == w {
					s.waiting = append(s.waiting[:i], s.waiting[i+1:]...)
					break
				}
			}
		}
		return true, ctx.Err()
	}
}

// release gives back a slot of tenant's.
func (s *slots) release(tenant string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.releaseLocked(tenant)
}

func (s *slots) releaseLocked(tenant string) {
	s.free++
	if s.held[tenant]--; s.held[tenant] <= 0 {
		delete(s.held, tenant)
	}
	s.grant()
}

func (s *slots) take(tenant string) {
	s.free--
	s.held[tenant]++
}

// grant gives free slots to waiters: each time to the first waiter of the
// tenants that hold the fewest, among those under their share.
func (s *slots) grant() {
	for s.free > 0 {
		best := -1
		for i, w := range s.waiting {
			h := s.held[w.tenant]
			if h >= s.perTenant() {
				continue
			}
			if best < 0 || h < s.held[s.waiting[best].tenant] {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := s.waiting[best]
		s.waiting = append(s.waiting[:best], s.waiting[best+1:]...)
		s.take(w.tenant)
		close(w.ready)
	}
}
