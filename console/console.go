// Package console serves toolshelf's web console at /console: the state
// of a running gateway on a few server-rendered pages (servers and what
// their tools cost, a search playground, the quarantined tools with
// approve and deny, the audit log, what was learned), for the operator
// who holds the admin token and, with an identity provider, for the
// team's people its claim rules let look or act ([People]).
//
// Every value that came from a server is escaped by html/template; the
// pages run no inline script (a Content-Security-Policy forbids it) and
// load nothing from another host; a request that changes state needs the
// page's CSRF token and the console's own origin.
package console

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/pin"
)

//go:embed assets
var assets embed.FS

// Options configure a console. Host is required.
type Options struct {
	Host *gateway.Host
	// AuthToken is the admin token. Every page needs it: as a bearer
	// token, through the sign-in form, or through a sign-in link
	// (login?token=...), which set a cookie derived from it. Empty
	// refuses every page: serve makes a token when none is given.
	AuthToken string
	// Pins is the lock file the pool judges tools by; nil hides Approve
	// and Deny.
	Pins *pin.Lock
	// Audit reads serve's audit records (its --audit file, or the shared
	// store's) from since on, for the activity page; nil when there is no
	// audit log. AuditFile is the same, from a file.
	Audit     func(ctx context.Context, since time.Time) ([]audit.Record, error)
	AuditFile string
	// Learn is what was learned from use, for the learned page.
	Learn *learn.Store
	// Logger receives approvals, denials and forgotten pairs.
	Logger *slog.Logger
	// People, when set, lets the team's people sign in with the identity
	// provider, beside the admin token.
	People *People
	// Key signs the sign-in cookies and the forms' CSRF tokens: a fleet's
	// replicas share one (fleet.Member.Key), so that a sign-in holds on
	// every replica. When nil, a key of this process's own, so that a
	// restart signs everyone out.
	Key []byte
	// Attempts, when set, counts failed sign-ins across a fleet
	// (fleet.Member), beside this process's own count.
	Attempts Attempts
	// RegistryNotes, when set, says by server what its registry last said
	// of the version it runs, when that is deprecated or deleted
	// (toolshelf outdated): the servers page flags them.
	RegistryNotes func() map[string]string
	// Ledger, when set, is what the Usage page reads: model spend per
	// person, the budgets, the most-used tools.
	Ledger *ledger.Ledger
}

// Attempts count failed sign-ins by client address over a window, for
// every replica of a fleet.
type Attempts interface {
	// Failed records a failure of addr and returns how many addr made in
	// the last window.
	Failed(ctx context.Context, addr string, window time.Duration) (int, error)
	// Failures returns how many failures addr made in the last window,
	// and how long until the oldest of them is out of it.
	Failures(ctx context.Context, addr string, window time.Duration) (int, time.Duration, error)
}

// Console is the web console. It is safe for concurrent use.
type Console struct {
	opts  Options
	log   *slog.Logger
	pages *template.Template
	// key signs the login cookie and the CSRF tokens; it is new for each
	// process, so a restart logs everyone out.
	key []byte
	// cookies seals the sign-in's and the session's cookies with key.
	cookies *gateway.CookieSeal
	// tries bounds sign-in failures, by client address.
	tries *limiter
}

// New returns a console of opts.Host.
func New(opts *Options) *Console {
	c := &Console{opts: *opts, key: opts.Key, tries: newLimiter(signInFailures, time.Minute)}
	if c.opts.Audit == nil && c.opts.AuditFile != "" {
		file := c.opts.AuditFile
		c.opts.Audit = func(_ context.Context, since time.Time) ([]audit.Record, error) {
			recs, _, err := audit.Read(file, since)
			return recs, err
		}
	}
	if len(c.key) == 0 {
		c.key = make([]byte, 32)
		rand.Read(c.key)
	}
	c.cookies = gateway.NewCookieSeal(c.key)
	c.log = c.opts.Logger
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	c.pages = template.Must(template.New("").Funcs(funcs).ParseFS(assets, "assets/*.html"))
	return c
}

// Prefix is where the console is served.
const Prefix = "/console"

