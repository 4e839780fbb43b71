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
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
)

// Record is what is kept of one sign-in: the token and what it takes to
// refresh it without signing in again.
type Record struct {
	Server   string   `json:"server"`
	Resource string   `json:"resource"` // the server's URL
	Issuer   string   `json:"issuer,omitempty"`
	Scopes   []string `json:"scopes,omitempty"`
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

// Store is the token file: every sign-in by server and resource, written
// with mode 0600 and replaced whole (write, then rename), so that a
// reader never sees half a file. It is safe for concurrent use within a
// process.
type Store struct {
	path string
	mu   sync.Mutex
}

// DefaultPath is toolshelf/tokens.json under the user's configuration
// folder.
func DefaultPath() string {
	dir, err := os.UserConfigDir()
	if err != nil {
		return ""
	}
	return filepath.Join(dir, "toolshelf", "tokens.json")
}

// Open returns the store in the file at path (DefaultPath when empty).
// The file need not exist.
func Open(path string) *Store {
	if path == "" {
		path = DefaultPath()
	}
	return &Store{path: path}
}

// Path is the store's file.
func (s *Store) Path() string { return s.path }

type file struct {
	Tokens []Record `json:"tokens"`
}

func (s *Store) read() ([]Record, error) {
	data, err := os.ReadFile(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var f file
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("%s: %v (remove it and sign in again)", s.path, err)
	}
	return f.Tokens, nil
}

func (s *Store) write(recs []Record) error {
	slices.SortFunc(recs, func(a, b Record) int {
		return strings.Compare(a.Server+"\x00"+a.Resource, b.Server+"\x00"+b.Resource)
	})
	data, err := json.MarshalIndent(file{Tokens: recs}, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(s.path), 0o700); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(s.path), ".tokens-*")
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
		werr = os.Rename(tmp.Name(), s.path)
	}
	if werr != nil {
		os.Remove(tmp.Name())
	}
	return werr
}

// Get returns the sign-in of a server at a resource.
func (s *Store) Get(server, resource string) (*Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs, err := s.read()
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if r.Server == server && r.Resource == resource {
			return &r, nil
		}
	}
	return nil, nil
}

// Put keeps a sign-in, replacing the server's earlier one at the resource.
func (s *Store) Put(r *Record) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs, err := s.read()
	if err != nil {
		return err
	}
	recs = slices.DeleteFunc(recs, func(x Record) bool { return x.Server == r.Server && x.Resource == r.Resource })
	return s.write(append(recs, *r))
}

// Delete forgets every sign-in of a server and reports whether there was
// one.
func (s *Store) Delete(server string) (bool, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	recs, err := s.read()
	if err != nil {
		return false, err
	}
	n := len(recs)
	recs = slices.DeleteFunc(recs, func(x Record) bool { return x.Server == server })
	if len(recs) == n {
		return false, nil
	}
	return true, s.write(recs)
}

// List returns every sign-in, sorted by server.
func (s *Store) List() ([]Record, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.read()
}
