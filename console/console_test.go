package console

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/upstream"
)

const hostile = `Create an issue. <script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">`

// consoleOf serves a console over a catalog with a hostile description.
// Without a token, the console has one and every request comes signed
// in with it: for the tests that are not about signing in.
func consoleOf(t *testing.T, token string) string {
	return consoleWith(t, &Options{AuthToken: token})
}

// signedInToken is the token of a console whose test gave none.
const signedInToken = "token-of-a-signed-in-browser"

// consoleWith is consoleOf with more options (Host is set here).
func consoleWith(t *testing.T, opts *Options) string {
	t.Helper()
	srv := httptest.NewServer(consoleHandler(t, opts))
	t.Cleanup(srv.Close)
	return srv.URL
}

// consoleHandler is the handler of consoleWith's console.
func consoleHandler(t *testing.T, opts *Options) http.Handler {
	t.Helper()
	raw := func(name, desc string) json.RawMessage {
		b, _ := json.Marshal(map[string]any{"name": name, "description": desc, "inputSchema": map[string]any{"type": "object"}})
		return b
	}
	var entries []catalog.Entry
	for _, r := range []json.RawMessage{raw("create_issue", hostile), raw("list_issues", "List the issues of the tracker.")} {
		e, err := catalog.ParseTool("tracker", r)
		if err != nil {
			t.Fatal(err)
		}
		entries = append(entries, e)
	}
	cat := catalog.New(entries, nil)
	host, err := gateway.NewHost(upstream.Fixed(cat, "a test catalog"), nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { host.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	opts.Host = host
	h := New(opts).Handler()
	if opts.AuthToken == "" {
		// A console always has a token (an empty one refuses every
		// page): sign every request in.
		opts.AuthToken = signedInToken
		h = New(opts).Handler()
		inner := h
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") == "" {
				r.Header.Set("Authorization", "Bearer "+signedInToken)
			}
			inner.ServeHTTP(w, r)
		})
	}
	return h
}

