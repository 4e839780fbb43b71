package signin

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// CallbackPath is where a person's browser comes back to the gateway
// after signing in to a server (see [Flows]).
const CallbackPath = "/oauth/callback"

// BeginPath is where a person's sign-in link points ([Flow.URL]): the
// gateway there checks that whoever opened the link is the person it was
// for, before it sends the browser on to the server's authorization
// server ([Flows.Pending]). A link is a bearer of nothing: a person who
// opens another's link, and signs in at the server, must not become the
// account the other's calls run as.
const BeginPath = "/oauth/begin"

// FlowTimeout bounds a person's sign-in: a URL not followed within it
// starts over.
const FlowTimeout = 10 * time.Minute

// Flows are people's sign-ins to servers that take each person's own
// token ("signin": "per-person"): the person opens a URL, signs in at the
// server's authorization server, and the browser comes back to the
// gateway's callback ([Flows.Callback]); the token is kept under the
// person's subject, and used for no one else. One flow per person and
// server is under way at a time. It is safe for concurrent use.
type Flows struct {
	store *Store
	opts  LoginOptions

	mu      sync.Mutex
	byState map[string]*Flow
	byKey   map[Key]*Flow
	note    func(ctx context.Context, state string, ttl time.Duration) error
}

// SetNote makes the flows tell note each state they wait on: a fleet's
// replica records it in the store, so that the browser's return reaches
// it whichever replica it lands on (fleet.Member.NoteFlow). Call it before
// the first flow begins.
func (f *Flows) SetNote(note func(ctx context.Context, state string, ttl time.Duration) error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.note = note
}

// Flow is one person's sign-in under way.
type Flow struct {
	// URL is what the person opens: the gateway's BeginPath, with the
	// sign-in's state.
	URL string
	key Key
	// auth is, by state, the URL of the server's authorization server
	// each round of the sign-in opened.
	auth map[string]string
	// back takes what the browser brings back.
	back chan callback
	done chan struct{}
	err  error
	// refused is why the sign-in was refused (Refuse): every later round
	// of it fails so, rather than wait for a browser.
	refused error
}

// Done is closed when the sign-in has ended; Err then says how.
func (f *Flow) Done() <-chan struct{} { return f.done }

// Err is nil for a sign-in that ended with a token kept.
func (f *Flow) Err() error {
	<-f.done
	return f.err
}

// NewFlows returns the flows of store; opts (nil for none) carries the
// HTTP client and a preregistered client, as for Login. Open is not used.
func NewFlows(store *Store, opts *LoginOptions) *Flows {
	f := &Flows{store: store, byState: map[string]*Flow{}, byKey: map[Key]*Flow{}}
	if opts != nil {
		f.opts = *opts
	}
	return f
}

// Store is where the flows keep the sign-ins.
func (f *Flows) Store() *Store { return f.store }

