package gateway

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"html"
	"log/slog"
	"net/http"
	"time"

	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/signin"
	"golang.org/x/oauth2"
)

// A person's sign-in to a server ("signin": "per-person") is bound to
// the person: the link they are sent (signin.BeginPath) first has the
// browser sign in at the team's identity provider, and goes on to the
// server's authorization server only when that is the person the link
// was for. The browser then carries a cookie of that sign-in, and the
// return to the callback is taken only with it. Someone else who opens
// the link (one click on a link that looks genuine) is refused, logged,
// and the link is spent: without this, their account at the server would
// be the one the person's calls run as.

// ConfirmPath is where the identity provider sends the browser back, in
// the check of who opened a sign-in link. It is registered at the
// provider as a redirect URI of the gateway's client.
const ConfirmPath = "/oauth/confirm"

// consent checks people's sign-in links and returns (see above).
type consent struct {
	flows    *signin.Flows
	verifier *identity.Verifier
	logger   *slog.Logger
	cookies  *CookieSeal // this process's own key
}

func newConsent(pp *People, logger *slog.Logger) *consent {
	key := make([]byte, 32)
	rand.Read(key)
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	return &consent{flows: pp.Flows, verifier: pp.Verifier, logger: logger, cookies: NewCookieSeal(key)}
}

// consentFor is how long a check, and then a sign-in at the server, may
// take.
const consentFor = signin.FlowTimeout

// checking is the cookie of a check under way: the sign-in it is for,
// and the provider round's nonce and PKCE verifier.
type checking struct {
	State, Nonce, Verifier string
	Expires                int64
}

// bound is the cookie of a sign-in whose link its person opened.
type bound struct {
	State, Subject string
	Expires        int64
}

// begin serves a sign-in link: the browser goes to the identity provider
// to say who it is.
func (c *consent) begin(w http.ResponseWriter, r *http.Request) {
	state := r.URL.Query().Get("state")
	k, _, ok := c.flows.Pending(state)
	if !ok {
		consentPage(w, http.StatusNotFound, "This sign-in link is unknown, used or expired. Call the tool again from your agent for a new one.")
		return
	}
	oc, err := c.oauth2(r)
	if err != nil {
		c.logger.Error("a person's sign-in link cannot be checked: the identity provider's client is not usable", "server", k.Server, "error", err)
		consentPage(w, http.StatusServiceUnavailable, "This sign-in cannot be checked now (the identity provider cannot be used: "+err.Error()+"). Nothing was signed in.")
		return
	}
	ck := checking{State: state, Nonce: rand.Text(), Verifier: oauth2.GenerateVerifier(), Expires: time.Now().Add(consentFor).Unix()}
	// Lax: the browser comes back from the provider's site, a top-level
	// navigation that a Strict cookie would not go with.
	http.SetCookie(w, &http.Cookie{Name: cookieName("toolshelf_check_", state), Value: c.cookies.Seal("check", ck), Path: ConfirmPath,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode, MaxAge: int(consentFor.Seconds())})
	// The provider's state is the sign-in's own: a fleet sends the
	// return to the replica where the sign-in waits by it.
	http.Redirect(w, r, oc.AuthCodeURL(state, oauth2.S256ChallengeOption(ck.Verifier), oauth2.SetAuthURLParam("nonce", ck.Nonce)), http.StatusSeeOther)
}

