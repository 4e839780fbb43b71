// Package signin signs toolshelf in to remote MCP servers that ask for
// OAuth (the MCP authorization specification), keeps the tokens, and
// gives upstream connections a handler that sends them.
//
// The protocol work (discovery of the protected resource and
// authorization server metadata, client registration in the
// specification's order, PKCE, the resource parameter, scope selection and
// step-up) is the go-sdk's auth.AuthorizationCodeHandler. This package
// adds what a gateway needs around it: a loopback redirect listener
// ([Login]), a token file that survives restarts ([Store]), and a handler
// for servers that never opens a browser ([Store.Handler]): a server
// without a usable token is reported as needing sign-in, with the
// command that does it.
package signin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolshelf/toolshelf/internal/folders"
	"golang.org/x/oauth2"
)

// Record is what is kept of one sign-in: the token and what it takes to
// refresh it without signing in again.
type Record struct {
	Server   string `json:"server"`
	Resource string `json:"resource"` // the server's URL
	// Subject is the person the sign-in is theirs (the subject of their
	// token at the team's identity provider); empty for the gateway's
	// own sign-in, which every caller's requests use.
	Subject string   `json:"subject,omitempty"`
	Issuer  string   `json:"issuer,omitempty"`
	Scopes  []string `json:"scopes,omitempty"`
	// Want are scopes a server asked for that the token lacks
	// (insufficient_scope): the next login asks for them too.
	Want []string `json:"wantScopes,omitempty"`

	AccessToken  string    `json:"accessToken"`
	TokenType    string    `json:"tokenType,omitempty"`
	RefreshToken string    `json:"refreshToken,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"`

	ClientID     string `json:"clientId"`
	ClientSecret string `json:"clientSecret,omitempty"`
	TokenURL     string `json:"tokenUrl"`
	AuthStyle    int    `json:"authStyle,omitempty"` // oauth2.AuthStyle
}

// token returns the record's token.
func (r *Record) token() *oauth2.Token {
	return &oauth2.Token{AccessToken: r.AccessToken, TokenType: r.TokenType, RefreshToken: r.RefreshToken, Expiry: r.Expiry}
}

// Store keeps sign-ins: in the token file (Open), or sealed in the
// shared store of a fleet (OpenShared). It is safe for concurrent use.
type Store struct {
	where string
	back  backend
	// local counts this process's own sign-ins and sign-outs, which a
	// token file's backend does not (see Changes).
	local atomic.Uint64
}

// Changes counts the changes to the sign-ins, this process's and (in a
// shared store) every replica's: what holds a sign-in (a handler's token,
// a person's open connection) reads it again when the count moved, and a
// sign-out ends its use at once.
func (s *Store) Changes() uint64 { return s.back.changes() + s.local.Load() }

// backend is where a Store's sign-ins are.
type backend interface {
	// list returns the sign-ins, and apart those that cannot be read.
	list(ctx context.Context) ([]Record, []Unreadable, error)
	// get returns one sign-in (nil when there is none; an error saying
	// why when it cannot be read).
	get(ctx context.Context, k Key) (*Record, error)
	// update calls fn with the sign-in k (nil when there is none),
	// holding a lock that excludes every other update of it, in this
	// process and, for the shared store, in every replica; what fn
	// returns is kept, unless it is the record fn was given.
	update(ctx context.Context, k Key, fn func(cur *Record) (*Record, error)) (*Record, error)
	// remove forgets a server's sign-ins of a subject ("" the gateway's
	// own), or of everyone when all.
	remove(ctx context.Context, server, subject string, all bool) (int, error)
	// changes counts the changes other processes made: a handler that
	// holds an older count reads its sign-in again.
	changes() uint64
}

// Unreadable is a sign-in of the store that cannot be read: sealed with
// another key, altered, or an old row put back. It hides no other.
type Unreadable struct {
	Key    Key
	Reason string
}

// Key names a sign-in: a server at a resource, for a person (Subject) or
// for the gateway itself (no Subject).
type Key struct {
	Server, Resource, Subject string
}

func (r *Record) key() Key { return Key{r.Server, r.Resource, r.Subject} }

// removes reports whether remove(server, subject, all) forgets r.
func removes(r *Record, server, subject string, all bool) bool {
	return r.Server == server && (all || r.Subject == subject)
}

// DefaultPath is toolshelf/tokens.json under the user's configuration
// folder (package folders), "" when the environment places none.
func DefaultPath() string {
	dir := folders.Config(nil)
	if dir == "" {
		return ""
	}
	return filepath.Join(dir, "tokens.json")
}

// Open returns the store in the file at path (DefaultPath when empty).
// The file need not exist.
func Open(path string) *Store {
	if path == "" {
		path = DefaultPath()
	}
	return &Store{where: path, back: &tokenFile{path: path}}
}

// Where says where the sign-ins are kept: the token file's path, or the
// shared store's URL without its password.
func (s *Store) Where() string { return s.where }

// storeTimeout bounds one read or write of the store.
const storeTimeout = 30 * time.Second

// tokenFile is the token file, written with mode 0600 and replaced whole
// (write, then rename), so that a reader never sees half a file.
type tokenFile struct {
	path string
	mu   sync.Mutex
}

type file struct {
	Tokens []Record `json:"tokens"`
}

func (f *tokenFile) read() ([]Record, error) {
	data, err := os.ReadFile(f.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var doc file
	if err := json.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: %v (remove it and sign in again)", f.path, err)
	}
	return doc.Tokens, nil
}

