package console

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/learn"
)

// TestPeopleSignIn: the team's people sign in to the console through a
// real OpenID provider (oidc-provider; its login and consent pages in
// Debian's chromium): alice (sre) may act, bob (dev) may look and is
// shown no Forget, carol (no group) is refused with the rule she lacks.
func TestPeopleSignIn(t *testing.T) {
	chrome := testenv.Chromium(t)
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(srv.Close)
	idp := testenv.StartIDP(t, &testenv.IDPOptions{Redirects: []string{srv.URL + callbackPath}})
	v, err := identity.New(identity.Config{Issuer: idp.Issuer, Audience: "toolshelf-api", ClientID: testenv.GatewayClient, ClientSecret: testenv.GatewaySecret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st := learn.Open(filepath.Join(t.TempDir(), "learned.db"), nil)
	st.Record("everything", "open an issue", "mcp__tracker__create_issue")
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	h = consoleHandler(t, &Options{AuthToken: "admin-token-0123456789", Learn: st, People: &People{Verifier: v,
		View: map[string][]string{"groups": {"sre", "dev"}}, Act: map[string][]string{"groups": {"sre"}}}})

	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*time.Minute))
	defer cancel()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox)
	alloc, stopAlloc := chromedp.NewExecAllocator(ctx, opts...)
	defer stopAlloc()
	signIn := func(who string) (page string) {
		t.Helper()
		browser, stop := chromedp.NewContext(alloc)
		defer stop()
		// The first action starts the browser, which lives as long as
		// the context of that action.
		if err := chromedp.Do(browser, chromedp.Navigate(srv.URL+Prefix+"/learned")); err != nil {
			t.Fatal(err)
		}
		steps := []chromedp.Action[chromedp.Void]{
			chromedp.WaitVisible(`#provider`),
			chromedp.Click(`#provider`),
			chromedp.WaitVisible(`input[name=login]`),
			chromedp.SendKeys(`input[name=login]`, who),
			chromedp.SendKeys(`input[name=password]`, "any password"),
			chromedp.Submit(`input[name=login]`),
			// The login page has a submit button too: the consent page is
			// the one after the login form is gone.
			chromedp.WaitNotPresent(`input[name=login]`),
			chromedp.WaitVisible(`button[type=submit]`),
			chromedp.Click(`button[type=submit]`),
			chromedp.WaitVisible(`#viewer, #why`),
		}
		for i, step := range steps {
			sctx, scancel := context.WithTimeout(browser, testenv.Timeout(30*time.Second))
			err := chromedp.Do(sctx, step)
			scancel()
			if err != nil {
				html, _ := chromedp.Run(browser, chromedp.OuterHTML(chromedp.CSS("html")))
				loc, _ := chromedp.Run(browser, chromedp.Location())
				t.Fatalf("%s signing in, step %d: %v at %s\n%.3000s", who, i, err, loc, html)
			}
		}
		html, err := chromedp.Run(browser, chromedp.OuterHTML(chromedp.CSS("html")))
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(html, `id="why"`) {
			return html
		}
		// Signed in: the page the person asked for at first.
		if err := chromedp.Do(browser, chromedp.Navigate(srv.URL+Prefix+"/learned"), chromedp.WaitVisible(`#viewer`)); err != nil {
			t.Fatal(err)
		}
		if html, err = chromedp.Run(browser, chromedp.OuterHTML(chromedp.CSS("html"))); err != nil {
			t.Fatal(err)
		}
		return html
	}
	if page := signIn("alice"); !strings.Contains(page, "alice@example.com</span>") || !strings.Contains(page, ">Forget</button>") {
		t.Errorf("alice, who may act, sees:\n%.3000s", page)
	}
	if page := signIn("bob"); !strings.Contains(page, "bob@example.com (looks only)") || strings.Contains(page, ">Forget</button>") {
		t.Errorf("bob, who may look, sees:\n%.3000s", page)
	}
	if page := signIn("carol"); !strings.Contains(page, "carol@example.com may not use the console: it needs groups=sre|dev") {
		t.Errorf("carol, of no group, sees:\n%.3000s", page)
	}
}

// TestLookingIsNotActing: a person the rules let look, not act, is
// refused a change even with the page's CSRF token; one who may act, and
// the admin token, are not.
func TestLookingIsNotActing(t *testing.T) {
	st := learn.Open(filepath.Join(t.TempDir(), "learned.db"), nil)
	st.Record("everything", "open an issue", "mcp__tracker__create_issue")
	st.Record("everything", "list the issues", "mcp__tracker__list_issues")
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	v, err := identity.New(identity.Config{Issuer: "https://idp.example.com", Audience: "toolshelf"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &Options{AuthToken: "admin-token-0123456789", Learn: st, People: &People{Verifier: v, Act: map[string][]string{"groups": {"sre"}}}}
	consoleHandler(t, opts) // gives opts its Host
	c := New(opts)
	srv := httptest.NewServer(c.Handler())
	t.Cleanup(srv.Close)
	forget := func(cookie, query string) (int, string) {
		raw := strings.TrimPrefix(cookie, "p.")
		form := url.Values{"csrf": {c.sign("csrf", raw)}, "profile": {"everything"}, "tool": {"mcp__tracker__create_issue"}, "query": {query}}
		req, _ := http.NewRequest("POST", srv.URL+Prefix+"/learned", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", srv.URL)
		req.AddCookie(&http.Cookie{Name: cookieName, Value: cookie})
		client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
		resp, err := client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	exp := time.Now().Add(time.Hour).Unix()
	looker := "p." + c.sealed("person", personSession{Subject: "bob", Name: "bob@example.com", Act: false, Expires: exp})
	if status, body := forget(looker, "open an issue"); status != http.StatusForbidden || !strings.Contains(body, "you may look, not change") {
		t.Errorf("a person who may only look: %d %s", status, body)
	}
	actor := "p." + c.sealed("person", personSession{Subject: "alice", Name: "alice@example.com", Act: true, Expires: exp})
	if status, body := forget(actor, "open an issue"); status != http.StatusSeeOther {
		t.Errorf("a person who may act: %d %s", status, body)
	}
	expired := "p." + c.sealed("person", personSession{Subject: "alice", Name: "alice@example.com", Act: true, Expires: time.Now().Add(-time.Minute).Unix()})
	if status, _ := forget(expired, "list the issues"); status == http.StatusSeeOther {
		t.Errorf("an expired session acted")
	}
	forged := "p." + c.sealed("person", personSession{Subject: "mallory", Act: true, Expires: exp})
	forged = forged[:len(forged)-4] + "0000"
	if status, _ := forget(forged, "list the issues"); status == http.StatusSeeOther {
		t.Errorf("a forged session acted")
	}
	if pairs, _ := st.Pairs(); len(pairs) != 1 {
		t.Errorf("%d pairs left, want 1", len(pairs))
	}
}
