// Package fleet lets several toolshelf replicas behind one load balancer
// act as one gateway for MCP clients, through the shared store.
//
// A session lives in the replica that started it: its go-sdk session, the
// calls it has running, the server requests waiting for its answers. So
// rather than copy that state, a replica that gets a request of a session
// it does not hold sends the request on to the replica that does (found
// in the store), and streams the answer back. When that replica is gone
// (killed, or stopped), the first replica to notice takes the session
// over: it starts a session of its own with the client's original
// initialize request and serves the client's session id from it, so the
// client carries on without noticing. A call parked for a 2026-07-28
// client's answers (an input-required round) is found the same way,
// through the replica named in its request state.
package fleet

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"log/slog"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolshelf/toolshelf/store"
)

// Beat is how often a replica tells the store it is alive. A replica not
// heard from for three beats is taken for gone.
const Beat = 2 * time.Second

// Store is where the fleet keeps its replicas, sessions, sign-in flows
// and failed console sign-ins (store.DB is one).
type Store interface {
	store.Sessions
	store.Flows
	store.Attempts
}

// Member is this replica's place in the fleet.
type Member struct {
	db      Store
	keys    *keys
	nonces  nonces // of the forwarded requests served
	checked string // the mark of a request this replica checked (see checkedHeader)
	id      string
	logger  *slog.Logger
	keep    time.Duration
	relay   http.RoundTripper
	react   func(path, session string, names []string)
	address string       // set by Run
	live    atomic.Int64 // replicas alive at the last beat

	mu      sync.Mutex
	adopted map[adoptedKey]string // a session taken over → its id here
	// restoring are the sessions being taken over here: closed once
	// adopted (or given up).
	restoring map[adoptedKey]chan struct{}
	touched   map[string]bool // sessions served since the last beat
}

// Options configure New; nil is the zero value.
type Options struct {
	Logger *slog.Logger
	// Keep is how long a session nobody uses stays in the store (the
	// gateway's idle timeout); 30 minutes when zero.
	Keep time.Duration
	// Transport carries requests to other replicas; when nil, direct
	// connections (no proxy).
	Transport http.RoundTripper
}

// OnTakeover sets what gives a session taken over (by its id here) the
// tools its client had found (see Member.Activated); path is the
// session's MCP path. Set it before the member serves.
func (m *Member) OnTakeover(reactivate func(path, session string, names []string)) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.react = reactivate
}