// Handler serves the console under Prefix.
func (c *Console) Handler() http.Handler {
	mux := http.NewServeMux()
	static, _ := fs.Sub(assets, "assets")
	mux.Handle("GET "+Prefix+"/static/", http.StripPrefix(Prefix+"/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET "+Prefix+"/login", c.loginPage)
	mux.HandleFunc("POST "+Prefix+"/login", c.login)
	if c.opts.People != nil {
		mux.HandleFunc("GET "+Prefix+"/login/provider", c.startSignIn)
		mux.HandleFunc("GET "+callbackPath, c.finishSignIn)
	}
	mux.Handle("GET "+Prefix+"/{$}", c.auth(c.serversPage))
	mux.Handle("GET "+Prefix+"/servers.part", c.auth(c.serversPart))
	mux.Handle("GET "+Prefix+"/events", c.auth(c.events))
	mux.Handle("GET "+Prefix+"/search", c.auth(c.searchPage))
	mux.Handle("GET "+Prefix+"/quarantine", c.auth(c.quarantinePage))
	mux.Handle("POST "+Prefix+"/quarantine", c.auth(c.changing(c.judge)))
	mux.Handle("GET "+Prefix+"/activity", c.auth(c.activityPage))
	mux.Handle("GET "+Prefix+"/learned", c.auth(c.learnedPage))
	mux.Handle("GET "+Prefix+"/usage", c.auth(c.usagePage))
	mux.Handle("POST "+Prefix+"/learned", c.auth(c.changing(c.forget)))
	mux.Handle("POST "+Prefix+"/servers/retry", c.auth(c.changing(c.retry)))
	mux.Handle(Prefix+"/", c.auth(c.notFound))
	mux.Handle(Prefix, http.RedirectHandler(Prefix+"/", http.StatusMovedPermanently))
	return secure(mux)
}

// secure adds the headers every response carries: no inline script, no
// other host, no framing, no sniffing.
func secure(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hd := w.Header()
		hd.Set("Content-Security-Policy", "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'; form-action 'self'")
		hd.Set("X-Content-Type-Options", "nosniff")
		hd.Set("Referrer-Policy", "same-origin")
		hd.Set("X-Frame-Options", "DENY")
		hd.Set("Cache-Control", "no-store")
		h.ServeHTTP(w, r)
	})
}

// cookieName holds the login: an HMAC of the admin token under the
// process's key, never the token itself.
const cookieName = "toolshelf_console"

func (c *Console) sign(parts ...string) string {
	m := hmac.New(sha256.New, c.key)
	for _, p := range parts {
		m.Write([]byte(p))
		m.Write([]byte{0})
	}
	return hex.EncodeToString(m.Sum(nil))
}

// session is who the request is: the admin, by the token (as a bearer
// token, or the login cookie derived from it), or a person who signed in
// with the identity provider (People); ok is false for anyone else, and
// for the admin's ways in when the console has no token.
func (c *Console) session(r *http.Request) (*viewer, bool) {
	ck, cerr := r.Cookie(cookieName)
	if cerr == nil && strings.HasPrefix(ck.Value, "p.") {
		return c.person(strings.TrimPrefix(ck.Value, "p."))
	}
	if c.opts.AuthToken == "" {
		return nil, false
	}
	if h := r.Header.Get("Authorization"); len(h) > 7 && strings.EqualFold(h[:7], "bearer ") &&
		subtle.ConstantTimeCompare([]byte(h[7:]), []byte(c.opts.AuthToken)) == 1 {
		return &viewer{Name: "admin", CanAct: true, raw: "bearer"}, true
	}
	want := c.sign("login", c.opts.AuthToken)
	if cerr == nil && subtle.ConstantTimeCompare([]byte(ck.Value), []byte(want)) == 1 {
		return &viewer{Name: "admin", CanAct: true, raw: ck.Value}, true
	}
	return nil, false
}

// auth serves h to a request with the token or a person's session, and
// sends others to the login form (a page) or refuses them (anything
// else).
func (c *Console) auth(h http.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if _, ok := c.session(r); !ok {
			if r.Method == http.MethodGet && !strings.HasSuffix(r.URL.Path, ".part") && r.URL.Path != Prefix+"/events" {
				http.Redirect(w, r, Prefix+"/login", http.StatusSeeOther)
				return
			}
			http.Error(w, "toolshelf console: sign in first (the admin token, or your team's account)", http.StatusUnauthorized)
			return
		}
		h(w, r)
	})
}

// csrf is the token a page's forms carry: bound to the session, so a
// page of another site cannot know it.
func (c *Console) csrf(r *http.Request) string {
	raw := ""
	if v, ok := c.session(r); ok {
		raw = v.raw
	}
	return c.sign("csrf", raw)
}

