package console

import (
	"crypto/rand"
	"crypto/subtle"
	"errors"
	"fmt"
	"html"
	"net/http"
	"slices"
	"time"

	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/identity"
	"golang.org/x/oauth2"
)

// People lets the team's people sign in to the console with the identity
// provider (OpenID Connect's authorization code flow, with PKCE); claim
// rules say who may look and who may change things (approve, deny,
// forget). The admin token stays a way in when the provider is down.
type People struct {
	Verifier *identity.Verifier
	// View are the claims that let a person see the console; when empty,
	// Act's.
	View map[string][]string
	// Act are the claims that let a person approve or deny a tool and
	// forget what was learned.
	Act map[string][]string
}

// viewer is who a console request is: the admin (by the token) or a
// person who signed in.
type viewer struct {
	Name   string // "admin", or the person's email or subject
	CanAct bool
	// raw is the session's cookie value ("bearer" for the token), which
	// the CSRF tokens are bound to.
	raw string
}

// personSession is what a person's session cookie holds, signed.
type personSession struct {
	Subject string `json:"sub"`
	Name    string `json:"name"`
	Act     bool   `json:"act"`
	Expires int64  `json:"exp"`
}

// sessionFor is how long a person's console session lasts.
const sessionFor = 8 * time.Hour

// flowCookie carries a sign-in under way (state, nonce, PKCE verifier),
// signed: the browser comes back with it from the provider.
const flowCookie = "toolshelf_console_flow"

type flowState struct {
	State, Nonce, Verifier string
	Expires                int64
}

// sealed signs v into a cookie value for kind (gateway.CookieSeal).
func (c *Console) sealed(kind string, v any) string { return c.cookies.Seal(kind, v) }

// unseal reads a cookie value sealed for kind into v.
func (c *Console) unseal(kind, value string, v any) bool { return c.cookies.Open(kind, value, v) }

// person reads a person's session from its cookie value.
func (c *Console) person(value string) (*viewer, bool) {
	var s personSession
	if c.opts.People == nil || !c.unseal("person", value, &s) || time.Now().Unix() > s.Expires {
		return nil, false
	}
	return &viewer{Name: s.Name, CanAct: s.Act, raw: value}, true
}

// callbackPath is where the provider sends the browser back.
const callbackPath = Prefix + "/login/callback"

// scopes are what the console asks the provider for: the person's id,
// email and profile, and every claim its rules name that the provider
// offers as a scope (groups, say).
func (pp *People) scopes(meta *identity.Metadata) []string {
	out := []string{"openid", "email", "profile"}
	for _, rule := range []map[string][]string{pp.View, pp.Act} {
		for name := range rule {
			if slices.Contains(meta.ScopesSupported, name) && !slices.Contains(out, name) {
				out = append(out, name)
			}
		}
	}
	return out
}

// startSignIn sends the browser to the provider.
func (c *Console) startSignIn(w http.ResponseWriter, r *http.Request) {
	pp := c.opts.People
	meta, err := pp.Verifier.Metadata(r.Context())
	if err != nil {
		c.signInFailed(w, r, http.StatusServiceUnavailable, "the identity provider cannot be reached: "+err.Error())
		return
	}
	oc, err := pp.Verifier.OAuth2(r.Context(), gateway.BaseURL(r)+callbackPath, pp.scopes(meta))
	if err != nil {
		c.signInFailed(w, r, http.StatusServiceUnavailable, err.Error())
		return
	}
	f := flowState{State: rand.Text(), Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Expires: time.Now().Add(10 * time.Minute).Unix()}
	// Lax: the browser comes back from the provider's site, a top-level
	// navigation that a Strict cookie would not go with.
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Value: c.sealed("flow", f), Path: Prefix + "/login", HttpOnly: true, Secure: true,
		SameSite: http.SameSiteLaxMode, MaxAge: 600})
	http.Redirect(w, r, oc.AuthCodeURL(f.State, oauth2.S256ChallengeOption(f.Verifier), oauth2.SetAuthURLParam("nonce", f.Nonce)), http.StatusSeeOther)
}

// finishSignIn takes the browser back from the provider: the code is
// redeemed, the ID token checked, and a person the rules let in gets a
// session.
func (c *Console) finishSignIn(w http.ResponseWriter, r *http.Request) {
	pp := c.opts.People
	q := r.URL.Query()
	var f flowState
	ck, err := r.Cookie(flowCookie)
	switch {
	case err != nil || !c.unseal("flow", ck.Value, &f) || time.Now().Unix() > f.Expires:
		c.signInFailed(w, r, http.StatusBadRequest, "this sign-in was not started here, or took longer than ten minutes: start again")
		return
	case subtle.ConstantTimeCompare([]byte(q.Get("state")), []byte(f.State)) != 1:
		c.signInFailed(w, r, http.StatusBadRequest, "the provider came back with another sign-in's state: start again")
		return
	case q.Get("error") != "":
		c.signInFailed(w, r, http.StatusForbidden, "the provider refused: "+q.Get("error"))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: flowCookie, Path: Prefix + "/login", MaxAge: -1, HttpOnly: true, Secure: true})
	meta, err := pp.Verifier.Metadata(r.Context())
	if err != nil {
		c.signInFailed(w, r, http.StatusServiceUnavailable, err.Error())
		return
	}
	oc, err := pp.Verifier.OAuth2(r.Context(), gateway.BaseURL(r)+callbackPath, pp.scopes(meta))
	if err != nil {
		c.signInFailed(w, r, http.StatusServiceUnavailable, err.Error())
		return
	}
	p, err := pp.Verifier.SignIn(r.Context(), oc, q.Get("code"), f.Verifier, f.Nonce)
	var invalid *identity.InvalidError
	if err != nil {
		status := http.StatusBadGateway
		if errors.As(err, &invalid) {
			status = http.StatusForbidden
		}
		c.log.Warn("console sign-in with the provider failed", "client", clientAddr(r), "error", err)
		c.signInFailed(w, r, status, err.Error())
		return
	}
	view := pp.View
	if len(view) == 0 {
		view = pp.Act
	}
	act := p.Matches(pp.Act)
	if !act && !p.Matches(view) {
		c.log.Warn("console sign-in refused by the claim rules", "person", p.String())
		c.signInFailed(w, r, http.StatusForbidden, fmt.Sprintf("%s may not use the console: it needs %s", p, identity.DescribeClaims(view)))
		return
	}
	s := personSession{Subject: p.Subject, Name: p.String(), Act: act, Expires: time.Now().Add(sessionFor).Unix()}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: "p." + c.sealed("person", s), Path: Prefix,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode, MaxAge: int(sessionFor.Seconds())})
	c.log.Info("console: signed in", "person", p.String(), "canAct", act)
	// A page, not a redirect: the browser arrived from the provider's
	// site, and would not send the Strict cookie on a redirect that
	// continued that navigation.
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	fmt.Fprintf(w, `<!doctype html><meta http-equiv="refresh" content="0;url=%s/"><p>Signed in as %s. <a href="%s/">Open the console</a>.</p>`,
		Prefix, html.EscapeString(p.String()), Prefix)
}

// signInFailed shows the sign-in page with why the sign-in failed.
func (c *Console) signInFailed(w http.ResponseWriter, r *http.Request, status int, why string) {
	c.renderStatus(w, r, status, "login", map[string]any{"Why": why})
}