// New returns this replica's membership of the fleet whose store is db
// and whose replicas share key (signin.ParseKey reads one): 32 random
// bytes that the store does not hold. It takes part once Run has
// announced its address.
func New(db Store, key []byte, opts *Options) (*Member, error) {
	if opts == nil {
		opts = &Options{}
	}
	k, err := newKeys(key)
	if err != nil {
		return nil, err
	}
	m := &Member{db: db, keys: k, id: randomID(8), checked: randomID(16), logger: opts.Logger, keep: opts.Keep, relay: opts.Transport,
		adopted: map[adoptedKey]string{}, restoring: map[adoptedKey]chan struct{}{}, touched: map[string]bool{}}
	if m.logger == nil {
		m.logger = slog.New(slog.DiscardHandler)
	}
	if m.keep <= 0 {
		m.keep = 30 * time.Minute
	}
	if m.relay == nil {
		// Replicas talk directly: no HTTP_PROXY between them.
		m.relay = &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 5 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	return m, nil
}

// Replicas returns how many replicas of the fleet were alive at the last
// beat (at least 1): the share of a fleet-wide limit one replica counts
// is the limit divided by it.
func (m *Member) Replicas() int {
	return max(1, int(m.live.Load()))
}

// ID names this replica in the store and in the request states of the
// calls it parks.
func (m *Member) ID() string { return m.id }

// Run announces that this replica serves at address (a base URL the other
// replicas can reach, such as http://10.1.2.3:8080) and says so again
// every Beat until ctx is done; then it leaves, so that its sessions are
// taken over at once. A store that cannot be reached is retried: the
// replica serves on meanwhile.
func (m *Member) Run(ctx context.Context, address string) error {
	m.mu.Lock()
	m.address = address
	m.mu.Unlock()
	t := time.NewTicker(Beat)
	defer t.Stop()
	for {
		if err := m.beat(ctx); err != nil && ctx.Err() == nil {
			m.logger.Warn("fleet: the store cannot be reached; this replica serves on, and other replicas may take its sessions over", "error", err)
		}
		select {
		case <-ctx.Done():
			leave, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
			defer cancel()
			return m.db.Leave(leave, m.id)
		case <-t.C:
		}
	}
}

// beat records that this replica is alive, when its sessions were last
// used, and forgets the sessions nobody has used for m.keep.
func (m *Member) beat(ctx context.Context) error {
	m.mu.Lock()
	touched := make([]string, 0, len(m.touched))
	for id := range m.touched {
		touched = append(touched, id)
	}
	clear(m.touched)
	address := m.address
	m.mu.Unlock()
	at := time.Now().Unix()
	live, err := m.db.Beat(ctx, store.Replica{ID: m.id, Address: address, SignedAt: at, Sig: m.keys.heartbeat(m.id, address, at)}, touched, m.keep, gone)
	if err == nil {
		// Only the rows a replica of this fleet signed count.
		var n int64
		now := time.Now()
		for _, r := range live {
			if m.keys.trusted(r.ID, r.Address, r.SignedAt, r.Sig, now) {
				n++
			}
		}
		m.live.Store(n)
	}
	if err != nil {
		// Keep what was used for the next beat.
		m.mu.Lock()
		for _, id := range touched {
			m.touched[id] = true
		}
		m.mu.Unlock()
	}
	return err
}

// touch notes that a session was used.
func (m *Member) touch(id string) {
	m.mu.Lock()
	if len(m.touched) < 100_000 {
		m.touched[id] = true
	}
	m.mu.Unlock()
}

// replica is another replica, as the store knows it.
type replica struct {
	id, address string
	alive       bool
	path        string // holder: the session's MCP path (its profile)
}

// gone is how long a replica may be silent before it is taken for gone.
const gone = 3 * Beat

// holder returns the replica that holds a session; ok is false when the
// store knows no such session.
// A replica's row counts as alive only when its heartbeat is fresh and
// signed with the fleet key: a row someone wrote into the store without
// the key is a replica that is gone, and nothing is sent to its address.
func (m *Member) holder(ctx context.Context, session string) (r replica, ok bool, err error) {
	path, h, ok, err := m.db.Holder(ctx, session, gone)
	if err != nil || !ok {
		return r, false, err
	}
	r = replica{id: h.ID, address: h.Address, path: path}
	r.alive = h.Alive && m.trust(h.ID, h.Address, h.SignedAt, h.Sig)
	return r, true, nil
}

// trust checks a replica row's signature, and says when one does not
// hold: someone wrote it without the fleet key.
func (m *Member) trust(id, address string, at int64, sig string) bool {
	if m.keys.trusted(id, address, at, sig, time.Now()) {
		return true
	}
	m.logger.Warn("fleet: a replica row in the store is not signed with this fleet's key; nothing is sent to it", "replica", id, "address", address)
	return false
}

// replicaByID returns a replica by its id; ok is false when it is not
// serving, or its row is not signed with the fleet key.
func (m *Member) replicaByID(ctx context.Context, id string) (r replica, ok bool, err error) {
	h, ok, err := m.db.ReplicaByID(ctx, id, gone)
	if err != nil || !ok {
		return replica{id: id}, false, err
	}
	r = replica{id: id, address: h.Address}
	r.alive = h.Alive && m.trust(id, h.Address, h.SignedAt, h.Sig)
	return r, r.alive, nil
}

// Alive reports whether the replica id serves: its heartbeat is fresh
// and signed with the fleet key.
func (m *Member) Alive(ctx context.Context, id string) (bool, error) {
	if id == m.id {
		return true, nil
	}
	_, ok, err := m.replicaByID(ctx, id)
	return ok, err
}

// record keeps a new session of this replica's in the store, with the
// client's initialize request.
func (m *Member) record(ctx context.Context, session, path string, initialize []byte) error {
	return m.db.AddSession(ctx, store.Session{ID: session, Holder: m.id, Path: path, Initialize: initialize})
}

// forget removes a session the client ended.
func (m *Member) forget(ctx context.Context, session string) {
	m.mu.Lock()
	for k := range m.adopted {
		if k.session == session {
			delete(m.adopted, k)
		}
	}
	m.mu.Unlock()
	if err := m.db.EndSession(ctx, session); err != nil {
		m.logger.Warn("fleet: a closed session stays in the store until it expires", "error", err)
	}
}

// claim makes this replica the holder of a session of path that from
// held, and returns the client's initialize request; ok is false when
// another replica claimed it first or it is gone.
func (m *Member) claim(ctx context.Context, session, path, from string) (initialize []byte, activated []string, ok bool, err error) {
	sess, ok, err := m.db.ClaimSession(ctx, session, path, from, m.id)
	return sess.Initialize, sess.Activated, ok, err
}

// maxActivated bounds the tool names kept for one session.
const maxActivated = 1000

// Activated keeps the tools a search added to the tool list of a session
// of this replica's (local is the session's id here), for a replica that
// takes it over. The search waits for the write: a replica that died just
// after answering would otherwise take the list with it.
func (m *Member) Activated(ctx context.Context, local string, names []string) {
	m.mu.Lock()
	session := local
	for k, id := range m.adopted {
		if id == local {
			session = k.session
		}
	}
	m.mu.Unlock()
	// Not the request's own deadline: a client that hangs up still has
	// the tools in its list when it comes back.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	if err := m.db.AddActivated(ctx, session, names, maxActivated); err != nil {
		m.logger.Warn("fleet: a session's found tools are not in the store; a replica that takes it over lists the deferred tools only", "error", err)
	}
}

func randomID(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
