package signin

import (
	"context"
	"errors"
	"fmt"
	"html"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"
)

// ErrNotAsked is Login's error for a server that served its tools
// without asking for sign-in: there is nothing to keep.
var ErrNotAsked = errors.New("the server does not ask for sign-in")

// LoginOptions configures [Login].
type LoginOptions struct {
	// Open shows the user the authorization URL: prints it, opens a
	// browser. Required. The sign-in goes on when the browser comes back
	// to toolshelf's loopback listener.
	Open func(ctx context.Context, url string) error
	// ClientID and ClientSecret are a client registered with the
	// server's authorization server ahead of time. ClientMetadataURL is
	// an https URL of a Client ID Metadata Document to use as the client
	// id. Without either, toolshelf registers itself (Dynamic Client
	// Registration). The go-sdk tries them in the specification's order.
	ClientID, ClientSecret string
	ClientMetadataURL      string
	// Headers are sent with the request that finds out what the server
	// asks for (the server's configured headers).
	Headers map[string]string
	// SSE: the server is a legacy HTTP+SSE endpoint, reached with GET.
	SSE bool
	// Client makes the HTTP requests (http.DefaultClient when nil).
	Client *http.Client
}

// Login signs in to the server at resource (its URL) and keeps the token
// in store: it asks the server, reads the 401's challenge, and runs the
// authorization code flow with PKCE (the go-sdk's
// auth.AuthorizationCodeHandler), the browser coming back to a listener
// on 127.0.0.1 at a random port.
func Login(ctx context.Context, store *Store, server, resource string, opts *LoginOptions) (*Record, error) {
	if opts == nil || opts.Open == nil {
		return nil, errors.New("signin: LoginOptions.Open is required")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("starting the redirect listener: %w", err)
	}
	redirect := fmt.Sprintf("http://%s/callback", ln.Addr())
	back := make(chan callback, 1)
	srv := &http.Server{Handler: callbackHandler(server, back)}
	go srv.Serve(ln)
	defer srv.Close()
	return signIn(ctx, store, Key{Server: server, Resource: resource}, redirect, opts, back)
}

// signIn runs the authorization code flow for the sign-in k, the browser
// coming back to redirect, whose handler sends what it brought on back;
// the token is kept in store.
func signIn(ctx context.Context, store *Store, k Key, redirect string, opts *LoginOptions, back <-chan callback) (*Record, error) {
	server, resource := k.Server, k.Resource
	client := opts.Client
	if client == nil {
		client = http.DefaultClient
	}
	var (
		mu  sync.Mutex
		cfg *oauth2.Config
		tok *oauth2.Token
	)
	hc := &auth.AuthorizationCodeHandlerConfig{
		RedirectURL: redirect,
		DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
			ClientName: "toolshelf", RedirectURIs: []string{redirect},
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			TokenEndpointAuthMethod: "none",
		}},
		AuthorizationCodeFetcher: func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
			if err := opts.Open(ctx, args.URL); err != nil {
				return nil, err
			}
			select {
			case cb := <-back:
				// One answer per authorization: a second round (step-up,
				// or the SDK retrying) waits for the browser again.
				if cb.err != nil {
					return nil, cb.err
				}
				return &auth.AuthorizationResult{Code: cb.code, State: cb.state, Iss: cb.iss}, nil
			case <-ctx.Done():
				return nil, fmt.Errorf("waiting for the browser to come back: %w", ctx.Err())
			}
		},
		NewTokenSource: func(ctx context.Context, c *oauth2.Config, t *oauth2.Token) (oauth2.TokenSource, error) {
			mu.Lock()
			cfg, tok = c, t
			mu.Unlock()
			return c.TokenSource(ctx, t), nil
		},
		RequestRefreshToken: true,
		Client:              client,
	}
	if prev, _ := store.GetKey(k); prev != nil && len(prev.Want) > 0 {
		// The server asked for more than the last sign-in got (a 403
		// insufficient_scope while serving): ask for that too.
		hc.ScopeFilter = func(discovered []string) []string {
			out := slices.Clone(discovered)
			for _, sc := range prev.Want {
				if !slices.Contains(out, sc) {
					out = append(out, sc)
				}
			}
			return out
		}
	}
	if opts.ClientID != "" {
		hc.PreregisteredClient = &oauthex.ClientCredentials{ClientID: opts.ClientID}
		if opts.ClientSecret != "" {
			hc.PreregisteredClient.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: opts.ClientSecret}
		}
	}
	if opts.ClientMetadataURL != "" {
		hc.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: opts.ClientMetadataURL}
	}
	h, err := auth.NewAuthorizationCodeHandler(hc)
	if err != nil {
		return nil, fmt.Errorf("server %s: %w", server, err)
	}

	if opts.SSE {
		// The legacy SSE transport takes no OAuth handler: ask the
		// endpoint directly and authorize on its challenge.
		req, resp, err := probe(ctx, client, resource, opts)
		if err != nil {
			return nil, fmt.Errorf("server %s: %w", server, err)
		}
		if resp.StatusCode != http.StatusUnauthorized && resp.StatusCode != http.StatusForbidden {
			resp.Body.Close()
			return nil, ErrNotAsked
		}
		if err := h.Authorize(ctx, req, resp); err != nil {
			return nil, fmt.Errorf("server %s: signing in failed: %s", server, describe(err))
		}
	} else if err := verify(ctx, resource, opts.Headers, h); err != nil {
		// Connecting runs the flow (the 401's challenge) and listing the
		// tools proves the token, asking for more scopes if the server
		// says it lacks some (step-up).
		return nil, fmt.Errorf("server %s: signing in failed: %s", server, describe(err))
	}
	mu.Lock()
	defer mu.Unlock()
	if tok == nil {
		return nil, ErrNotAsked
	}
	rec := &Record{
		Server: server, Resource: resource, Subject: k.Subject, Scopes: cfg.Scopes,
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
		ClientID: cfg.ClientID, ClientSecret: cfg.ClientSecret, TokenURL: cfg.Endpoint.TokenURL, AuthStyle: int(cfg.Endpoint.AuthStyle),
	}
	if err := store.Put(rec); err != nil {
		return nil, fmt.Errorf("keeping the token: %w", err)
	}
	return rec, nil
}

