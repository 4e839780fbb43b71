package store

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/internal/testenv"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// Replicas opening a new store together migrate it once, to this
// toolshelf's version; a store migrated by a newer toolshelf is refused.
func TestOpenMigratesOnce(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	var wg sync.WaitGroup
	errs := make(chan error, 4)
	for range 4 {
		wg.Go(func() {
			db, err := Open(ctx, url)
			if err == nil {
				db.Close()
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatalf("opening together: %v", err)
		}
	}
	db, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var version, rows int
	if err := db.pool.QueryRow(ctx, "SELECT max(version), count(*) FROM toolshelf_migrations").Scan(&version, &rows); err != nil {
		t.Fatal(err)
	}
	if version != Migrations() || rows != Migrations() {
		t.Errorf("schema version %d in %d rows, want %d", version, rows, Migrations())
	}
	if _, err := db.pool.Exec(ctx, "INSERT INTO toolshelf_migrations (version) VALUES ($1)", Migrations()+1); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(ctx, url); err == nil || !strings.Contains(err.Error(), "newer than this toolshelf's") {
		t.Errorf("a store of a newer toolshelf: %v", err)
	}
}

// open opens a replica's connection to a fresh store of its own, and
// follows its feed until the test ends.
func open(t *testing.T, url string) *DB {
	t.Helper()
	db, err := Open(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); db.Follow(ctx, nil) }()
	t.Cleanup(func() { stop(); <-done; db.Close() })
	return db
}

// heard waits until db's feed has counted a change of k past before.
func heard(t *testing.T, db *DB, k Kind, before uint64) {
	t.Helper()
	testenv.Eventually(t, 30*time.Second, "the feed to tell of a change of "+k.String(), func() bool { return db.Changes(k) > before })
}

// The feed counts each kind's changes, made through any replica, and
// only that kind's; Close ends a Follow that still runs.
func TestFollow(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	a, b := open(t, url), open(t, url)
	// Each count grows once the listener starts: what came before was
	// not heard of.
	for _, k := range []Kind{KindPins, KindSignins, KindLearned} {
		heard(t, b, k, 0)
	}
	pins, signins := b.Changes(KindPins), b.Changes(KindSignins)
	if err := a.AddPairs(ctx, []LearnedPair{{Profile: "ops", Tool: "t", Query: "q", Count: 1, Last: time.Now()}}, time.Hour, 10); err != nil {
		t.Fatal(err)
	}
	heard(t, b, KindLearned, 1)
	if _, err := a.SavePins(ctx, func(PinSet) (PinSet, error) { return PinSet{"s": {"t": json.RawMessage(`{"sha256":"x"}`)}}, nil }); err != nil {
		t.Fatal(err)
	}
	heard(t, b, KindPins, pins)
	if got := b.Changes(KindSignins); got != signins {
		t.Errorf("sign-ins changed %d → %d with no sign-in written", signins, got)
	}

	db, err := Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() { defer close(done); db.Follow(ctx, nil) }()
	heard(t, db, KindPins, 0)
	db.Close()
	<-done
}

// Pins: a save sees the pins as they are now, writes what it returns,
// and moves the version; a save that fails writes nothing.
func TestPins(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	a, b := open(t, url), open(t, url)
	v0, err := a.PinsVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	v1, err := a.SavePins(ctx, func(now PinSet) (PinSet, error) {
		if len(now) != 0 {
			t.Errorf("a new store has pins: %v", now)
		}
		return PinSet{"github": {"create_issue": json.RawMessage(`{"sha256": "1"}`)}}, nil
	})
	if err != nil || v1 <= v0 {
		t.Fatalf("save: version %d after %d (%v)", v1, v0, err)
	}
	if _, err := b.SavePins(ctx, func(now PinSet) (PinSet, error) {
		if _, ok := now["github"]["create_issue"]; !ok {
			t.Errorf("the second replica's save does not see the first's: %v", now)
		}
		return nil, errors.New("refused")
	}); err == nil || !strings.Contains(err.Error(), "refused") {
		t.Errorf("a failed save: %v", err)
	}
	pins, v, err := b.LoadPins(ctx)
	if err != nil || v != v1 || len(pins) != 1 || string(pins["github"]["create_issue"]) != `{"sha256": "1"}` {
		t.Errorf("load: %v at %d (%v), want one pin at %d", pins, v, err, v1)
	}
}

// Learned pairs add up; a pair of a journal lands once however many
// times it is landed; the oldest past the bound go; Forget removes what
// it matches.
func TestLearned(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	db := open(t, url)
	now := time.Now().UTC().Truncate(time.Millisecond)
	p := LearnedPair{Profile: "ops", Tool: "github__create_issue", Query: "open an issue", Count: 1, Last: now, Origin: "j1:7"}
	for range 3 {
		if err := db.AddPairs(ctx, []LearnedPair{p}, time.Hour, 10); err != nil {
			t.Fatal(err)
		}
	}
	p.Origin = ""
	if err := db.AddPairs(ctx, []LearnedPair{p, {Profile: "ops", Tool: "old", Query: "q", Count: 1, Last: now.Add(-2 * time.Hour)}}, time.Hour, 10); err != nil {
		t.Fatal(err)
	}
	pairs, err := db.Pairs(ctx)
	if err != nil || len(pairs) != 1 || pairs[0].Count != 2 || !pairs[0].Last.Equal(now) {
		t.Fatalf("pairs: %+v (%v), want one counted twice", pairs, err)
	}
	for i := range 5 {
		if err := db.AddPairs(ctx, []LearnedPair{{Profile: "dev", Tool: "t", Query: strings.Repeat("q", i+1), Count: 1, Last: now.Add(time.Duration(i) * time.Second)}}, time.Hour, 3); err != nil {
			t.Fatal(err)
		}
	}
	if pairs, _ := db.Pairs(ctx); len(pairs) != 3 {
		t.Errorf("%d pairs kept past a bound of 3", len(pairs))
	}
	n, err := db.ForgetPairs(ctx, func(p LearnedPair) bool { return p.Query == "qqqqq" })
	if err != nil || n != 1 {
		t.Errorf("forgot %d (%v), want 1", n, err)
	}
}

// Audit records come back oldest first from a time on; a record of a
// journal landed twice is kept once.
func TestAudit(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	db := open(t, url)
	t0 := time.Now().UTC()
	rows := []AuditRow{
		{Time: t0.Add(2 * time.Second), Record: json.RawMessage(`{"n":2}`), Origin: "j:2"},
		{Time: t0, Record: json.RawMessage(`{"n":0}`)},
		{Time: t0.Add(time.Second), Record: json.RawMessage(`{"n":1}`), Origin: "j:1"},
	}
	for range 2 {
		if err := db.AddRecords(ctx, rows[:1]); err != nil {
			t.Fatal(err)
		}
	}
	if err := db.AddRecords(ctx, rows[1:]); err != nil {
		t.Fatal(err)
	}
	recs, err := db.Records(ctx, t0.Add(time.Millisecond))
	if err != nil || len(recs) != 2 || string(recs[0]) != `{"n": 1}` || string(recs[1]) != `{"n": 2}` {
		t.Errorf("records from t0+1ms: %s (%v)", recs, err)
	}
}

// Sign-ins: an update holds the sign-in's lock across replicas (two that
// increment together lose neither), and a sign-out leaves a tombstone
// with the next version.
func TestSignins(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	a, b := open(t, url), open(t, url)
	k := SigninKey{Server: "remote", Resource: "https://remote.example/mcp", Subject: "alice"}
	var wg sync.WaitGroup
	for _, db := range []*DB{a, b, a, b} {
		wg.Go(func() {
			err := db.UpdateSignin(ctx, k, func(cur SealedSignin, ok bool) (*SealedSignin, error) {
				cur.Version++
				cur.Sealed = []byte("sealed")
				return &cur, nil
			})
			if err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	got, ok, err := b.SealedSignin(ctx, k)
	if err != nil || !ok || got.Version != 4 {
		t.Fatalf("after four updates: %+v %v (%v), want version 4", got, ok, err)
	}
	ended, err := a.EndSignins(ctx, "remote", "alice", false)
	if err != nil || len(ended) != 1 || ended[0].Version != 5 {
		t.Fatalf("sign-out: %+v (%v)", ended, err)
	}
	all, err := b.SealedSignins(ctx)
	if err != nil || len(all) != 1 || len(all[0].Sealed) != 0 || all[0].Version != 5 {
		t.Errorf("after the sign-out: %+v (%v), want a tombstone at version 5", all, err)
	}
}

// Sessions: a session is claimed from its holder once, on its own path
// only; a replica that left holds nothing alive; found tools are bounded.
func TestSessions(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	db := open(t, url)
	live, err := db.Beat(ctx, Replica{ID: "r1", Address: "http://10.0.0.1", SignedAt: 7, Sig: "sig"}, nil, time.Hour, time.Minute)
	if err != nil || len(live) != 1 || live[0].Sig != "sig" {
		t.Fatalf("beat: %+v (%v)", live, err)
	}
	if err := db.AddSession(ctx, Session{ID: "s1", Holder: "r1", Path: "/mcp/a", Initialize: []byte("{}")}); err != nil {
		t.Fatal(err)
	}
	path, h, ok, err := db.Holder(ctx, "s1", time.Minute)
	if err != nil || !ok || path != "/mcp/a" || !h.Alive || h.Address != "http://10.0.0.1" {
		t.Fatalf("holder: %q %+v %v (%v)", path, h, ok, err)
	}
	if err := db.AddActivated(ctx, "s1", []string{"a", "b", "a"}, 1000); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := db.ClaimSession(ctx, "s1", "/mcp/b", "r1", "r2"); ok {
		t.Error("claimed on another path")
	}
	s, ok, err := db.ClaimSession(ctx, "s1", "/mcp/a", "r1", "r2")
	if err != nil || !ok || string(s.Initialize) != "{}" || len(s.Activated) != 2 {
		t.Fatalf("claim: %+v %v (%v)", s, ok, err)
	}
	if _, ok, _ := db.ClaimSession(ctx, "s1", "/mcp/a", "r1", "r3"); ok {
		t.Error("claimed twice")
	}
	if err := db.Leave(ctx, "r1"); err != nil {
		t.Fatal(err)
	}
	if _, ok, err := db.ReplicaByID(ctx, "r1", time.Minute); ok || err != nil {
		t.Errorf("a replica that left: %v (%v)", ok, err)
	}
	if _, h, ok, _ := db.Holder(ctx, "s1", time.Minute); !ok || h.ID != "r2" || h.Alive {
		t.Errorf("a holder with no heartbeat: %+v %v", h, ok)
	}
	if err := db.EndSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, _, ok, _ := db.Holder(ctx, "s1", time.Minute); ok {
		t.Error("an ended session is still held")
	}
}

// Flows and failed sign-ins are counted fleet-wide.
func TestFlowsAndAttempts(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	a, b := open(t, url), open(t, url)
	if err := a.NoteFlow(ctx, "state1", "r1", time.Minute); err != nil {
		t.Fatal(err)
	}
	if r, ok, err := b.FlowReplica(ctx, "state1"); r != "r1" || !ok || err != nil {
		t.Errorf("flow: %q %v (%v)", r, ok, err)
	}
	if _, ok, _ := b.FlowReplica(ctx, "other"); ok {
		t.Error("an unknown state has a replica")
	}
	for i := 1; i <= 3; i++ {
		db := []*DB{a, b}[i%2]
		if n, err := db.AddFailure(ctx, "10.0.0.9", time.Minute); n != i || err != nil {
			t.Errorf("failure %d counted %d (%v)", i, n, err)
		}
	}
	if n, left, err := b.Failures(ctx, "10.0.0.9", time.Minute); n != 3 || left <= 0 || left > time.Minute || err != nil {
		t.Errorf("failures: %d, %v left (%v)", n, left, err)
	}
}

// The store's URL is shown without its password.
func TestRedact(t *testing.T) {
	for in, want := range map[string]string{
		"postgres://toolshelf:s3cret@db:5432/toolshelf":   "postgres://toolshelf:xxxxx@db:5432/toolshelf",
		"postgresql://toolshelf@db/toolshelf?sslmode=off": "postgresql://toolshelf@db/toolshelf?sslmode=off",
	} {
		if got := Redact(in); got != want || strings.Contains(got, "s3cret") {
			t.Errorf("Redact(%q) = %q, want %q", in, got, want)
		}
	}
}

// Tasks are read by any replica until they expire.
func TestTasks(t *testing.T) {
	url := testenv.Postgres(t)
	ctx := context.Background()
	a, b := open(t, url), open(t, url)
	if err := a.PutTask(ctx, "t1", []byte(`{"status":"working"}`), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := a.PutTask(ctx, "t1", []byte(`{"status":"completed"}`), time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if got, err := b.GetTask(ctx, "t1"); err != nil || string(got) != `{"status":"completed"}` {
		t.Errorf("from another replica: %s (%v)", got, err)
	}
	a.PutTask(ctx, "old", []byte(`{}`), time.Now().Add(-time.Second))
	if got, err := b.GetTask(ctx, "old"); got != nil || err != nil {
		t.Errorf("an expired task: %s (%v)", got, err)
	}
	if got, err := b.GetTask(ctx, "none"); got != nil || err != nil {
		t.Errorf("no task: %s (%v)", got, err)
	}
}
