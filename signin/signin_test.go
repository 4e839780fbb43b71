package signin

import (
	"context"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/oauthtest"
)

func protected(t *testing.T) *oauthtest.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "test"}, nil)
	srv.AddTool(&mcp.Tool{Name: "secret", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "behind sign-in"}}}, nil
	})
	return oauthtest.New(t, srv)
}

func browse(_ context.Context, url string) error { return oauthtest.Browse(url) }

// connect opens a session with the server using the store's handler.
func connect(t *testing.T, store *Store, url string) (*mcp.ClientSession, error) {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, OAuthHandler: store.Handler("remote", url, nil), MaxRetries: -1}
	return mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(), tr, nil)
}

// Signing in keeps a token that later connections send, refreshes it when
// the server refuses it, and asks for sign-in again once refreshing fails.
func TestLoginRefreshAndSignInAgain(t *testing.T) {
	s := protected(t)
	store := Open(filepath.Join(t.TempDir(), "tokens.json"))

	if _, err := connect(t, store, s.URL); !errors.Is(err, ErrNeedsAuth) {
		t.Fatalf("before signing in: %v", err)
	}

	rec, err := Login(context.Background(), store, "remote", s.URL, &LoginOptions{Open: browse})
	if err != nil {
		t.Fatal(err)
	}
	if rec.ClientID != "registered-client" || rec.RefreshToken == "" || rec.TokenURL != s.AS.URL+"/token" {
		t.Errorf("record: %+v", rec)
	}
	if fi, err := os.Stat(store.Where()); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("token file: %v %v", fi.Mode(), err)
	}

	cs, err := connect(t, store, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func() (*mcp.CallToolResult, error) {
		return cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "secret"})
	}
	if res, err := call(); err != nil || res.IsError {
		t.Fatalf("calling behind sign-in: %v %+v", err, res)
	}

	// The server stops taking the token: a refresh, kept in the file.
	s.Expire()
	if res, err := call(); err != nil || res.IsError {
		t.Fatalf("after the token expired: %v %+v", err, res)
	}
	if s.Refreshs != 1 {
		t.Errorf("%d refreshes, want 1", s.Refreshs)
	}
	if got, _ := store.Get("remote", s.URL); got == nil || got.AccessToken == rec.AccessToken {
		t.Errorf("the refreshed token was not kept: %+v", got)
	}

	// Refreshing fails too: sign in again, and the error says how.
	s.Revoke()
	_, err = call()
	if !errors.Is(err, ErrNeedsAuth) {
		t.Fatalf("after revocation: %v", err)
	}
	if want := "toolshelf auth login remote"; !contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}

	// The user signs in again elsewhere: the connection's handler takes
	// the new token at the next refusal.
	if _, err := Login(context.Background(), store, "remote", s.URL, &LoginOptions{Open: browse}); err != nil {
		t.Fatal(err)
	}
	if res, err := call(); err != nil || res.IsError {
		t.Fatalf("after signing in again: %v %+v", err, res)
	}

	if ok, err := store.Delete("remote"); !ok || err != nil {
		t.Errorf("logout: %v %v", ok, err)
	}
	if got, _ := store.Get("remote", s.URL); got != nil {
		t.Error("the token is still there after logout")
	}
}

func contains(s, sub string) bool { return strings.Contains(s, sub) }

// A sign-in that goes wrong says which server and what failed, and
// writes no token.
func TestLoginFaults(t *testing.T) {
	for _, tc := range []struct {
		fault, want string
		open        func(ctx context.Context, url string) error
	}{
		{"no-code", "without an authorization code", nil},
		{"html-token", "the token endpoint answered HTTP 500", nil},
		{"bad-metadata", "remote", nil},
		{"", "state mismatch", func(_ context.Context, authURL string) error {
			// The browser comes back with a state of its own.
			u, _ := url.Parse(authURL)
			back := u.Query().Get("redirect_uri") + "?code=x&state=forged"
			return oauthtest.Browse(back)
		}},
	} {
		t.Run(tc.fault+tc.want, func(t *testing.T) {
			s := protected(t)
			s.Fault = tc.fault
			store := Open(filepath.Join(t.TempDir(), "tokens.json"))
			open := tc.open
			if open == nil {
				open = func(_ context.Context, url string) error {
					_ = oauthtest.Browse(url) // the page may end badly; the listener says why
					return nil
				}
			}
			_, err := Login(context.Background(), store, "remote", s.URL, &LoginOptions{Open: open})
			if err == nil || !strings.Contains(err.Error(), "remote") || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one naming the server and %q", err, tc.want)
			}
			if _, err := os.Stat(store.Where()); !os.IsNotExist(err) {
				t.Errorf("a token file was written: %v", err)
			}
		})
	}

	// An authorization server that is down.
	s := protected(t)
	s.AS.Close()
	store := Open(filepath.Join(t.TempDir(), "tokens.json"))
	_, err := Login(context.Background(), store, "remote", s.URL, &LoginOptions{Open: browse})
	if err == nil || !strings.Contains(err.Error(), "server remote") {
		t.Errorf("authorization server down: %v", err)
	}
}

// A server that asks for more scope on a call (403 insufficient_scope):
// the handler does not open a browser but says what is missing, and the
// next login asks for it too.
func TestStepUpAtTheNextLogin(t *testing.T) {
	s := protected(t)
	s.CallScope = "write"
	store := Open(filepath.Join(t.TempDir(), "tokens.json"))
	if _, err := Login(context.Background(), store, "remote", s.URL, &LoginOptions{Open: browse}); err != nil {
		t.Fatal(err)
	}
	cs, err := connect(t, store, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	_, err = cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "secret"})
	cs.Close()
	if !errors.Is(err, ErrNeedsAuth) || !strings.Contains(err.Error(), `"tools write"`) {
		t.Fatalf("a call needing more scope: %v", err)
	}
	rec, err := Login(context.Background(), store, "remote", s.URL, &LoginOptions{Open: browse})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(rec.Scopes, "write") {
		t.Errorf("the second login asked for %v, not the scope the server wanted", rec.Scopes)
	}
	cs, err = connect(t, store, s.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "secret"}); err != nil || res.IsError {
		t.Errorf("the call after signing in again: %v %+v", err, res)
	}
}