// Begin starts the sign-in k (which names the person) or returns the one
// under way. redirect is the gateway's callback URL as the person's
// client reaches it. headers are sent with the request that finds out
// what the server asks for.
func (f *Flows) Begin(ctx context.Context, k Key, redirect string, headers map[string]string) (*Flow, error) {
	if k.Subject == "" {
		return nil, errors.New("signin: a flow is a person's: the key needs a subject")
	}
	f.mu.Lock()
	if fl := f.byKey[k]; fl != nil {
		f.mu.Unlock()
		return fl, nil
	}
	fl := &Flow{key: k, auth: map[string]string{}, back: make(chan callback, 1), done: make(chan struct{})}
	f.byKey[k] = fl
	f.mu.Unlock()

	opened := make(chan string, 1)
	opts := f.opts
	opts.Headers = headers
	opts.Open = func(ctx context.Context, u string) error {
		parsed, err := url.Parse(u)
		if err != nil {
			return err
		}
		state := parsed.Query().Get("state")
		if state == "" {
			return errors.New("the server's authorization URL has no state")
		}
		f.mu.Lock()
		if fl.refused != nil {
			// The client's SDK authorizes again after a refused round
			// (its fallbacks); a refused sign-in stays refused.
			f.mu.Unlock()
			return fl.refused
		}
		f.byState[state] = fl
		fl.auth[state] = u
		note := f.note
		f.mu.Unlock()
		if note != nil {
			if err := note(ctx, state, FlowTimeout); err != nil {
				return fmt.Errorf("recording the sign-in in the fleet's store: %w", err)
			}
		}
		select {
		case opened <- beginURL(redirect, state):
		default: // a second round (step-up): the person has the first URL's page
		}
		return nil
	}
	// The flow outlives the call that started it: the person may take
	// minutes, and the call has long ended. It carries none of the call's
	// values either: the MCP SDK reads the protocol version of the
	// client's request from them, and would send it to the server.
	fctx, cancel := context.WithTimeout(context.Background(), FlowTimeout)
	go func() {
		defer cancel()
		_, err := signIn(fctx, f.store, k, redirect, &opts, fl.back)
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("the sign-in to %s was not finished within %v", k.Server, FlowTimeout)
		}
		fl.err = err
		f.mu.Lock()
		delete(f.byKey, k)
		for st, x := range f.byState {
			if x == fl {
				delete(f.byState, st)
			}
		}
		f.mu.Unlock()
		close(fl.done)
	}()
	select {
	case u := <-opened:
		fl.URL = u
		return fl, nil
	case <-fl.done:
		if fl.err == nil {
			// The server took the person's token as it was (another
			// request signed them in meanwhile).
			return fl, nil
		}
		return nil, fl.err
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// beginURL is the link a person opens for the sign-in round state: the
// gateway's BeginPath beside its callback.
func beginURL(redirect, state string) string {
	return strings.TrimSuffix(redirect, CallbackPath) + BeginPath + "?state=" + url.QueryEscape(state)
}

// Pending returns the sign-in waiting on state: its key (whose it is:
// k.Subject) and the URL of the server's authorization server that the
// person's browser goes on to once the gateway knows it is theirs.
func (f *Flows) Pending(state string) (k Key, auth string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fl := f.byState[state]
	if fl == nil {
		return Key{}, "", false
	}
	return fl.key, fl.auth[state], true
}

// Refuse ends the sign-in waiting on state with err (its link was opened
// by someone else, or its return did not come from the browser it was
// given to): the link is spent, and the person starts again from their
// agent. It reports whether a sign-in was waiting.
func (f *Flows) Refuse(state string, err error) bool {
	f.mu.Lock()
	fl := f.byState[state]
	if fl != nil {
		delete(f.byState, state)
		fl.refused = err
	}
	f.mu.Unlock()
	if fl == nil {
		return false
	}
	select {
	case fl.back <- callback{state: state, err: err}:
	default:
	}
	return true
}

// Callback serves the browser's return from a server's authorization
// server: what it brings goes to the flow its state names. The gateway
// checks, before it, that the return comes from the browser of the
// person the sign-in is for.
func (f *Flows) Callback() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cb := readCallback(r)
		f.mu.Lock()
		fl := f.byState[cb.state]
		f.mu.Unlock()
		sent := false
		server := ""
		if fl != nil {
			server = fl.key.Server
			select {
			case fl.back <- cb:
				sent = true
			default:
			}
		}
		if sent && cb.err == nil {
			// The page says signed in once the token is kept (or, for a
			// server that asks again, after a while).
			t := time.NewTimer(30 * time.Second)
			defer t.Stop()
			select {
			case <-fl.done:
				cb.err = fl.err
			case <-t.C:
			case <-r.Context().Done():
				return
			}
		}
		answerCallback(w, server, cb, sent)
	})
}

type redirectKey struct{}

// WithRedirect returns ctx carrying the gateway's callback URL as the
// caller's client reaches the gateway: where a person's sign-in comes
// back to.
func WithRedirect(ctx context.Context, url string) context.Context {
	return context.WithValue(ctx, redirectKey{}, url)
}

// RedirectOf returns the callback URL ctx carries, or "".
func RedirectOf(ctx context.Context) string {
	u, _ := ctx.Value(redirectKey{}).(string)
	return u
}
