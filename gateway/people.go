package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/signin"
	"github.com/toolshelf/toolshelf/upstream"
)

// People lets the team's people open profiles with their own access
// tokens, issued by the identity provider: the gateway is an OAuth
// protected resource (RFC 9728), and a client discovers the provider
// from it and signs the person in.
type People struct {
	Verifier *identity.Verifier
	// Claims are the claims that open each profile, by profile name
	// (config.DefaultProfile for /mcp); a profile without claims is
	// opened by no person.
	Claims map[string]map[string][]string
	// Flows sign people in to servers that take each person's own
	// sign-in; the browser comes back to signin.CallbackPath. The pool
	// starts them (upstream.Options.Flows, the same value).
	Flows *signin.Flows
	// Relay, when set, wraps the callback: in a fleet, a browser's return
	// goes to the replica whose flow waits for it
	// (fleet.Member.FlowHandler).
	Relay func(http.Handler) http.Handler
}

// opens reports whether a person opens a profile's path.
func (pp *People) opens(profile string, p *identity.Person) bool {
	if profile == "" {
		profile = config.DefaultProfile
	}
	return p.Matches(pp.Claims[profile])
}

// metadataPrefix is where each MCP path's protected resource metadata
// is: /.well-known/oauth-protected-resource/mcp/ops for /mcp/ops.
const metadataPrefix = "/.well-known/oauth-protected-resource"

// BaseURL is the gateway's URL as the client reached it: the scheme a
// TLS-terminating proxy says (X-Forwarded-Proto) or the connection's, and
// the Host header (which CheckHost has vetted).
func BaseURL(r *http.Request) string {
	scheme := "http"
	if r.TLS != nil || strings.EqualFold(r.Header.Get("X-Forwarded-Proto"), "https") {
		scheme = "https"
	}
	return scheme + "://" + r.Host
}

// metadata serves the protected resource metadata of the MCP path mcp.
func (pp *People) metadata(mcpPath string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Access-Control-Allow-Origin", "*")
		if r.Method == http.MethodOptions {
			w.WriteHeader(http.StatusNoContent)
			return
		}
		cfg := pp.Verifier.Config()
		doc := oauthex.ProtectedResourceMetadata{
			Resource:               BaseURL(r) + mcpPath,
			AuthorizationServers:   []string{cfg.Issuer},
			ScopesSupported:        cfg.Scopes,
			BearerMethodsSupported: []string{"header"},
			ResourceName:           "toolshelf",
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=300")
		_ = json.NewEncoder(w).Encode(doc)
	})
}

