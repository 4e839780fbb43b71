package console

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/upstream"
)

const hostile = `Create an issue. <script>window.__pwned=1</script><img src=x onerror="window.__pwned=1">`

// consoleOf serves a console over a catalog with a hostile description.
func consoleOf(t *testing.T, token string) string {
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
	srv := httptest.NewServer(New(&Options{Host: host, AuthToken: token}).Handler())
	t.Cleanup(srv.Close)
	return srv.URL
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
