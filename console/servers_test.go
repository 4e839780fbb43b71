package console

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/upstream"
)

// A failed server shows why, when it is tried again and what a person
// can do, with Retry now, which tries it at once (its backoff here is an
// hour, so only the button can count); the token bars have a legend; a
// page the console does not have is a page with its navigation; the
// activity page without an audit log says how to have one.
func TestFailedServerAndEmptyPages(t *testing.T) {
	const token = "admin-token-0123456789abcdef"
	pool := upstream.NewPool([]config.ServerConfig{{Name: "down", Command: "false", NoContain: true, Timeout: testenv.Timeout(5 * time.Second)}},
		&upstream.Options{RestartDelay: time.Hour, MaxRestartDelay: time.Hour})
	host, err := gateway.NewHost(pool, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { host.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	notes := func() map[string]string {
		return map[string]string{"down": "io.example/down@1.0.0 is deprecated in its registry: use io.example/up (checked 2026-11-27)"}
	}
	srv := httptest.NewServer(New(&Options{Host: host, AuthToken: token, RegistryNotes: notes}).Handler())
	t.Cleanup(srv.Close)
	auth := []string{"Authorization", "Bearer " + token}
	var page string
	testenv.Eventually(t, 10*time.Second, "the failed server to wait for its next try", func() bool {
		_, page = get(t, http.DefaultClient, srv.URL+"/console/", auth...)
		return strings.Contains(page, "tried again in")
	})
	for _, want := range []string{`class="server failed"`, "tried again in 60 min", "Retry now", "toolshelf doctor down", `id="legend"`,
		"deprecated in its registry: use io.example/up", "toolshelf update down"} {
		if !strings.Contains(page, want) {
			t.Errorf("no %q on the servers page:\n%s", want, page)
		}
	}
	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil {
		t.Fatal("no CSRF token on the page")
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	form := url.Values{"csrf": {csrf[1]}, "server": {"down"}}
	req, _ := http.NewRequest("POST", srv.URL+"/console/servers/retry", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	req.Header.Set(auth[0], auth[1])
	resp, err := noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("retry: %d", resp.StatusCode)
	}
	testenv.Eventually(t, 10*time.Second, "the retry to be tried", func() bool {
		return pool.Status()[0].Restarts == 1
	})
	// A server with no try waiting cannot be retried: said, not done.
	form.Set("server", "nope")
	req, _ = http.NewRequest("POST", srv.URL+"/console/servers/retry", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", srv.URL)
	req.Header.Set(auth[0], auth[1])
	if resp, err := noRedirect.Do(req); err != nil || resp.StatusCode != http.StatusConflict {
		t.Errorf("retrying an unknown server: %v %v", resp.StatusCode, err)
	}

	// The configuration changes while the console is open: a change that
	// does not load is said with its place; a server added is shown.
	pool.ConfigRefused(errors.New("servers.json:3: invalid JSON"))
	if _, body := get(t, http.DefaultClient, srv.URL+"/console/servers.part", auth...); !strings.Contains(body, "was not applied") || !strings.Contains(body, "servers.json:3: invalid JSON") {
		t.Errorf("a refused change is not on the servers page:\n%s", body)
	}
	pool.Reconfigure([]config.ServerConfig{{Name: "down", Command: "false", NoContain: true, Timeout: testenv.Timeout(5 * time.Second)},
		{Name: "added", Command: "false", NoContain: true, Timeout: testenv.Timeout(5 * time.Second)}})
	pool.ConfigRefused(nil)
	if _, body := get(t, http.DefaultClient, srv.URL+"/console/servers.part", auth...); !strings.Contains(body, `data-server="added"`) || strings.Contains(body, "was not applied") {
		t.Errorf("the server added is not on the servers page, or the refusal stays:\n%s", body)
	}

	status, body := get(t, http.DefaultClient, srv.URL+"/console/servers", auth...)
	if status != http.StatusNotFound || !strings.Contains(body, `aria-label="Console pages"`) || !strings.Contains(body, "/console/servers</code>") {
		t.Errorf("an unknown page: %d\n%s", status, body)
	}
	if _, body := get(t, http.DefaultClient, srv.URL+"/console/activity", auth...); !strings.Contains(body, "--audit FILE") {
		t.Errorf("the activity page without an audit log does not say how to have one:\n%s", body)
	}
}

// Every server that is not ready has a next step: a try waiting (with
// Retry), or one under way; and a hint that names a command there is.
func TestNextStep(t *testing.T) {
	now := time.Now()
	timedOut := `connection closed: calling "initialize": did not answer within its "timeout" (10s)`
	for _, c := range []struct {
		st         upstream.Status
		next, hint string
		retry      bool
	}{
		{upstream.Status{Name: "slow", State: upstream.StateFailed, Error: timedOut, RetryAt: now.Add(40 * time.Second)}, "tried again in 40 s", `longer "timeout"`, true},
		{upstream.Status{Name: "slow", State: upstream.StateRestarting, Error: timedOut}, "being tried now", `longer "timeout"`, false},
		{upstream.Status{Name: "down", State: upstream.StateRestarting, Error: "exit status 1"}, "being tried now", "toolshelf doctor down", false},
		{upstream.Status{Name: "bad", State: upstream.StateFailed, Error: "${TOKEN} is not set"}, "", "its configuration is at fault", false},
		{upstream.Status{Name: "remote", State: upstream.StateNeedsAuth}, "", "toolshelf auth login remote", false},
	} {
		next, hint, retry := nextStep(c.st, now)
		if next != c.next || !strings.Contains(hint, c.hint) || retry != c.retry {
			t.Errorf("%s %s: %q %q %v, want %q %q %v", c.st.Name, c.st.State, next, hint, retry, c.next, c.hint, c.retry)
		}
	}
}