// verify connects to a streamable HTTP server with the signing-in handler
// and lists its tools.
func verify(ctx context.Context, resource string, headers map[string]string, h auth.OAuthHandler) error {
	var hc *http.Client
	if len(headers) > 0 {
		hc = &http.Client{Transport: headerTransport{headers, http.DefaultTransport}}
	}
	tr := &mcp.StreamableClientTransport{Endpoint: resource, HTTPClient: hc, OAuthHandler: h, MaxRetries: -1}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolshelf", Version: "auth"}, &mcp.ClientOptions{Capabilities: &mcp.ClientCapabilities{}}).Connect(ctx, tr, nil)
	if err != nil {
		return err
	}
	defer cs.Close()
	_, err = cs.ListTools(ctx, nil)
	return err
}

type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range t.headers {
		req.Header.Set(k, v)
	}
	return t.base.RoundTrip(req)
}

// probe asks the server without a token, as a client connecting would.
func probe(ctx context.Context, client *http.Client, resource string, opts *LoginOptions) (*http.Request, *http.Response, error) {
	method, body, accept := http.MethodPost, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"toolshelf","version":"auth"}}}`, "application/json, text/event-stream"
	if opts.SSE {
		method, body, accept = http.MethodGet, "", "text/event-stream"
	}
	req, err := http.NewRequestWithContext(ctx, method, resource, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	for k, v := range opts.Headers {
		req.Header.Set(k, v)
	}
	req.Header.Set("Accept", accept)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	return req, resp, nil
}

type callback struct {
	code, state, iss string
	err              error
}

// callbackHandler takes the browser's returns to the loopback listener,
// one per authorization (step-up authorizes again); a return nobody waits
// for is turned away.
func callbackHandler(server string, back chan<- callback) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/callback" {
			http.NotFound(w, r)
			return
		}
		cb := readCallback(r)
		sent := false
		select {
		case back <- cb:
			sent = true
		default:
		}
		answerCallback(w, server, cb, sent)
	})
}

// readCallback reads what the browser brought back.
func readCallback(r *http.Request) callback {
	q := r.URL.Query()
	cb := callback{code: q.Get("code"), state: q.Get("state"), iss: q.Get("iss")}
	switch {
	case q.Get("error") != "":
		cb.err = fmt.Errorf("the authorization server refused: %s %s", q.Get("error"), q.Get("error_description"))
	case cb.code == "":
		cb.err = errors.New("the browser came back without an authorization code")
	}
	return cb
}

// answerCallback tells the person in the browser how the sign-in went;
// sent says whether a sign-in was waiting for the page.
func answerCallback(w http.ResponseWriter, server string, cb callback, sent bool) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	switch {
	case !sent:
		w.WriteHeader(http.StatusConflict)
		fmt.Fprint(w, "<p>No sign-in is waiting for this page.</p>")
	case cb.err != nil:
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, "<p>Signing in to %s failed: %s</p>", html.EscapeString(server), html.EscapeString(cb.err.Error()))
	default:
		fmt.Fprintf(w, "<p>Signed in to %s. You can close this window and go back to your agent.</p>", html.EscapeString(server))
	}
}
