package console

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"strconv"
	"testing"

	"github.com/toolshelf/toolshelf/fleet"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/store"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// The console of a fleet: a sign-in made through one replica holds on
// another (the cookie is signed with a key derived from the fleet key),
// and guesses of the admin token through one replica count on the others.
func TestConsoleAcrossReplicas(t *testing.T) {
	dbURL := testenv.Postgres(t)
	ctx := context.Background()
	key := []byte("0123456789abcdef0123456789abcdef")
	replica := func() string {
		db, err := store.Open(ctx, dbURL)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(db.Close)
		m, err := fleet.New(db, key, nil)
		if err != nil {
			t.Fatal(err)
		}
		return consoleWith(t, &Options{AuthToken: "the-real-token-1234", Key: m.Key("console"), Attempts: m})
	}
	a, b := replica(), replica()

	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	if status, _ := get(t, c, a+"/console/login?token=the-real-token-1234"); status != 200 {
		t.Fatalf("signing in through a: %d", status)
	}
	au, _ := url.Parse(a)
	bu, _ := url.Parse(b)
	jar.SetCookies(bu, jar.Cookies(au))
	noRedirect := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	if status, _ := get(t, noRedirect, b+"/console/"); status != 200 {
		t.Errorf("a's sign-in on b: %d, want 200", status)
	}

	guesser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	for i := range 5 {
		if status, _ := get(t, guesser, a+"/console/login?token=guess-"+strconv.Itoa(i)); status != http.StatusSeeOther {
			t.Fatalf("failure %d through a: %d", i, status)
		}
	}
	if status, _ := get(t, guesser, b+"/console/login?token=the-real-token-1234"); status != http.StatusTooManyRequests {
		t.Errorf("the sixth try in a minute, through b: %d, want 429", status)
	}
}
