package signin

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/store"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// replicaStore opens the shared sign-ins as one replica does: a
// connection pool of its own to the store at url.
func replicaStore(t *testing.T, ctx context.Context, url string, key []byte) (*Store, *store.DB) {
	t.Helper()
	db, err := store.Open(ctx, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s, err := OpenShared(ctx, db, key)
	if err != nil {
		t.Fatal(err)
	}
	return s, db
}

// Two replicas share one sign-in through the store: made through one,
// it serves the other; when the server stops taking the token, both
// replicas renew it at once and the token endpoint is asked once (its
// refresh tokens are used once); a sign-out through one reaches the
// other's open connection. The store holds no token in the clear.
func TestSharedSignInAcrossReplicas(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := make([]byte, 32)
	rand.Read(key)
	a, db := replicaStore(t, ctx, url, key)
	b, _ := replicaStore(t, ctx, url, key)
	s := protected(t)

	rec, err := Login(ctx, a, "remote", s.URL, &LoginOptions{Open: browse})
	if err != nil {
		t.Fatal(err)
	}
	var sealed []byte
	if err := db.Pool().QueryRow(ctx, "SELECT sealed FROM signins WHERE server = 'remote'").Scan(&sealed); err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{rec.AccessToken, rec.RefreshToken, rec.ClientID} {
		if bytes.Contains(sealed, []byte(secret)) {
			t.Errorf("the store holds %q in the clear", secret)
		}
	}

	var sessions []*mcp.ClientSession
	for _, st := range []*Store{a, b} {
		cs, err := connect(t, st, s.URL)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		sessions = append(sessions, cs)
	}
	call := func(cs *mcp.ClientSession) error {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "secret"})
		if err == nil && res.IsError {
			err = errors.New("tool error")
		}
		return err
	}
	for i, cs := range sessions {
		if err := call(cs); err != nil {
			t.Fatalf("replica %d: %v", i, err)
		}
	}

	s.Expire()
	var wg sync.WaitGroup
	errs := make([]error, len(sessions))
	for i, cs := range sessions {
		wg.Go(func() { errs[i] = call(cs) })
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("replica %d after the token expired: %v", i, err)
		}
	}
	if s.Refreshs != 1 {
		t.Errorf("the two replicas refreshed %d times, want once", s.Refreshs)
	}

	if ok, err := b.Delete("remote"); !ok || err != nil {
		t.Fatalf("sign-out through b: %v %v", ok, err)
	}
	testenv.Eventually(t, 2*time.Second, "the sign-out to reach replica a", func() bool {
		return errors.Is(call(sessions[0]), ErrNeedsAuth)
	})
}

// A sign-in sealed with one key does not open with another, and the
// error says so without the token.
func TestSharedSignInNeedsItsKey(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key, other := make([]byte, 32), make([]byte, 32)
	rand.Read(key)
	rand.Read(other)
	a, _ := replicaStore(t, ctx, url, key)
	b, _ := replicaStore(t, ctx, url, other)
	rec := &Record{Server: "remote", Resource: "http://127.0.0.1:1/mcp", AccessToken: "at-secret-123", RefreshToken: "rt-secret-456"}
	if err := a.Put(rec); err != nil {
		t.Fatal(err)
	}
	got, err := a.Get("remote", rec.Resource)
	if err != nil || got == nil || got.AccessToken != rec.AccessToken {
		t.Fatalf("read back with its key: %+v %v", got, err)
	}
	_, err = b.List()
	if err == nil || !strings.Contains(err.Error(), "does not open with this store key") || strings.Contains(err.Error(), "secret") {
		t.Errorf("with another key: %v", err)
	}
}

func TestParseKey(t *testing.T) {
	for _, s := range []string{"MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=", "3031323334353637383961626364656630313233343536373839616263646566"} {
		if k, err := ParseKey(s); err != nil || string(k) != "0123456789abcdef0123456789abcdef" {
			t.Errorf("ParseKey(%q) = %q, %v", s, k, err)
		}
	}
	for _, s := range []string{"", "short", "MDEyMzQ1Njc4OWFiY2RlZg=="} {
		if _, err := ParseKey(s); err == nil {
			t.Errorf("ParseKey(%q) took it", s)
		}
	}
}

// People's sign-ins in the shared store are each their own: kept apart
// by subject, each seal bound to its subject (a row moved to another
// person's place does not open), and one person's sign-out leaves the
// others'.
func TestSharedSignInsPerPerson(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := make([]byte, 32)
	rand.Read(key)
	s, db := replicaStore(t, ctx, url, key)
	const server, resource = "notes", "https://notes.example.com/mcp"
	for _, who := range []string{"", "alice", "bob"} {
		if err := s.Put(&Record{Server: server, Resource: resource, Subject: who, AccessToken: "token-of-" + who}); err != nil {
			t.Fatal(err)
		}
	}
	for _, who := range []string{"", "alice", "bob"} {
		rec, err := s.GetKey(Key{server, resource, who})
		if err != nil || rec == nil || rec.AccessToken != "token-of-"+who {
			t.Errorf("%q's sign-in: %+v %v", who, rec, err)
		}
	}
	// Bob's row in alice's place: it does not open as alice's.
	if _, err := db.Pool().Exec(ctx, `UPDATE signins SET sealed = (SELECT sealed FROM signins WHERE subject = 'bob') WHERE subject = 'alice'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetKey(Key{server, resource, "alice"}); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("bob's sealed row in alice's place: %v", err)
	}
	if _, err := db.Pool().Exec(ctx, `DELETE FROM signins WHERE subject = 'alice'`); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeletePerson(server, "bob"); n != 1 || err != nil {
		t.Errorf("bob's sign-out: %d %v", n, err)
	}
	if rec, _ := s.Get(server, resource); rec == nil || rec.AccessToken != "token-of-" {
		t.Errorf("the gateway's own sign-in after bob's sign-out: %+v", rec)
	}
}
