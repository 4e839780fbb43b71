// Package oauthtest is an MCP server protected by OAuth and its
// authorization server, both on loopback, for tests of signing in: the
// authorization server registers clients (RFC 7591), approves every
// authorization request at once (redirecting with a code) for the person
// its "user" parameter names (BrowseAs), checks PKCE, and issues access
// and refresh tokens; the MCP server takes only its current access
// tokens, and gives its tools the token's person (the request's
// TokenInfo.UserID; "operator" when no user was named).
package oauthtest

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Server is the pair: URL is the MCP endpoint.
type Server struct {
	URL    string
	AS     *httptest.Server
	MCP    *httptest.Server
	Scopes []string

	mu       sync.Mutex
	codes    map[string]grant // by code
	access   map[string]grant // valid access tokens → their scopes and person
	refresh  map[string]grant // valid refresh tokens → their scopes and person
	n        int
	Refreshs int // refresh grants served
	Calls    int // MCP requests with a valid token

	// User is the person the authorization server signs in when the
	// request names none (its "user" parameter): "operator" when empty.
	// Set it under Lock, as a browser's sign-in does not name one.
	User string

	// CallScope, when set, is a scope tools/call needs beyond Scopes: a
	// token without it gets 403 insufficient_scope (step-up).
	CallScope string

	// Fault makes the servers misbehave: "no-code" (the authorization
	// redirect carries no code), "html-token" (the token endpoint answers
	// an HTML error page), "bad-metadata" (the protected resource
	// metadata is not JSON).
	Fault string
}

// SetUser sets User.
func (s *Server) SetUser(user string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.User = user
}

// New starts both servers; they stop when the test ends. mcpServer is
// the protected server (its tools are what the tests call).
func New(t interface{ Cleanup(func()) }, mcpServer *mcp.Server) *Server {
	s := &Server{codes: map[string]grant{}, access: map[string]grant{}, refresh: map[string]grant{}, Scopes: []string{"tools"}}
	s.AS = httptest.NewServer(http.HandlerFunc(s.serveAS))
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return mcpServer }, nil)
	s.MCP = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasPrefix(r.URL.Path, "/.well-known/oauth-protected-resource") {
			if s.Fault == "bad-metadata" {
				fmt.Fprint(w, "<html>not metadata</html>")
				return
			}
			writeJSON(w, http.StatusOK, map[string]any{"resource": s.URL, "authorization_servers": []string{s.AS.URL}, "scopes_supported": s.Scopes})
			return
		}
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		s.mu.Lock()
		g, ok := s.access[tok]
		if ok {
			s.Calls++
		}
		s.mu.Unlock()
		scopes := g.scope
		prm := fmt.Sprintf(`resource_metadata="%s/.well-known/oauth-protected-resource/mcp"`, s.MCP.URL)
		if !ok {
			w.Header().Set("WWW-Authenticate", "Bearer "+prm)
			http.Error(w, "sign in first", http.StatusUnauthorized)
			return
		}
		if s.CallScope != "" && bytes.Contains(body, []byte(`"tools/call"`)) && !slices.Contains(strings.Fields(scopes), s.CallScope) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf(`Bearer error="insufficient_scope", scope="%s", %s`, strings.Join(append(slices.Clone(s.Scopes), s.CallScope), " "), prm))
			http.Error(w, "more scope needed", http.StatusForbidden)
			return
		}
		// The go-sdk binds a session to its person and hands tools the
		// TokenInfo.
		auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return &auth.TokenInfo{UserID: g.subject, Scopes: strings.Fields(g.scope), Expiration: time.Now().Add(time.Hour)}, nil
		}, nil)(h).ServeHTTP(w, r)
	}))
	s.URL = s.MCP.URL + "/mcp"
	t.Cleanup(func() { s.MCP.Close(); s.AS.Close() })
	return s
}

// Expire makes every access token invalid, as their expiry would: the
// next request is refused and the client must refresh.
func (s *Server) Expire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

// Revoke makes every token invalid, refresh tokens too.
func (s *Server) Revoke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
	clear(s.refresh)
}

