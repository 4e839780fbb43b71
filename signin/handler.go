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
// that does it.
type NeedsAuthError struct {
	Server string
	Reason string
}

func (e *NeedsAuthError) Error() string {
	return fmt.Sprintf("server %s needs sign-in (%s): run 'toolshelf auth login %s'", e.Server, e.Reason, e.Server)
}

func (e *NeedsAuthError) Is(target error) bool { return target == ErrNeedsAuth }

// Handler returns the OAuth handler of a server's connections: it sends
// the server's stored token, refreshes it when it expires or is refused,
// keeps refreshed tokens, and never opens a browser: with no token the
// server accepts, Authorize returns a [*NeedsAuthError].
func (s *Store) Handler(server, resource string, client *http.Client) auth.OAuthHandler {
	if client == nil {
		client = http.DefaultClient
	}
	return &storedHandler{store: s, server: server, resource: resource, client: client}
}

type storedHandler struct {
	store            *Store
	server, resource string
	client           *http.Client

	mu  sync.Mutex
	rec *Record
	ts  oauth2.TokenSource
}

// load reads the server's record once, and builds its token source.
func (h *storedHandler) load() (oauth2.TokenSource, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.ts != nil {
		return h.ts, nil
	}
	rec, err := h.store.Get(h.server, h.resource)
	if err != nil || rec == nil {
		return nil, err
	}
	h.setLocked(rec, rec.token())
	return h.ts, nil
}

// setLocked makes tok the token sent, refreshed with rec's configuration
// and kept in the store whenever it changes.
func (h *storedHandler) setLocked(rec *Record, tok *oauth2.Token) {
	h.rec = rec
	h.ts = &keeping{handler: h, base: oauth2.ReuseTokenSource(tok, refresher{h.client, rec}), last: tok.AccessToken}
}

func (h *storedHandler) TokenSource(context.Context) (oauth2.TokenSource, error) {
	return h.load()
}

// Authorize is called when the server refused a request: a refresh is
// tried once; anything else needs the user.
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
		return &NeedsAuthError{Server: h.server, Reason: fmt.Sprintf("the server asks for scope %q, which the token lacks", strings.Join(wanted, " "))}
	}
	if _, err := h.load(); err != nil {
		return err
	}
	// A sign-in made since (toolshelf auth login in another terminal)
	// replaces what this handler holds.
	if stored, err := h.store.Get(h.server, h.resource); err == nil && stored != nil {
		h.mu.Lock()
		newer := h.rec == nil || stored.AccessToken != h.rec.AccessToken
		if newer {
			h.setLocked(stored, stored.token())
		}
		h.mu.Unlock()
		if newer {
			return nil
		}
	}
	h.mu.Lock()
	rec := h.rec
	h.mu.Unlock()
	if rec == nil {
		return &NeedsAuthError{Server: h.server, Reason: "not signed in"}
	}
	if rec.RefreshToken == "" {
		return &NeedsAuthError{Server: h.server, Reason: "the token was refused and cannot be refreshed"}
	}
	// The server refused a token it had taken: get a new one now, whatever
	// its expiry says.
	tok, err := refresh(ctx, h.client, rec)
	if err != nil {
		return &NeedsAuthError{Server: h.server, Reason: "the token was refused and refreshing it failed: " + describe(err)}
	}
	h.mu.Lock()
	h.setLocked(rec, tok)
	h.mu.Unlock()
	return h.keep(tok)
}

// keep stores a new token of the handler's record.
func (h *storedHandler) keep(tok *oauth2.Token) error {
	h.mu.Lock()
	rec := *h.rec
	h.mu.Unlock()
	rec.AccessToken, rec.TokenType, rec.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" {
		rec.RefreshToken = tok.RefreshToken
	}
	h.mu.Lock()
	h.rec = &rec
	h.mu.Unlock()
	return h.store.Put(&rec)
}

// keeping is a token source that stores every token it refreshes.
type keeping struct {
	handler *storedHandler
	base    oauth2.TokenSource
	mu      sync.Mutex
	last    string
}

func (k *keeping) Token() (*oauth2.Token, error) {
	tok, err := k.base.Token()
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	changed := tok.AccessToken != k.last
	k.last = tok.AccessToken
	k.mu.Unlock()
	if changed {
		// A refresh that cannot be stored still serves this process.
		_ = k.handler.keep(tok)
	}
	return tok, nil
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
	if _, err := h.load(); err != nil {
		return
	}
	h.mu.Lock()
	if h.rec == nil {
		h.mu.Unlock()
		return
	}
	rec := *h.rec
	h.mu.Unlock()
	for _, sc := range scopes {
		if !slices.Contains(rec.Want, sc) {
			rec.Want = append(rec.Want, sc)
		}
	}
	h.mu.Lock()
	h.rec = &rec
	h.mu.Unlock()
	_ = h.store.Put(&rec)
}
