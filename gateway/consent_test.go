package gateway

import (
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/signin"
)

// The check of who opens a sign-in link refuses what it cannot read: a
// return from the provider without the check's cookie, with one sealed
// by another key, or for another sign-in; a link of no sign-in.
func TestConsentRefusesWhatItCannotRead(t *testing.T) {
	flows := signin.NewFlows(signin.Open(filepath.Join(t.TempDir(), "tokens.json")), nil)
	c := newConsent(&People{Flows: flows}, nil)
	other := newConsent(&People{Flows: flows}, nil) // another process's key
	cookie := func(seal *CookieSeal, state string) *http.Cookie {
		return &http.Cookie{Name: cookieName("toolshelf_check_", state), Value: seal.Seal("check", checking{State: state, Expires: time.Now().Add(time.Minute).Unix()})}
	}
	for _, tc := range []struct {
		name   string
		path   string
		cookie *http.Cookie
		status int
		says   string
	}{
		{"a return without the cookie", ConfirmPath + "?state=s1&code=c", nil, http.StatusBadRequest, "not started in this browser"},
		{"a cookie sealed by another key", ConfirmPath + "?state=s1&code=c", cookie(other.cookies, "s1"), http.StatusBadRequest, "not started in this browser"},
		{"a cookie of another sign-in", ConfirmPath + "?state=s1&code=c", func() *http.Cookie {
			k := cookie(c.cookies, "s2")
			k.Name = cookieName("toolshelf_check_", "s1")
			return k
		}(), http.StatusBadRequest, "not started in this browser"},
		{"a good cookie, no sign-in waiting", ConfirmPath + "?state=s1&code=c", cookie(c.cookies, "s1"), http.StatusNotFound, "unknown, used or expired"},
		{"an expired cookie", ConfirmPath + "?state=s1&code=c", &http.Cookie{Name: cookieName("toolshelf_check_", "s1"),
			Value: c.cookies.Seal("check", checking{State: "s1", Expires: time.Now().Add(-time.Second).Unix()})}, http.StatusBadRequest, "took too long"},
		{"a link of no sign-in", signin.BeginPath + "?state=nothing", nil, http.StatusNotFound, "unknown, used or expired"},
	} {
		r := httptest.NewRequest(http.MethodGet, tc.path, nil)
		if tc.cookie != nil {
			r.AddCookie(tc.cookie)
		}
		w := httptest.NewRecorder()
		if strings.HasPrefix(tc.path, ConfirmPath) {
			c.confirm(w, r)
		} else {
			c.begin(w, r)
		}
		if w.Code != tc.status || !strings.Contains(w.Body.String(), tc.says) {
			t.Errorf("%s: %d %s", tc.name, w.Code, w.Body.String())
		}
	}
}
