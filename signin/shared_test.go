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

// newKey is a random store key.
func newKey() []byte {
	k := make([]byte, 32)
	rand.Read(k)
	return k
}

// replicaStore opens the shared sign-ins as one replica does: a
// connection pool of its own to the store at url.
func replicaStore(t *testing.T, ctx context.Context, url string, key []byte) (*Store, *store.DB) {
	t.Helper()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	s, err := OpenShared(db, key)
	if err != nil {
		t.Fatal(err)
	}
	// As the host runs it: the feed followed until the test ends, and
	// waited for.
	fctx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); db.Follow(fctx, nil) }()
	t.Cleanup(func() { stop(); <-done })
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
	key := newKey()
	a, _ := replicaStore(t, ctx, url, key)
	b, _ := replicaStore(t, ctx, url, key)
	s := protected(t)

	rec, err := Login(ctx, a, "remote", s.URL, &LoginOptions{Open: browse})
	if err != nil {
		t.Fatal(err)
	}
	var sealed []byte
	if err := testenv.SQL(t, url).QueryRow(ctx, "SELECT sealed FROM signins WHERE server = 'remote'").Scan(&sealed); err != nil {
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
	testenv.Eventually(t, 30*time.Second, "the sign-out to reach replica a", func() bool {
		return errors.Is(call(sessions[0]), ErrNeedsAuth)
	})
}

// A sign-in sealed with one key does not open with another, and the
// error says so without the token.
func TestSharedSignInNeedsItsKey(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key, other := newKey(), newKey()
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
	recs, bad, err := b.ListAll()
	if err != nil || len(recs) != 0 || len(bad) != 1 || !strings.Contains(bad[0].Reason, "does not open with this store key") || strings.Contains(bad[0].Reason, "secret") {
		t.Errorf("with another key: %v %+v %v", recs, bad, err)
	}
	if _, err := b.Get("remote", rec.Resource); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("the sign-in itself, with another key: %v", err)
	}
}

// A row sealed with another key (an operator's laptop signed in with its
// own) is reported alone: every other sign-in reads as before.
func TestForeignRowHidesNoOther(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key, laptop := newKey(), newKey()
	fleet, _ := replicaStore(t, ctx, url, key)
	foreign, _ := replicaStore(t, ctx, url, laptop)
	for _, name := range []string{"alpha", "gamma"} {
		if err := fleet.Put(&Record{Server: name, Resource: "https://" + name + "/mcp", AccessToken: "t-" + name}); err != nil {
			t.Fatal(err)
		}
	}
	if err := foreign.Put(&Record{Server: "beta", Resource: "https://beta/mcp", AccessToken: "t-beta"}); err != nil {
		t.Fatal(err)
	}
	recs, bad, err := fleet.ListAll()
	if err != nil || len(recs) != 2 || recs[0].Server != "alpha" || recs[1].Server != "gamma" || len(bad) != 1 || bad[0].Key.Server != "beta" {
		t.Errorf("the fleet's sign-ins beside a foreign row: %+v %+v %v", recs, bad, err)
	}
	if got, err := fleet.Get("gamma", "https://gamma/mcp"); err != nil || got == nil {
		t.Errorf("a sign-in beside the foreign row: %+v %v", got, err)
	}
}

