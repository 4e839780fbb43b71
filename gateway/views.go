package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/upstream"
)

// Views shares one upstream among several gateways, one per profile (see
// [upstream.Profile]): each view shows only its profile's servers and
// tools and refuses calls to others, gets the notices (log messages,
// resource updates) of its own servers, and subscribes to a resource
// upstream through a count shared by all views.
type Views struct {
	up Upstream

	mu    sync.Mutex
	views []*view
	subs  map[[2]string]int // server, URI → views subscribed
}

// NewViews returns views of up; [Views.Run] passes notices on.
func NewViews(up Upstream) *Views {
	return &Views{up: up, subs: make(map[[2]string]int)}
}

// For returns the view of a profile; nil is the default profile, every
// tool of every server.
func (vs *Views) For(p *upstream.Profile) Upstream {
	v := &view{Upstream: vs.up, vs: vs, profile: p, notices: make(chan upstream.Notice, 256)}
	vs.mu.Lock()
	vs.views = append(vs.views, v)
	vs.mu.Unlock()
	return v
}

// Run passes every notice of the upstream to the views that show its
// server, until ctx is done. A view whose gateway is slow loses notices
// rather than hold up the others (a notice is advisory).
func (vs *Views) Run(ctx context.Context) {
	in := vs.up.Notices()
	if in == nil {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case n := <-in:
			vs.mu.Lock()
			for _, v := range vs.views {
				if v.hasServer(n.Server) {
					select {
					case v.notices <- n:
					default:
					}
				}
			}
			vs.mu.Unlock()
		}
	}
}

// view is an Upstream seen through a profile.
type view struct {
	Upstream
	vs      *Views
	profile *upstream.Profile // nil: everything
	notices chan upstream.Notice

	mu        sync.Mutex
	base, cat *catalog.Catalog // the upstream's catalog, and its view
}

func (v *view) hasServer(name string) bool { return v.profile == nil || v.profile.HasServer(name) }

// Profile returns the view's profile name.
func (v *view) profileName() string {
	if v.profile == nil {
		return upstream.DefaultProfile
	}
	return v.profile.Name
}

func (v *view) Catalog() *catalog.Catalog {
	base := v.Upstream.Catalog()
	if v.profile == nil {
		return base
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if base != v.base {
		v.base, v.cat = base, v.profile.View(base)
	}
	return v.cat
}

func (v *view) Notices() <-chan upstream.Notice { return v.notices }

func (v *view) Status() []upstream.Status {
	all := v.Upstream.Status()
	return slices.DeleteFunc(all, func(s upstream.Status) bool { return !v.hasServer(s.Name) })
}

func (v *view) Pending() []string {
	return slices.DeleteFunc(v.Upstream.Pending(), func(s string) bool { return !v.hasServer(s) })
}

func (v *view) Held() []upstream.Held {
	return slices.DeleteFunc(v.Upstream.Held(), func(h upstream.Held) bool { return !v.hasServer(h.Server) })
}

func (v *view) Offers() []upstream.Offer {
	return slices.DeleteFunc(v.Upstream.Offers(), func(o upstream.Offer) bool { return !v.hasServer(o.Server) })
}

// Call refuses a tool outside the profile whatever the gateway in front
// did: the profile is enforced here, not only by what is listed.
func (v *view) Call(ctx context.Context, name string, args json.RawMessage) (*mcp.CallToolResult, error) {
	if _, ok := v.Catalog().Lookup(name); !ok && v.profile != nil {
		return nil, fmt.Errorf("%w %q in profile %s", upstream.ErrUnknownTool, name, v.profile.Name)
	}
	return v.Upstream.Call(ctx, name, args)
}

func (v *view) Session(ctx context.Context, server string, f func(context.Context, *mcp.ClientSession) error) error {
	if !v.hasServer(server) {
		return fmt.Errorf("server %s is not in profile %s", server, v.profileName())
	}
	return v.Upstream.Session(ctx, server, f)
}

// Subscribe and Unsubscribe count the views subscribed to a resource:
// the upstream subscription starts with the first and ends with the last.
// A gateway already asks once per resource, however many of its sessions
// want it.
func (v *view) Subscribe(ctx context.Context, server, uri string) error {
	if !v.hasServer(server) {
		return fmt.Errorf("server %s is not in profile %s", server, v.profileName())
	}
	k := [2]string{server, uri}
	v.vs.mu.Lock()
	first := v.vs.subs[k] == 0
	v.vs.subs[k]++
	v.vs.mu.Unlock()
	if !first {
		return nil
	}
	err := v.Upstream.Subscribe(ctx, server, uri)
	if err != nil {
		v.vs.release(k)
	}
	return err
}

func (v *view) Unsubscribe(ctx context.Context, server, uri string) error {
	if !v.hasServer(server) {
		return nil
	}
	if v.vs.release([2]string{server, uri}) {
		return v.Upstream.Unsubscribe(ctx, server, uri)
	}
	return nil
}

// release counts one view fewer subscribed to k and reports whether it
// was the last.
func (vs *Views) release(k [2]string) bool {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	if vs.subs[k] == 0 {
		return false
	}
	vs.subs[k]--
	if vs.subs[k] > 0 {
		return false
	}
	delete(vs.subs, k)
	return true
}
