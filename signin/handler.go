package signin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// ErrNeedsAuth is the error of a server that asks for sign-in when
// toolshelf has no token it accepts; errors.Is finds it in a
// [*NeedsAuthError].
var ErrNeedsAuth = errors.New("needs sign-in")

// NeedsAuthError says which server needs sign-in, why, and the command
// that does it; for a person's sign-in (Subject), that the person must
// sign in.
type NeedsAuthError struct {
	Server string
	Reason string
	// Subject is the person who must sign in; empty for the gateway's
	// own sign-in, which an operator makes.
	Subject string
}

func (e *NeedsAuthError) Error() string {
	if e.Subject != "" {
		return fmt.Sprintf("server %s needs %s to sign in (%s)", e.Server, e.Subject, e.Reason)
	}
	return fmt.Sprintf("server %s needs sign-in (%s): run 'toolshelf auth login %s'", e.Server, e.Reason, e.Server)
}

func needsAuth(k Key, reason string) *NeedsAuthError {
	return &NeedsAuthError{Server: k.Server, Reason: reason, Subject: k.Subject}
}

func (e *NeedsAuthError) Is(target error) bool { return target == ErrNeedsAuth }

// Handler returns the OAuth handler of a server's connections: it sends
// the server's stored token, refreshes it when it expires or is refused,
// keeps refreshed tokens, and never opens a browser: with no token the
// server accepts, Authorize returns a [*NeedsAuthError].
func (s *Store) Handler(server, resource string, client *http.Client) auth.OAuthHandler {
	return s.HandlerOf(Key{Server: server, Resource: resource}, client)
}

// HandlerOf is Handler for any sign-in: a person's (k.Subject) sends that
// person's token and no other, and with none says the person must sign
// in.
func (s *Store) HandlerOf(k Key, client *http.Client) auth.OAuthHandler {
	if client == nil {
		client = http.DefaultClient
	}
	return &storedHandler{store: s, key: k, client: client}
}

type storedHandler struct {
	store  *Store
	key    Key
	client *http.Client

	mu      sync.Mutex
	rec     *Record
	ts      oauth2.TokenSource
	changes uint64 // the store's change count when rec was read
}

// load returns the token source of the server's sign-in, read again when
// the store has changed since (a sign-in, a sign-out or a refresh through
// another replica); nil when there is none.
func (h *storedHandler) load() (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	changes := h.store.Changes()
	if h.ts != nil && changes == h.changes {
		return h.ts, nil
	}
	rec, err := h.store.GetKey(h.key)
	if err != nil {
		return nil, err
	}
	h.changes = changes
	if rec == nil {
		h.rec, h.ts = nil, nil
		return nil, nil
	}
	h.setLocked(rec)
	return h.ts, nil
}

// setLocked makes rec's token the one sent, renewed through the store
// when it expires.
func (h *storedHandler) setLocked(rec *Record) {
	h.rec = rec
	h.ts = oauth2.ReuseTokenSource(rec.token(), renewing{h})
}

func (h *storedHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return h.load()
}

// renewing is the token source behind the handler's, called when the
// token expires.
type renewing struct{ h *storedHandler }

func (r renewing) Token() (*oauth2.Token, error) {
	rec, err := r.h.renew(context.Background(), "")
	if err != nil {
		return nil, err
	}
	return rec.token(), nil
}

// renew replaces the access token stale (expired or refused; the
// handler's when empty) through the store, which refreshes it once
// however many requests and replicas ask.
func (h *storedHandler) renew(ctx context.Context, stale string) (*Record, error) {
	h.mu.Lock()
	rec := h.rec
	h.mu.Unlock()
	if rec == nil {
		return nil, needsAuth(h.key, "not signed in")
	}
	if stale == "" {
		stale = rec.AccessToken
	}
	rec, err := h.store.renew(ctx, h.client, h.key, stale)
	if err != nil {
		return nil, err
	}
	h.mu.Lock()
	h.rec = rec
	h.mu.Unlock()
	return rec, nil
}

// Authorize is called when the server refused a request: the token is
// renewed once (a newer one kept by another process, or a refresh);
// anything else needs the user.
func (h *storedHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	defer resp.Body.Close()
	defer io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	insufficient, wanted := false, []string(nil)
	for _, c := range challenges {
		if c.Params["error"] == "insufficient_scope" {
			insufficient = true
			wanted = append(wanted, strings.Fields(c.Params["scope"])...)
		}
	}
	if resp.StatusCode == http.StatusForbidden && !insufficient {
		return nil // not about sign-in: the retry gets the server's own error
	}
	if insufficient {
		// Step-up needs the user: remember what the server asked for, so
		// that the next auth login asks for it too.
		h.want(wanted)
		return needsAuth(h.key, fmt.Sprintf("the server asks for scope %q, which the token lacks", strings.Join(wanted, " ")))
	}
	if _, err := h.load(); err != nil {
		return err
	}
	// The token refused is the one the request carried: another request
	// may have renewed the handler's since.
	_, stale, _ := strings.Cut(req.Header.Get("Authorization"), " ")
	rec, err := h.renew(ctx, stale)
	if err != nil {
		return err
	}
	h.mu.Lock()
	h.setLocked(rec)
	h.mu.Unlock()
	return nil
}

// describe words an OAuth error without the response body, which may
// echo a token.
func describe(err error) string {
	var re *oauth2.RetrieveError
	if errors.As(err, &re) {
		if re.ErrorCode != "" {
			return fmt.Sprintf("the token endpoint answered %s", re.ErrorCode)
		}
		if re.Response != nil {
			return fmt.Sprintf("the token endpoint answered HTTP %d", re.Response.StatusCode)
		}
	}
	return err.Error()
}

// want records scopes the server asked for in the server's record.
func (h *storedHandler) want(scopes []string) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	_, _ = h.store.back.update(ctx, h.key, func(cur *Record) (*Record, error) {
		if cur == nil {
			return nil, nil
		}
		next := *cur
		next.Want = slices.Clone(cur.Want)
		for _, sc := range scopes {
			if !slices.Contains(next.Want, sc) {
				next.Want = append(next.Want, sc)
			}
		}
		return &next, nil
	})
}
