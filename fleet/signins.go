package fleet

import (
	"context"
	"net/http"
	"time"
)

// A person's sign-in to a per-person server waits in the replica that
// started it (package signin's Flows), for the browser to come back from
// the server's authorization server; the load balancer may send that
// return to any replica. So each replica notes its flows' states in the
// store, and a return whose state another replica noted is sent there.

// NoteFlow records that the sign-in with state waits in this replica, for
// as long as ttl.
func (m *Member) NoteFlow(ctx context.Context, state string, ttl time.Duration) error {
	return m.db.NoteFlow(ctx, state, m.id, ttl)
}

// FlowHandler serves the browser's return from a sign-in (next): one whose
// state another replica noted goes to that replica; the others are served
// here.
func (m *Member) FlowHandler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		state := r.URL.Query().Get("state")
		if state == "" || r.Header.Get(forwardedHeader) != "" {
			r.Header.Del(forwardedHeader)
			next.ServeHTTP(w, r)
			return
		}
		owner, ok, err := m.db.FlowReplica(r.Context(), state)
		switch {
		case err == nil && (!ok || owner == m.id):
			next.ServeHTTP(w, r)
			return
		case err != nil:
			m.logger.Warn("fleet: the store cannot be reached to find a sign-in's replica", "error", err)
			http.Error(w, "toolshelf: the fleet's store cannot be reached to find where this sign-in waits; try again", http.StatusServiceUnavailable)
			return
		}
		holder, ok, err := m.replicaByID(r.Context(), owner)
		if err != nil || !ok {
			http.Error(w, "toolshelf: the replica this sign-in waited in is gone: sign in again from your agent", http.StatusGone)
			return
		}
		if err := m.forward(w, r, nil, holder); err != nil {
			m.logger.Warn("fleet: a sign-in's replica does not answer", "replica", owner, "error", err)
			http.Error(w, "toolshelf: the replica this sign-in waits in does not answer: sign in again from your agent", http.StatusBadGateway)
		}
	})
}