// A saved sealed row put back is refused: after a refresh (it would undo
// the refresh) and after a sign-out (it would undo the sign-out), by the
// replica that saw the change and by another that heard of it. A new
// sign-in replaces it.
func TestRolledBackRowRefused(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	key := newKey()
	s, _ := replicaStore(t, ctx, url, key)
	other, _ := replicaStore(t, ctx, url, key)
	const server, resource = "remote", "https://remote/mcp"
	type row struct {
		sealed  []byte
		version int64
	}
	save := func() row {
		t.Helper()
		var r row
		if err := testenv.SQL(t, url).QueryRow(ctx, "SELECT sealed, version FROM signins WHERE server = $1", server).Scan(&r.sealed, &r.version); err != nil {
			t.Fatal(err)
		}
		return r
	}
	putBack := func(r row) {
		t.Helper()
		if _, err := testenv.SQL(t, url).Exec(ctx, "UPDATE signins SET sealed = $2, version = $3 WHERE server = $1", server, r.sealed, r.version); err != nil {
			t.Fatal(err)
		}
	}
	refused := func(what string) {
		t.Helper()
		for name, st := range map[string]*Store{"the replica that changed it": s, "another replica": other} {
			if got, err := st.Get(server, resource); err == nil || !strings.Contains(err.Error(), "put back") {
				t.Errorf("%s, through %s: %+v %v", what, name, got, err)
			}
		}
	}

	if err := s.Put(&Record{Server: server, Resource: resource, AccessToken: "first"}); err != nil {
		t.Fatal(err)
	}
	first := save()
	if err := s.Put(&Record{Server: server, Resource: resource, AccessToken: "refreshed"}); err != nil {
		t.Fatal(err)
	}
	if got, err := other.Get(server, resource); err != nil || got.AccessToken != "refreshed" {
		t.Fatalf("the refreshed sign-in through another replica: %+v %v", got, err)
	}
	putBack(first)
	refused("the row before a refresh, put back")

	if err := s.Put(&Record{Server: server, Resource: resource, AccessToken: "signed in again"}); err != nil {
		t.Fatalf("a new sign-in over a row put back: %v", err)
	}
	signedIn := save()
	if got, err := other.Get(server, resource); err != nil || got.AccessToken != "signed in again" {
		t.Fatalf("the new sign-in: %+v %v", got, err)
	}
	if ok, err := s.Delete(server); !ok || err != nil {
		t.Fatalf("sign-out: %v %v", ok, err)
	}
	if got, err := other.Get(server, resource); err != nil || got != nil {
		t.Fatalf("after the sign-out: %+v %v", got, err)
	}
	putBack(signedIn)
	refused("the signed-in row put back after a sign-out")
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
	key := newKey()
	s, _ := replicaStore(t, ctx, url, key)
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
	if _, err := testenv.SQL(t, url).Exec(ctx, `UPDATE signins SET sealed = (SELECT sealed FROM signins WHERE subject = 'bob') WHERE subject = 'alice'`); err != nil {
		t.Fatal(err)
	}
	if _, err := s.GetKey(Key{server, resource, "alice"}); err == nil || !strings.Contains(err.Error(), "does not open") {
		t.Errorf("bob's sealed row in alice's place: %v", err)
	}
	if _, err := testenv.SQL(t, url).Exec(ctx, `DELETE FROM signins WHERE subject = 'alice'`); err != nil {
		t.Fatal(err)
	}
	if n, err := s.DeletePerson(server, "bob"); n != 1 || err != nil {
		t.Errorf("bob's sign-out: %d %v", n, err)
	}
	if rec, _ := s.Get(server, resource); rec == nil || rec.AccessToken != "token-of-" {
		t.Errorf("the gateway's own sign-in after bob's sign-out: %+v", rec)
	}
}

// The store key is rotated: replicas given the new key and the old one
// read every sign-in; Reseal seals them all with the new key, after which
// the old key is needed no more (and opens none).
func TestRotateStoreKey(t *testing.T) {
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	oldKey, newKey := newKey(), newKey()
	before, _ := replicaStore(t, ctx, url, oldKey)
	for _, who := range []string{"", "alice"} {
		if err := before.Put(&Record{Server: "remote", Resource: "https://remote/mcp", Subject: who, AccessToken: "t" + who}); err != nil {
			t.Fatal(err)
		}
	}
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	during, err := OpenShared(db, newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if recs, bad, err := during.ListAll(); len(recs) != 2 || len(bad) != 0 || err != nil {
		t.Fatalf("with the new key and the old: %d read, %v, %v", len(recs), bad, err)
	}
	n, bad, err := during.Reseal(ctx)
	if n != 2 || len(bad) != 0 || err != nil {
		t.Fatalf("Reseal: %d %v %v", n, bad, err)
	}
	after, _ := replicaStore(t, ctx, url, newKey)
	if recs, bad, err := after.ListAll(); len(recs) != 2 || len(bad) != 0 || err != nil {
		t.Errorf("with the new key alone: %d read, %v, %v", len(recs), bad, err)
	}
	stale, _ := replicaStore(t, ctx, url, oldKey)
	if recs, bad, _ := stale.ListAll(); len(recs) != 0 || len(bad) != 2 {
		t.Errorf("with the old key alone: %d read, %d not", len(recs), len(bad))
	}
}