// challenge is the WWW-Authenticate value of a refusal on path: where the
// metadata is, and the error when there is one (RFC 6750, 3).
func challenge(r *http.Request, errCode, description, scope string) string {
	parts := []string{fmt.Sprintf("resource_metadata=%q", BaseURL(r)+metadataPrefix+r.URL.Path)}
	if errCode != "" {
		parts = append(parts, fmt.Sprintf("error=%q", errCode))
	}
	if description != "" {
		// A quoted-string: no quotes or backslashes inside.
		parts = append(parts, fmt.Sprintf("error_description=%q", strings.NewReplacer(`"`, "'", `\`, "/").Replace(description)))
	}
	if scope != "" {
		parts = append(parts, fmt.Sprintf("scope=%q", scope))
	}
	return "Bearer " + strings.Join(parts, ", ")
}

// personal serves a request that carries no static token of the gateway:
// a person's access token is verified, and a person the profile's claims
// let in is served with the person in the request's context; anything
// else is refused as the MCP authorization specification says (401 with
// the metadata's URL, 403 insufficient_scope naming the scope).
func (pp *People) personal(profile string, w http.ResponseWriter, r *http.Request, h http.Handler) {
	scheme, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
	token = strings.TrimSpace(token)
	if !strings.EqualFold(scheme, "Bearer") || token == "" {
		w.Header().Set("WWW-Authenticate", challenge(r, "", "", strings.Join(pp.Verifier.Config().Scopes, " ")))
		http.Error(w, "sign in: this gateway takes an access token of its identity provider (see the WWW-Authenticate header)", http.StatusUnauthorized)
		return
	}
	p, err := pp.Verifier.Verify(r.Context(), token)
	var invalid *identity.InvalidError
	var scope *identity.ScopeError
	switch {
	case errors.As(err, &invalid):
		w.Header().Set("WWW-Authenticate", challenge(r, "invalid_token", invalid.Reason, ""))
		http.Error(w, err.Error(), http.StatusUnauthorized)
		return
	case errors.As(err, &scope):
		w.Header().Set("WWW-Authenticate", challenge(r, "insufficient_scope", err.Error(), strings.Join(pp.Verifier.Config().Scopes, " ")))
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	case err != nil:
		// The provider is down or misconfigured: not the client's
		// fault, and nothing it can fix by signing in again.
		http.Error(w, "toolshelf cannot check the token now: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	if !pp.opens(profile, p) {
		name := profile
		if name == "" {
			name = config.DefaultProfile
		}
		http.Error(w, fmt.Sprintf("%s does not open profile %s: it needs %s", p, name, identity.DescribeClaims(pp.Claims[name])), http.StatusForbidden)
		return
	}
	asPerson(p, w, r, h)
}

// asPerson serves r as the person p: in its context, and in the go-sdk's
// TokenInfo, so that the go-sdk binds a session to the user who opened
// it (refusing another person's requests on it) and hands each request's
// TokenInfo to the handlers (knowPerson).
func asPerson(p *identity.Person, w http.ResponseWriter, r *http.Request, h http.Handler) {
	ctx := identity.WithPerson(r.Context(), p)
	r = r.WithContext(signin.WithRedirect(ctx, BaseURL(r)+signin.CallbackPath))
	// RequireBearerToken reads a bearer token before it asks the
	// verifier, which has the person already: a request another replica
	// sent on carries none.
	if r.Header.Get("Authorization") == "" {
		r.Header.Set("Authorization", "Bearer verified")
	}
	auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
		return &auth.TokenInfo{UserID: p.Subject, Scopes: p.Scopes, Expiration: p.Expiry, Extra: map[string]any{personExtra: p}}, nil
	}, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h).ServeHTTP(w, r)
}

// personExtra is where a request's person is in its TokenInfo.
const personExtra = "toolshelf.person"

// knowPerson puts the person of each request (the one whose token it
// carried) into the context its handlers get: with sessions, the go-sdk
// runs handlers on the context of the session's first request, and a
// person's token (for token exchange) changes over a session.
func (s *Server) knowPerson(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if extra := req.GetExtra(); extra != nil && extra.TokenInfo != nil {
			if p, ok := extra.TokenInfo.Extra[personExtra].(*identity.Person); ok {
				ctx = identity.WithPerson(ctx, p)
			}
		}
		return next(ctx, method, req)
	}
}

// signInFirst asks the person, through their client's URL elicitation,
// to sign in to the server a call needs their own sign-in to, and waits
// for the sign-in to end; it reports whether the call can be made again.
// A client without URL elicitation gets the URL in the tool error
// (upstream.SignInError's text) instead.
func signInFirst(ctx context.Context, ss *mcp.ServerSession, e *upstream.SignInError) bool {
	if ss == nil {
		return false
	}
	ip := ss.InitializeParams()
	if ip == nil || ip.Capabilities == nil || ip.Capabilities.Elicitation == nil || ip.Capabilities.Elicitation.URL == nil {
		return false
	}
	// A 2026-07-28 client is asked in an input-required round (the
	// call's client, see forClient); an earlier one on its session.
	var asked upstream.Client = ss
	if c := upstream.ClientOf(ctx); c != nil {
		asked = c
	}
	params := &mcp.ElicitParams{Mode: "url", URL: e.URL,
		Message: fmt.Sprintf("Sign in to %s: toolshelf calls it with your own account, and the call goes on once you have.", e.Server)}
	rounds := usesRounds(ss)
	if !rounds {
		// 2026-07-28 has no elicitation ids: the client learns the end
		// by the call's answer.
		params.ElicitationID = rand.Text()
	}
	res, err := asked.Elicit(ctx, params)
	if err != nil || res.Action != "accept" {
		return false
	}
	select {
	case <-e.Flow.Done():
	case <-ctx.Done():
		return false
	}
	if !rounds {
		_ = ss.NotifyElicitationComplete(ctx, &mcp.ElicitationCompleteParams{ElicitationID: params.ElicitationID})
	}
	return e.Flow.Err() == nil
}

// SigninsPath is where a person lists their own sign-ins to per-person
// servers (GET) and signs out of one (DELETE ?server=NAME), with their
// access token.
const SigninsPath = "/oauth/signins"

// signins serves SigninsPath: a person sees and ends their own sign-ins,
// never another's.
func (pp *People) signins() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, token, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		p, err := pp.Verifier.Verify(r.Context(), strings.TrimSpace(token))
		if err != nil {
			w.Header().Set("WWW-Authenticate", challenge(r, "invalid_token", "", ""))
			http.Error(w, "sign in: "+err.Error(), http.StatusUnauthorized)
			return
		}
		store := pp.Flows.Store()
		switch r.Method {
		case http.MethodGet:
			recs, err := store.List()
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			type signedIn struct {
				Server string    `json:"server"`
				URL    string    `json:"url"`
				Expiry time.Time `json:"expiry,omitzero"`
			}
			out := []signedIn{}
			for _, rec := range recs {
				if rec.Subject == p.Subject {
					out = append(out, signedIn{rec.Server, rec.Resource, rec.Expiry})
				}
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(out)
		case http.MethodDelete:
			server := r.URL.Query().Get("server")
			if server == "" {
				http.Error(w, "name the server: ?server=NAME", http.StatusBadRequest)
				return
			}
			n, err := store.DeletePerson(server, p.Subject)
			if err != nil {
				http.Error(w, err.Error(), http.StatusServiceUnavailable)
				return
			}
			if n == 0 {
				http.Error(w, fmt.Sprintf("%s is not signed in to %s", p, server), http.StatusNotFound)
				return
			}
			w.WriteHeader(http.StatusNoContent)
		default:
			w.Header().Set("Allow", "GET, DELETE")
			http.Error(w, "GET lists your sign-ins; DELETE ?server=NAME signs you out of one", http.StatusMethodNotAllowed)
		}
	})
}