// changing guards a request that changes state: it must come from a page
// of the console's own origin and carry that page's CSRF token.
func (c *Console) changing(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if !sameOrigin(r) {
			http.Error(w, "toolshelf console: a request from another site is refused", http.StatusForbidden)
			return
		}
		r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
		if subtle.ConstantTimeCompare([]byte(r.PostFormValue("csrf")), []byte(c.csrf(r))) != 1 {
			http.Error(w, "toolshelf console: the form's CSRF token is missing or wrong; reload the page", http.StatusForbidden)
			return
		}
		if v, _ := c.session(r); v == nil || !v.CanAct {
			needs := "the admin token"
			if c.opts.People != nil {
				needs += " or a person with " + identity.DescribeClaims(c.opts.People.Act)
			}
			http.Error(w, "toolshelf console: you may look, not change: approving, denying, forgetting and retrying take "+needs, http.StatusForbidden)
			return
		}
		h(w, r)
	}
}

// sameOrigin reports whether a browser says the request comes from the
// console's own origin (Sec-Fetch-Site, else Origin, else Referer).
func sameOrigin(r *http.Request) bool {
	if s := r.Header.Get("Sec-Fetch-Site"); s != "" {
		return s == "same-origin"
	}
	from := r.Header.Get("Origin")
	if from == "" {
		from = r.Header.Get("Referer")
	}
	u, err := url.Parse(from)
	return from != "" && err == nil && u.Host == r.Host
}

// loginPage is the sign-in form, or, for the sign-in link serve prints
// (login?token=...), the sign-in itself.
func (c *Console) loginPage(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("token") {
		c.signIn(w, r, r.URL.Query().Get("token"))
		return
	}
	c.render(w, r, "login", map[string]any{"Failed": r.URL.Query().Has("failed")})
}

// renderStatus is render with an HTTP status.
func (c *Console) renderStatus(w http.ResponseWriter, r *http.Request, status int, name string, data map[string]any) {
	c.render(&statusWriter{ResponseWriter: w, status: status}, r, name, data)
}

// statusWriter writes status instead of 200.
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.status != 0 {
		code, s.status = s.status, 0
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.status != 0 {
		s.ResponseWriter.WriteHeader(s.status)
		s.status = 0
	}
	return s.ResponseWriter.Write(b)
}

// login checks the token typed into the form and sets the cookie.
func (c *Console) login(w http.ResponseWriter, r *http.Request) {
	if !sameOrigin(r) {
		http.Error(w, "toolshelf console: a request from another site is refused", http.StatusForbidden)
		return
	}
	r.Body = http.MaxBytesReader(w, r.Body, 64<<10)
	c.signIn(w, r, r.PostFormValue("token"))
}

// signInFailures is how many failed sign-ins a client address may make a
// minute: a person mistyping, not a program guessing.
const signInFailures = 5

// signIn checks a token and sets the cookie. Each failure is logged with
// the client's address (never what was typed); past signInFailures a
// minute, the address is refused until the minute is over.
func (c *Console) signIn(w http.ResponseWriter, r *http.Request, token string) {
	client := clientAddr(r)
	if wait := c.blocked(r.Context(), client); wait > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(wait.Seconds())+1))
		http.Error(w, "toolshelf console: too many failed sign-ins from this address; try again in a minute", http.StatusTooManyRequests)
		return
	}
	if c.opts.AuthToken == "" || subtle.ConstantTimeCompare([]byte(token), []byte(c.opts.AuthToken)) != 1 {
		n := c.failed(r.Context(), client)
		c.log.Warn("console sign-in failed", "client", client, "failures", n)
		http.Redirect(w, r, Prefix+"/login?failed", http.StatusSeeOther)
		return
	}
	http.SetCookie(w, &http.Cookie{Name: cookieName, Value: c.sign("login", c.opts.AuthToken), Path: Prefix,
		HttpOnly: true, Secure: true, SameSite: http.SameSiteStrictMode, MaxAge: 12 * 3600})
	http.Redirect(w, r, Prefix+"/", http.StatusSeeOther)
}

// render writes a page, with what every page needs.
func (c *Console) render(w http.ResponseWriter, r *http.Request, name string, data map[string]any) {
	data["Page"] = name
	data["CSRF"] = c.csrf(r)
	data["Prefix"] = Prefix
	data["Provider"] = c.opts.People != nil
	if v, ok := c.session(r); ok {
		data["Viewer"], data["CanAct"] = v.Name, v.CanAct
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if err := c.pages.ExecuteTemplate(w, name, data); err != nil {
		c.log.Warn("console page", "page", name, "error", err)
	}
}