func (f *tokenFile) write(recs []Record) error {
	slices.SortFunc(recs, func(a, b Record) int {
		return strings.Compare(a.Server+"\x00"+a.Resource+"\x00"+a.Subject, b.Server+"\x00"+b.Resource+"\x00"+b.Subject)
	})
	data, err := json.MarshalIndent(file{Tokens: recs}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(f.path), ".tokens-*")
	if err != nil {
		return err
	}
	_, werr := tmp.Write(data)
	if err := tmp.Chmod(0o600); werr == nil {
		werr = err
	}
	if err := tmp.Close(); werr == nil {
		werr = err
	}
	if werr == nil {
		werr = os.Rename(tmp.Name(), f.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}

// changes is always 0: a token file is read again only when this process
// changes it.
func (f *tokenFile) changes() uint64 { return 0 }

func (f *tokenFile) list(context.Context) ([]Record, []Unreadable, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, err := f.read()
	return recs, nil, err
}

func (f *tokenFile) get(_ context.Context, k Key) (*Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, err := f.read()
	if err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(recs, func(x Record) bool { return x.key() == k }); i >= 0 {
		return &recs[i], nil
	}
	return nil, nil
}

func (f *tokenFile) update(_ context.Context, k Key, fn func(*Record) (*Record, error)) (*Record, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, err := f.read()
	if err != nil {
		return nil, err
	}
	var cur *Record
	if i := slices.IndexFunc(recs, func(x Record) bool { return x.key() == k }); i >= 0 {
		cur = &recs[i]
	}
	next, err := fn(cur)
	if err != nil || next == cur || next == nil {
		return next, err
	}
	recs = slices.DeleteFunc(recs, func(x Record) bool { return x.key() == k })
	return next, f.write(append(recs, *next))
}

func (f *tokenFile) remove(_ context.Context, server, subject string, all bool) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	recs, err := f.read()
	if err != nil {
		return 0, err
	}
	n := len(recs)
	recs = slices.DeleteFunc(recs, func(x Record) bool { return removes(&x, server, subject, all) })
	if len(recs) == n {
		return 0, nil
	}
	return n - len(recs), f.write(recs)
}

// Get returns the gateway's own sign-in of a server at a resource.
func (s *Store) Get(server, resource string) (*Record, error) {
	return s.GetKey(Key{Server: server, Resource: resource})
}

// GetKey returns a sign-in, nil when there is none; a sign-in that
// cannot be read is an error saying why.
func (s *Store) GetKey(k Key) (*Record, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	return s.back.get(ctx, k)
}

// Put keeps a sign-in, replacing the earlier one of its server, resource
// and subject.
func (s *Store) Put(r *Record) error {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	_, err := s.back.update(ctx, r.key(), func(*Record) (*Record, error) { return r, nil })
	s.local.Add(1)
	return err
}

// Delete forgets the gateway's own sign-ins of a server and reports
// whether there was one; the people's stay (see DeletePerson).
func (s *Store) Delete(server string) (bool, error) {
	n, err := s.DeletePerson(server, "")
	return n > 0, err
}

// DeletePerson forgets a person's sign-ins of a server (the gateway's own
// when subject is empty; everyone's, the gateway's too, when it is "*")
// and says how many there were.
func (s *Store) DeletePerson(server, subject string) (int, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	n, err := s.back.remove(ctx, server, subject, subject == "*")
	if n > 0 || err != nil {
		s.local.Add(1)
	}
	return n, err
}

// List returns every sign-in that can be read, sorted by server.
func (s *Store) List() ([]Record, error) {
	recs, _, err := s.ListAll()
	return recs, err
}

// ListAll returns every sign-in that can be read, and apart those that
// cannot (sealed with another key, altered, or put back).
func (s *Store) ListAll() ([]Record, []Unreadable, error) {
	ctx, cancel := context.WithTimeout(context.Background(), storeTimeout)
	defer cancel()
	return s.back.list(ctx)
}

// Reseal seals every sign-in of the shared store again with its key (the
// first given to OpenShared), ending a rotation of the store key: the
// old keys are needed no more. It returns how many it sealed, and the
// rows it could not read, which it left.
func (s *Store) Reseal(ctx context.Context) (int, []Unreadable, error) {
	sh, ok := s.back.(*sharedSignins)
	if !ok {
		return 0, nil, errors.New("sign-ins in a token file are not sealed: there is no key to rotate")
	}
	return sh.reseal(ctx)
}

// renew returns a sign-in to use instead of the access token stale, which
// expired or was refused: the one kept now when another process (a
// replica, or auth login) or another request has replaced stale with one
// still valid, else one with a new token got
// with the refresh token, kept before the lock is let go. Under the
// store's lock, two replicas that renew together refresh once: a
// refresh token that rotates is used once.
func (s *Store) renew(ctx context.Context, client *http.Client, k Key, stale string) (*Record, error) {
	ctx, cancel := context.WithTimeout(ctx, storeTimeout)
	defer cancel()
	return s.back.update(ctx, k, func(cur *Record) (*Record, error) {
		switch {
		case cur == nil:
			return nil, needsAuth(k, "not signed in")
		case cur.AccessToken != stale && cur.token().Valid():
			return cur, nil
		case cur.RefreshToken == "":
			return nil, needsAuth(k, "the token was refused and cannot be refreshed")
		}
		tok, err := refresh(ctx, client, cur)
		if err != nil {
			return nil, needsAuth(k, "the token was refused and refreshing it failed: "+describe(err))
		}
		next := *cur
		next.AccessToken, next.TokenType, next.Expiry, next.RefreshToken = tok.AccessToken, tok.TokenType, tok.Expiry, tok.RefreshToken
		return &next, nil
	})
}