// confirm takes the browser back from the identity provider: the person
// it signed in must be the one the sign-in is for.
func (c *consent) confirm(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	state := q.Get("state")
	var ck checking
	cookie, err := r.Cookie(cookieName("toolshelf_check_", state))
	if err != nil || !c.cookies.Open("check", cookie.Value, &ck) || ck.State != state || time.Now().Unix() > ck.Expires {
		consentPage(w, http.StatusBadRequest, "This check was not started in this browser, or took too long. Open the sign-in link again.")
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookie.Name, Path: ConfirmPath, MaxAge: -1, HttpOnly: true, Secure: true})
	if e := q.Get("error"); e != "" {
		consentPage(w, http.StatusForbidden, "The identity provider did not sign you in ("+e+"). Nothing was signed in.")
		return
	}
	k, auth, ok := c.flows.Pending(state)
	if !ok {
		consentPage(w, http.StatusNotFound, "This sign-in link is unknown, used or expired. Call the tool again from your agent for a new one.")
		return
	}
	oc, err := c.oauth2(r)
	if err != nil {
		consentPage(w, http.StatusServiceUnavailable, "This sign-in cannot be checked now: "+err.Error())
		return
	}
	p, err := c.verifier.SignIn(r.Context(), oc, q.Get("code"), ck.Verifier, ck.Nonce)
	if err != nil {
		c.logger.Warn("the check of who opened a sign-in link failed", "server", k.Server, "error", err)
		consentPage(w, http.StatusForbidden, "The identity provider's answer could not be checked ("+err.Error()+"). Nothing was signed in.")
		return
	}
	if p.Subject != k.Subject {
		c.logger.Warn("a person's sign-in link was opened by another person: refused, and the link is spent",
			"server", k.Server, "for", k.Subject, "opened_by", p.Subject)
		c.flows.Refuse(state, fmt.Errorf("the sign-in link was opened by someone else (%s), not by %s; it was refused and cancelled: call the tool again for a new link, and open it yourself", p, k.Subject))
		consentPage(w, http.StatusForbidden, fmt.Sprintf("This sign-in link is not yours: it is for another person, and you are signed in as %s. It has been cancelled; nothing was signed in.", p))
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName("toolshelf_signin_", state), Value: c.cookies.Seal("bound", bound{State: state, Subject: k.Subject, Expires: time.Now().Add(consentFor).Unix()}),
		Path: signin.CallbackPath, HttpOnly: true, Secure: true, SameSite: http.SameSiteLaxMode, MaxAge: int(consentFor.Seconds())})
	http.Redirect(w, r, auth, http.StatusSeeOther)
}

// callback wraps the flows' callback: a return for a sign-in under way is
// taken only from the browser its person confirmed in (its cookie); any
// other is refused, logged, and spends the sign-in.
func (c *consent) callback(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		state := r.URL.Query().Get("state")
		k, _, ok := c.flows.Pending(state)
		if !ok {
			next.ServeHTTP(w, r) // it says no sign-in waits for this
			return
		}
		var b bound
		cookie, err := r.Cookie(cookieName("toolshelf_signin_", state))
		if err != nil || !c.cookies.Open("bound", cookie.Value, &b) || b.State != state || b.Subject != k.Subject || time.Now().Unix() > b.Expires {
			c.logger.Warn("a sign-in's return came from a browser its person did not confirm in: refused, and the sign-in is spent", "server", k.Server, "for", k.Subject)
			c.flows.Refuse(state, errors.New("the sign-in's return did not come from the browser that opened its link as you; it was refused and cancelled: call the tool again for a new link"))
			consentPage(w, http.StatusForbidden, "This return is not from the browser the sign-in link was opened in. The sign-in has been cancelled; nothing was signed in.")
			return
		}
		http.SetCookie(w, &http.Cookie{Name: cookie.Name, Path: signin.CallbackPath, MaxAge: -1, HttpOnly: true, Secure: true})
		next.ServeHTTP(w, r)
	})
}

// oauth2 is the gateway's client at the identity provider, for a check
// that comes back to ConfirmPath.
func (c *consent) oauth2(r *http.Request) (*oauth2.Config, error) {
	if c.verifier == nil {
		return nil, errors.New(`no identity provider is configured ("identity")`)
	}
	return c.verifier.OAuth2(r.Context(), BaseURL(r)+ConfirmPath, []string{"openid"})
}

// cookieName is a cookie's name for a sign-in: one per sign-in, so that a
// browser may have several under way.
func cookieName(prefix, state string) string {
	sum := sha256.Sum256([]byte(state))
	return prefix + hex.EncodeToString(sum[:8])
}

// consentPage answers a browser with a short page saying what happened.
func consentPage(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<!doctype html><title>toolshelf sign-in</title><p id=\"consent\">%s</p>\n", html.EscapeString(msg))
}