func (s *Server) serveAS(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/.well-known/oauth-authorization-server":
		writeJSON(w, http.StatusOK, map[string]any{
			"issuer": s.AS.URL, "authorization_endpoint": s.AS.URL + "/authorize", "token_endpoint": s.AS.URL + "/token",
			"registration_endpoint": s.AS.URL + "/register", "code_challenge_methods_supported": []string{"S256"},
			"response_types_supported": []string{"code"}, "grant_types_supported": []string{"authorization_code", "refresh_token"},
			"token_endpoint_auth_methods_supported": []string{"none"}, "scopes_supported": s.Scopes,
		})
	case "/register":
		var md map[string]any
		json.NewDecoder(r.Body).Decode(&md)
		md["client_id"] = "registered-client"
		writeJSON(w, http.StatusCreated, md)
	case "/authorize":
		q := r.URL.Query()
		if q.Get("code_challenge_method") != "S256" || q.Get("resource") != s.URL {
			http.Error(w, "PKCE S256 and the resource parameter are required", http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.n++
		code := fmt.Sprintf("code-%d", s.n)
		user := q.Get("user")
		if user == "" {
			user = s.User
		}
		if user == "" {
			user = "operator"
		}
		s.codes[code] = grant{challenge: q.Get("code_challenge"), scope: q.Get("scope"), subject: user}
		s.mu.Unlock()
		u, _ := url.Parse(q.Get("redirect_uri"))
		v := u.Query()
		if s.Fault != "no-code" {
			v.Set("code", code)
		}
		v.Set("state", q.Get("state"))
		u.RawQuery = v.Encode()
		http.Redirect(w, r, u.String(), http.StatusFound)
	case "/token":
		if s.Fault == "html-token" {
			w.Header().Set("Content-Type", "text/html")
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprint(w, "<html><body>Internal error</body></html>")
			return
		}
		r.ParseForm()
		s.mu.Lock()
		defer s.mu.Unlock()
		var g grant
		switch r.Form.Get("grant_type") {
		case "authorization_code":
			var ok bool
			g, ok = s.codes[r.Form.Get("code")]
			sum := sha256.Sum256([]byte(r.Form.Get("code_verifier")))
			if !ok || base64.RawURLEncoding.EncodeToString(sum[:]) != g.challenge {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant"})
				return
			}
			delete(s.codes, r.Form.Get("code"))
		case "refresh_token":
			if r.Form.Get("resource") != s.URL {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_target"})
				return
			}
			var ok bool
			if g, ok = s.refresh[r.Form.Get("refresh_token")]; !ok {
				writeJSON(w, http.StatusBadRequest, map[string]any{"error": "invalid_grant"})
				return
			}
			delete(s.refresh, r.Form.Get("refresh_token"))
			s.Refreshs++
		default:
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": "unsupported_grant_type"})
			return
		}
		s.n++
		at, rt := fmt.Sprintf("access-%d", s.n), fmt.Sprintf("refresh-%d", s.n)
		g.challenge = ""
		s.access[at], s.refresh[rt] = g, g
		writeJSON(w, http.StatusOK, map[string]any{"access_token": at, "token_type": "Bearer", "refresh_token": rt, "expires_in": 3600, "scope": g.scope})
	default:
		http.NotFound(w, r)
	}
}

type grant struct{ challenge, scope, subject string }

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

// Browse is a headless browser: it follows the authorization URL, with
// its redirects, back to the client's loopback listener.
func Browse(authURL string) error { return BrowseAs(authURL, "") }

// BrowseAs is Browse for a person: the authorization server signs user
// in (the operator when empty).
func BrowseAs(authURL, user string) error {
	if user != "" {
		u, err := url.Parse(authURL)
		if err != nil {
			return err
		}
		q := u.Query()
		q.Set("user", user)
		u.RawQuery = q.Encode()
		authURL = u.String()
	}
	resp, err := http.Get(authURL)
	if err != nil {
		return err
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("the sign-in page ended with HTTP %d", resp.StatusCode)
	}
	return nil
}
