package gateway

import (
	"context"
	"net/http"

	"github.com/toolshelf/toolshelf/identity"
)

// Fleet is the fleet of replicas a host is one of (fleet.Member is one).
// The host runs it once its address is known (Host.Announce), sends each
// MCP path's requests and the sign-in callback through it, trusts the
// requests it vouches for, and tells it of the tools a session's searches
// added; the fleet gives a session it took over its tools back through
// the host.
type Fleet interface {
	// ID names this replica; it leads the request states of parked
	// calls.
	ID() string
	// Run announces this replica at address until ctx is done.
	Run(ctx context.Context, address string) error
	// Handler wraps an MCP path's handler, after authorization.
	Handler(next http.Handler) http.Handler
	// FlowHandler wraps the callback of people's sign-ins.
	FlowHandler(next http.Handler) http.Handler
	// Vouched reports whether another replica sent r on, and the person
	// it authenticated (see HTTPOptions.Vouch).
	Vouched(r *http.Request) (*identity.Person, bool, error)
	// Activated keeps the tools a search added to a session's list.
	Activated(ctx context.Context, session string, names []string)
	// OnTakeover sets what gives a session taken over (by its id here,
	// on its MCP path) the tools its client had found.
	OnTakeover(reactivate func(path, session string, names []string))
	// Alive reports whether the replica id still serves (its heartbeat is
	// fresh and signed): a task it ran is lost with it otherwise.
	Alive(ctx context.Context, id string) (bool, error)
	// SendTo sends a request (whose body is body) on to the replica id,
	// signed, and streams its answer back; when it fails before any
	// answer, nothing is written.
	SendTo(w http.ResponseWriter, r *http.Request, body []byte, id string) error
}

// vouchedKey marks a request another replica of the fleet sent on, signed
// (HTTPOptions.Vouch): that replica has checked what it could, such as
// whose a task is.
type vouchedKey struct{}

func vouch(r *http.Request) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), vouchedKey{}, true))
}

func vouched(ctx context.Context) bool {
	v, _ := ctx.Value(vouchedKey{}).(bool)
	return v
}

// Announce tells the host the address other replicas reach it at: its
// fleet starts saying so (Run runs it). Called once, after the listener
// is open.
func (h *Host) Announce(address string) {
	if h.opts.Fleet != nil {
		h.announce <- address
	}
}

// runFleet runs the fleet member once the host is announced, until ctx
// is done.
func (h *Host) runFleet(ctx context.Context) {
	select {
	case address := <-h.announce:
		if err := h.opts.Fleet.Run(ctx, address); err != nil {
			h.logger.Warn("fleet: leaving: the store did not take it; other replicas will take this one's sessions over when it is silent", "error", err)
		}
	case <-ctx.Done():
	}
}

// reactivate gives a session the fleet took over its client's tools.
func (h *Host) reactivate(path, session string, names []string) {
	if g := h.At(path); g != nil {
		g.Reactivate(session, names)
	}
}

// Mount serves h under prefix beside the host's own routes (the console
// at /console).
func (h *Host) Mount(prefix string, handler http.Handler) {
	h.mounts = append(h.mounts, mount{prefix, handler})
}

type mount struct {
	prefix  string
	handler http.Handler
}