func get(t *testing.T, c *http.Client, u string, hdr ...string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest("GET", u, nil)
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// What a server wrote is escaped: the hostile description appears as
// text, never as markup; every page says that no inline script runs.
func TestServerTextIsEscaped(t *testing.T) {
	base := consoleOf(t, "")
	status, body := get(t, http.DefaultClient, base+"/console/search?q=create+an+issue")
	if status != 200 || !strings.Contains(body, "mcp__tracker__create_issue") {
		t.Fatalf("%d %s", status, body)
	}
	if strings.Contains(body, "<script>window") || strings.Contains(body, "<img src=x") {
		t.Errorf("the description reached the page as markup:\n%s", body)
	}
	if !strings.Contains(body, "&lt;script&gt;") {
		t.Errorf("the description is not on the page, escaped")
	}
	resp, err := http.Get(base + "/console/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
		t.Errorf("CSP %q", csp)
	}
}

// With a token, a page needs it (or the login cookie); the login form
// sets the cookie only for the right token; a change needs the page's
// CSRF token and the console's origin.
func TestAuthAndCSRF(t *testing.T) {
	const token = "admin-token-0123456789abcdef"
	base := consoleOf(t, token)
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if status, _ := get(t, noRedirect, base+"/console/"); status != http.StatusSeeOther {
		t.Errorf("a page without the token: %d, want a redirect to the login", status)
	}
	if status, _ := get(t, noRedirect, base+"/console/events"); status != http.StatusUnauthorized {
		t.Errorf("the events without the token: %d", status)
	}
	if status, body := get(t, noRedirect, base+"/console/", "Authorization", "Bearer "+token); status != 200 || !strings.Contains(body, "tracker") {
		t.Errorf("with the bearer token: %d", status)
	}

	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar}
	post := func(path string, form url.Values, hdr ...string) (int, string) {
		req, _ := http.NewRequest("POST", base+path, strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		for i := 0; i+1 < len(hdr); i += 2 {
			req.Header.Set(hdr[i], hdr[i+1])
		}
		resp, err := browser.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	if _, body := post("/console/login", url.Values{"token": {"wrong"}}, "Origin", base); !strings.Contains(body, "not the admin token") {
		t.Errorf("a wrong token logged in: %s", body)
	}
	if status, _ := post("/console/login", url.Values{"token": {token}}, "Origin", "https://evil.example"); status != http.StatusForbidden {
		t.Errorf("a login from another site: %d", status)
	}
	if status, body := post("/console/login", url.Values{"token": {token}}, "Origin", base); status != 200 || !strings.Contains(body, "<h1>Servers</h1>") {
		t.Fatalf("login: %d %s", status, body)
	}
	u, _ := url.Parse(base + "/console/")
	for _, c := range jar.Cookies(u) {
		if strings.Contains(c.Value, token) {
			t.Errorf("the cookie holds the token")
		}
	}
	form := url.Values{"server": {"tracker"}, "tool": {"create_issue"}, "verb": {"approve"}}
	if status, body := post("/console/quarantine", form, "Origin", base); status != http.StatusForbidden || !strings.Contains(body, "CSRF") {
		t.Errorf("a change without the CSRF token: %d %s", status, body)
	}
	form.Set("csrf", "0000")
	if status, _ := post("/console/quarantine", form, "Sec-Fetch-Site", "cross-site"); status != http.StatusForbidden {
		t.Errorf("a forged cross-site change: %d", status)
	}
}

// The activity page shows the audit log, filtered, with online recall;
// the learned page lists the pairs and Forget (with the page's CSRF
// token) deletes one.
func TestActivityAndLearned(t *testing.T) {
	dir := t.TempDir()
	auditFile := filepath.Join(dir, "audit.jsonl")
	var lines []string
	for i, r := range []audit.Record{
		{Kind: "search", Profile: "everything", Tool: "search_tools", Outcome: "ok"},
		{Kind: "call", Profile: "everything", Server: "tracker", Tool: "mcp__tracker__create_issue", Outcome: "ok", Rank: 1},
		{Kind: "call", Profile: "ops", Server: "tracker", Tool: "mcp__tracker__list_issues", Outcome: "tool_error", Rank: 3},
	} {
		r.Time = time.Now().Add(time.Duration(i-5) * time.Minute)
		b, _ := json.Marshal(r)
		lines = append(lines, string(b))
	}
	if err := os.WriteFile(auditFile, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	st := learn.Open(filepath.Join(dir, "learned.db"), nil)
	st.Record("everything", "open an issue", "mcp__tracker__create_issue")
	st.Record("everything", "list the issues", "mcp__tracker__list_issues")
	if err := st.Flush(); err != nil {
		t.Fatal(err)
	}
	base := consoleWith(t, &Options{AuditFile: auditFile, Learn: st})

	_, all := get(t, http.DefaultClient, base+"/console/activity")
	if !strings.Contains(all, "mcp__tracker__list_issues") || !strings.Contains(all, "Of 2 calls after a search that returned the tool, 50% had it ranked first and 100% in the top 5") {
		t.Errorf("activity:\n%s", all)
	}
	if _, ops := get(t, http.DefaultClient, base+"/console/activity?profile=ops"); strings.Contains(ops, "mcp__tracker__create_issue") || !strings.Contains(ops, "tool_error") {
		t.Errorf("activity of ops:\n%s", ops)
	}

	_, page := get(t, http.DefaultClient, base+"/console/learned")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil || !strings.Contains(page, "open an issue") {
		t.Fatalf("learned:\n%s", page)
	}
	form := url.Values{"csrf": {m[1]}, "profile": {"everything"}, "tool": {"mcp__tracker__create_issue"}, "query": {"open an issue"}}
	// The right CSRF token from another site is refused all the same:
	// the origin check holds by itself.
	for _, hdr := range [][2]string{{"Sec-Fetch-Site", "cross-site"}, {"Origin", "https://evil.example"}, {"Referer", "https://evil.example/page"}, {"", ""}} {
		req, _ := http.NewRequest("POST", base+"/console/learned", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		if hdr[0] != "" {
			req.Header.Set(hdr[0], hdr[1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if pairs, _ := st.Pairs(); resp.StatusCode != http.StatusForbidden || len(pairs) != 2 {
			t.Errorf("Forget with the right token and %s %q: %d, %d pairs left", hdr[0], hdr[1], resp.StatusCode, len(pairs))
		}
	}
	req, _ := http.NewRequest("POST", base+"/console/learned", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", base)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	pairs, _ := st.Pairs()
	if resp.StatusCode != 200 || len(pairs) != 1 || pairs[0].Query != "list the issues" {
		t.Errorf("after Forget: %d %+v", resp.StatusCode, pairs)
	}
}

// TestConsoleWithoutTokenRefusesAll: a console without a token serves no
// page and takes no sign-in (serve always gives it one).
func TestConsoleWithoutTokenRefusesAll(t *testing.T) {
	cat := catalog.New(nil, nil)
	host, err := gateway.NewHost(upstream.Fixed(cat, "empty"), nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(New(&Options{Host: host}).Handler())
	defer srv.Close()
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for _, path := range []string{"/console/", "/console/search?q=x", "/console/quarantine", "/console/servers.part", "/console/login?token="} {
		if status, _ := get(t, noRedirect, srv.URL+path); status == http.StatusOK {
			t.Errorf("%s: 200 without a token", path)
		}
	}
	if status, _ := get(t, noRedirect, srv.URL+"/console/", "Authorization", "Bearer "); status == http.StatusOK {
		t.Errorf("an empty bearer token opened the console")
	}
}

// TestSignInLinkAndLimit: the sign-in link serve prints signs a browser
// in; five failures a minute from one address block it, each logged.
func TestSignInLinkAndLimit(t *testing.T) {
	var logged testenv.Buffer
	base := consoleWith(t, &Options{AuthToken: "the-real-token-1234", Logger: slog.New(slog.NewTextHandler(&logged, nil))})
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	if status, body := get(t, c, base+"/console/login?token=the-real-token-1234"); status != 200 || !strings.Contains(body, "Token budget") {
		t.Fatalf("sign-in link: %d %.200s", status, body)
	}
	other := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i := range 5 {
		if status, _ := get(t, other, base+"/console/login?token=guess-"+strconv.Itoa(i)); status != http.StatusSeeOther {
			t.Fatalf("failure %d: %d", i, status)
		}
	}
	if status, _ := get(t, other, base+"/console/login?token=the-real-token-1234"); status != http.StatusTooManyRequests {
		t.Errorf("the sixth try in a minute: %d, want 429", status)
	}
	if n := strings.Count(logged.String(), "console sign-in failed"); n != 5 || strings.Contains(logged.String(), "guess-") {
		t.Errorf("log (%d failures):\n%s", n, logged.String())
	}
}
