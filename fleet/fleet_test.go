package fleet

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/store"
)

func TestMain(m *testing.M) { os.Exit(testenv.Main(m)) }

// testKey is the test fleet's key.
var testKey = []byte("0123456789abcdef0123456789abcdef")

// replicaAt is one replica of the test's fleet: two MCP paths, each a
// go-sdk server whose tool names the replica, behind the member's relay.
type replicaAt struct {
	m   *Member
	srv *httptest.Server
	url string // the store's
}

func startReplica(t *testing.T, ctx context.Context, url, name string) *replicaAt {
	t.Helper()
	db, err := store.Open(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(db.Close)
	m, err := New(db, testKey, nil)
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	for _, path := range []string{"/mcp/a", "/mcp/b"} {
		s := mcp.NewServer(&mcp.Implementation{Name: name, Version: "1"}, nil)
		s.AddTool(&mcp.Tool{Name: "whoami", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name + path}}}, nil
		})
		mux.Handle(path, m.Handler(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)))
	}
	mux.Handle("/oauth/callback", m.FlowHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "the return of %s, at %s", r.URL.Query().Get("state"), name)
	})))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	if err := m.beat(ctx); err != nil {
		t.Fatal(err)
	}
	m.mu.Lock()
	m.address = srv.URL
	m.mu.Unlock()
	if err := m.beat(ctx); err != nil {
		t.Fatal(err)
	}
	return &replicaAt{m: m, srv: srv, url: url}
}

// twoReplicas starts replicas a and b of a fleet on a store of the test's
// own; they run until the test ends.
func twoReplicas(t *testing.T) (context.Context, *replicaAt, *replicaAt) {
	t.Helper()
	url := testenv.Postgres(t)
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	return ctx, startReplica(t, ctx, url, "a"), startReplica(t, ctx, url, "b")
}

// connectToA opens a client's session on replica a's path /mcp/a, closed
// when the test ends.
func connectToA(t *testing.T, ctx context.Context, a *replicaAt) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "c", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: a.srv.URL + "/mcp/a"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// post sends a tools/call of whoami in a session, and returns the status
// and body.
func post(t *testing.T, url, session string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(`{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", session)
	req.Header.Set("Mcp-Protocol-Version", "2025-11-25")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// A session is served by the replica holding it wherever its requests
// land, and only on the path (profile) it was started on: a session id
// taken to another profile's path is unknown there, before and after its
// replica is gone, and cannot be taken over through it; a client that
// marks its request as sent on by a replica, without the fleet key's
// signature, is refused.
func TestSessionStaysOnItsPath(t *testing.T) {
	ctx, a, b := twoReplicas(t)

	cs := connectToA(t, ctx, a)
	session := cs.ID()

	if code, body := post(t, b.srv.URL+"/mcp/a", session, nil); code != http.StatusOK || !strings.Contains(body, "a/mcp/a") {
		t.Errorf("through b: %d %s", code, body)
	}
	if code, _ := post(t, b.srv.URL+"/mcp/b", session, nil); code != http.StatusNotFound {
		t.Errorf("on the other profile's path: %d", code)
	}
	if code, _ := post(t, b.srv.URL+"/mcp/a", session, map[string]string{forwardedHeader: "x"}); code != http.StatusForbidden {
		t.Errorf("marked as sent on, unsigned: %d", code)
	}

	a.srv.CloseClientConnections()
	a.srv.Close()
	if code, _ := post(t, b.srv.URL+"/mcp/b", session, nil); code != http.StatusNotFound {
		t.Errorf("on the other profile's path, its replica gone: %d", code)
	}
	if h, ok, err := b.m.holder(ctx, session); err != nil || !ok || h.id != a.m.ID() {
		t.Errorf("the session's holder after the other path tried it: %+v %v %v", h, ok, err)
	}
	if code, body := post(t, b.srv.URL+"/mcp/a", session, nil); code != http.StatusOK || !strings.Contains(body, "b/mcp/a") {
		t.Errorf("taken over by b: %d %s", code, body)
	}
	if h, _, _ := b.m.holder(ctx, session); h.id != b.m.ID() {
		t.Errorf("holder after the takeover: %s, want b", h.id)
	}
}

// A person's browser comes back from a sign-in to whichever replica the
// load balancer picks: a return whose flow waits in another replica is
// served by that one; an unknown state is served here (which says no
// sign-in waits); one whose replica is gone says to sign in again.
func TestSignInReturnReachesItsReplica(t *testing.T) {
	ctx, a, b := twoReplicas(t)
	if err := a.m.NoteFlow(ctx, "state-of-a", time.Minute); err != nil {
		t.Fatal(err)
	}
	get := func(u string) (int, string) {
		resp, err := http.Get(u)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	for _, tc := range []struct{ via, state, want string }{
		{b.srv.URL, "state-of-a", "the return of state-of-a, at a"},
		{a.srv.URL, "state-of-a", "the return of state-of-a, at a"},
		{b.srv.URL, "state-of-nobody", "the return of state-of-nobody, at b"},
	} {
		if code, body := get(tc.via + "/oauth/callback?code=c&state=" + tc.state); code != 200 || body != tc.want {
			t.Errorf("%s through %s: %d %q, want %q", tc.state, tc.via, code, body, tc.want)
		}
	}
	a.srv.CloseClientConnections()
	a.srv.Close()
	if code, body := get(b.srv.URL + "/oauth/callback?code=c&state=state-of-a"); code != http.StatusBadGateway || !strings.Contains(body, "sign in again") {
		t.Errorf("its replica gone: %d %q", code, body)
	}
}

// A request over the bound, sent with a session's id to a replica that
// does not hold it, is refused there with 413; the holder, alive, keeps
// the session.
func TestOversizedRequestKeepsTheSession(t *testing.T) {
	ctx, a, b := twoReplicas(t)
	cs := connectToA(t, ctx, a)
	big := `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"whoami","arguments":{"pad":"` + strings.Repeat("x", 5<<20) + `"}}}`
	req, _ := http.NewRequest(http.MethodPost, b.srv.URL+"/mcp/a", strings.NewReader(big))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("Mcp-Session-Id", cs.ID())
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusRequestEntityTooLarge {
		t.Errorf("an oversized request through b: %d, want 413", resp.StatusCode)
	}
	if h, _, _ := b.m.holder(ctx, cs.ID()); h.id != a.m.ID() {
		t.Errorf("the session's holder after it: %s, want a", h.id)
	}
	if code, body := post(t, b.srv.URL+"/mcp/a", cs.ID(), nil); code != http.StatusOK || !strings.Contains(body, "a/mcp/a") {
		t.Errorf("the next request through b: %d %s", code, body)
	}
}

// A session taken over keeps its path: a client of another profile who
// knows its id cannot end it on its own path.
func TestAdoptedSessionKeepsItsPath(t *testing.T) {
	ctx, a, b := twoReplicas(t)
	cs := connectToA(t, ctx, a)
	session := cs.ID()
	// a leaves (as a stopped replica does), and b takes the session over.
	a.srv.CloseClientConnections()
	a.srv.Close()
	if err := a.m.db.Leave(ctx, a.m.ID()); err != nil {
		t.Fatal(err)
	}
	if code, body := post(t, b.srv.URL+"/mcp/a", session, nil); code != http.StatusOK || !strings.Contains(body, "b/mcp/a") {
		t.Fatalf("taken over by b: %d %s", code, body)
	}
	req, _ := http.NewRequest(http.MethodDelete, b.srv.URL+"/mcp/b", nil)
	req.Header.Set("Mcp-Session-Id", session)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound {
		t.Errorf("ending the session on another profile's path: %d, want 404", resp.StatusCode)
	}
	if code, body := post(t, b.srv.URL+"/mcp/a", session, nil); code != http.StatusOK || !strings.Contains(body, "b/mcp/a") {
		t.Errorf("the session after: %d %s", code, body)
	}
}

// Someone who can write to the store but lacks the fleet key adds a
// replica row and moves a session to it: no replica sends it a request or
// a token (the session is taken over as one whose holder is gone), and a
// request that says a replica sent it on, unsigned, is refused.
func TestStoreWriterWithoutFleetKey(t *testing.T) {
	ctx, a, b := twoReplicas(t)
	var mu sync.Mutex
	var stolen []string
	thief := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		stolen = append(stolen, r.Method+" "+r.URL.Path+" "+r.Header.Get("Authorization"))
		mu.Unlock()
		http.Error(w, "thanks", http.StatusTeapot)
	}))
	defer thief.Close()
	cs := connectToA(t, ctx, a)
	session := cs.ID()
	db := testenv.SQL(t, a.url)
	// A row like a replica's: fresh, with a signature of the right shape
	// (another replica's, copied), at the thief's address.
	var copiedAt int64
	var copiedSig string
	if err := db.QueryRow(ctx, "SELECT signed_at, sig FROM replicas WHERE id = $1", a.m.ID()).Scan(&copiedAt, &copiedSig); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "INSERT INTO replicas (id, address, seen, signed_at, sig) VALUES ('thief', $1, now(), $2, $3)", thief.URL, copiedAt, copiedSig); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Exec(ctx, "UPDATE sessions SET owner = 'thief' WHERE id = $1", session); err != nil {
		t.Fatal(err)
	}
	code, body := post(t, b.srv.URL+"/mcp/a", session, map[string]string{"Authorization": "Bearer the-admins-token"})
	if code != http.StatusOK || !strings.Contains(body, "b/mcp/a") {
		t.Errorf("the session after the store was written: %d %s", code, body)
	}
	mu.Lock()
	if len(stolen) > 0 {
		t.Errorf("the thief's address received %q", stolen)
	}
	mu.Unlock()
	if n := b.m.Replicas(); n != 2 {
		// b beats to count: its count must not include the thief.
		if err := b.m.beat(ctx); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.m.beat(ctx); err != nil {
		t.Fatal(err)
	}
	if n := b.m.Replicas(); n != 2 {
		t.Errorf("%d replicas counted, want 2 (the thief's row is not one)", n)
	}

	// A request that says it was sent on, unsigned or signed wrongly.
	for _, sig := range []string{"", "t=1,sig=00", fmt.Sprintf("t=%d,sig=%s", time.Now().Unix(), strings.Repeat("ab", 32))} {
		code, body := post(t, a.srv.URL+"/mcp/a", session, map[string]string{forwardedHeader: b.m.ID(), signatureHeader: sig})
		if code != http.StatusForbidden {
			t.Errorf("a forged forwarded request (%q): %d %s", sig, code, body)
		}
	}
}

// A forwarded request is served once: its signature carries a nonce, and
// the same request sent again while the signature holds (captured on the
// way, replayed) is refused, on real replicas over HTTP. The same request
// checked by two layers of one replica (authorization, then the relay)
// is not a replay.
func TestForwardedRequestReplayed(t *testing.T) {
	ctx, a, b := twoReplicas(t)
	session := connectToA(t, ctx, a).ID()
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/mcp/a", strings.NewReader(body))
	req.Header.Set("Mcp-Session-Id", session)
	b.m.sign(req, []byte(body), "", a.m.ID())
	captured := map[string]string{forwardedHeader: req.Header.Get(forwardedHeader), signatureHeader: req.Header.Get(signatureHeader)}

	// Signed for a: replayed to another replica (or to a after a restart,
	// when it has a new id), it does not hold, nonce or not.
	if code, got := post(t, b.srv.URL+"/mcp/a", session, captured); code != http.StatusForbidden || !strings.Contains(got, "without a valid signature") {
		t.Errorf("a's request replayed to b: %d %s", code, got)
	}

	if code, got := post(t, a.srv.URL+"/mcp/a", session, captured); code != http.StatusOK || !strings.Contains(got, "a/mcp/a") {
		t.Fatalf("the forwarded request: %d %s", code, got)
	}
	for range 3 {
		if code, got := post(t, a.srv.URL+"/mcp/a", session, captured); code != http.StatusForbidden || !strings.Contains(got, "replay") {
			t.Errorf("the same request again: %d %s", code, got)
		}
	}
	// The nonce is signed: another one, or none, is a forgery.
	for _, sig := range []string{
		strings.Replace(captured[signatureHeader], ",n=", ",n=0", 1),
		regexp.MustCompile(`,n=[0-9a-f]+`).ReplaceAllString(captured[signatureHeader], ""),
	} {
		h := map[string]string{forwardedHeader: captured[forwardedHeader], signatureHeader: sig}
		if code, got := post(t, a.srv.URL+"/mcp/a", session, h); code != http.StatusForbidden || !strings.Contains(got, "without a valid signature") {
			t.Errorf("nonce altered (%s): %d %s", sig, code, got)
		}
	}
}

// A nonce is spent once; the remembered nonces are bounded.
func TestNonces(t *testing.T) {
	var n nonces
	now := time.Now()
	if err := n.spend("n1", now.Add(time.Minute), now); err != nil {
		t.Fatal(err)
	}
	if err := n.spend("n1", now.Add(time.Minute), now); !errors.Is(err, ErrReplayed) {
		t.Errorf("spent again: %v", err)
	}
	for i := range maxNonces - 1 {
		n.seen[fmt.Sprint(i)] = spent{until: now.Add(time.Minute)}
	}
	if err := n.spend("full", now.Add(time.Minute), now); err == nil {
		t.Error("past the bound, a request was served")
	}
	if err := n.spend("later", now.Add(3*time.Minute), now.Add(2*time.Minute)); err != nil {
		t.Errorf("once the remembered ones expired: %v", err)
	}
}

// A forwarded request is checked once: asked again (the gateway's
// authorization, then the relay), Vouched knows it by the mark only this
// replica can set, without reading its body or its signature again; a
// copy of it is a replay; a mark of anyone else's is no mark.
func TestVouchedChecksOnce(t *testing.T) {
	_, a, b := twoReplicas(t)
	body := `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"whoami","arguments":{}}}`
	req, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/mcp/a", strings.NewReader(body))
	b.m.sign(req, []byte(body), "", a.m.ID())
	copied := req.Header.Clone()
	if _, ok, err := a.m.Vouched(req); !ok || err != nil {
		t.Fatalf("the forwarded request: %v %v", ok, err)
	}
	req.Body = io.NopCloser(iotest.ErrReader(errors.New("the body was read again")))
	if _, ok, err := a.m.Vouched(req); !ok || err != nil {
		t.Errorf("asked again: %v %v", ok, err)
	}
	again, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/mcp/a", strings.NewReader(body))
	again.Header = copied.Clone()
	if _, _, err := a.m.Vouched(again); !errors.Is(err, ErrReplayed) {
		t.Errorf("a copy: %v", err)
	}
	forged, _ := http.NewRequest(http.MethodPost, a.srv.URL+"/mcp/a", strings.NewReader(body))
	forged.Header = copied.Clone()
	forged.Header.Set(checkedHeader, strings.Repeat("0", 32))
	if _, _, err := a.m.Vouched(forged); !errors.Is(err, ErrReplayed) {
		t.Errorf("a copy with a mark of its own: %v", err)
	}
}

// A fleet's tasks are sealed with the fleet key in the store: a store
// writer without the key who changes a task's record (its result, its
// owner), moves it to another task's id, or writes one of their own, is
// refused, and reads nothing of the call in the store.
func TestTasksSealed(t *testing.T) {
	ctx, a, b := twoReplicas(t)
	db, err := store.Open(ctx, a.url)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ta, tb := a.m.SealTasks(db), b.m.SealTasks(db)
	record := []byte(`{"taskId":"t1","status":"completed","owner":"/mcp caller:alice","call":{"name":"pay","arguments":{"card":"4111-1111-1111-1111"}}}`)
	exp := time.Now().Add(time.Hour)
	if err := ta.PutTask(ctx, "t1", record, exp); err != nil {
		t.Fatal(err)
	}
	if got, err := tb.GetTask(ctx, "t1"); err != nil || string(got) != string(record) {
		t.Fatalf("the other replica reads: %s %v", got, err)
	}
	if err := ta.PutTask(ctx, "t2", []byte(`{"taskId":"t2","owner":"/mcp caller:bob"}`), exp); err != nil {
		t.Fatal(err)
	}
	sql := testenv.SQL(t, a.url)
	var raw []byte
	if err := sql.QueryRow(ctx, "SELECT record FROM tasks WHERE id = 't1'").Scan(&raw); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(raw), "4111") || strings.Contains(string(raw), "alice") {
		t.Errorf("the store holds the task in clear: %q", raw)
	}
	for _, tc := range []struct {
		name, stmt string
	}{
		{"a byte of the result changed", "UPDATE tasks SET record = overlay(record placing '\\x00'::bytea from 20 for 1) WHERE id = 't1'"},
		{"bob's record moved to alice's task", "UPDATE tasks SET record = (SELECT record FROM tasks WHERE id = 't2') WHERE id = 't1'"},
		{"a record written in clear", `UPDATE tasks SET record = convert_to('{"taskId":"t1","status":"completed","owner":"/mcp caller:bob"}', 'UTF8') WHERE id = 't1'`},
		{"a record too short to hold a nonce", "UPDATE tasks SET record = '\\x0102'::bytea WHERE id = 't1'"},
	} {
		if err := ta.PutTask(ctx, "t1", record, exp); err != nil {
			t.Fatal(err)
		}
		if _, err := sql.Exec(ctx, tc.stmt); err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, r := range []*SealedTasks{ta, tb} {
			if got, err := r.GetTask(ctx, "t1"); !errors.Is(err, ErrTaskForged) || got != nil {
				t.Errorf("%s: read %q, %v", tc.name, got, err)
			}
		}
	}

	// An earlier record of the same task put back (a finished task made
	// "working" again, its result gone) is refused by the replicas that
	// saw the later one.
	working := []byte(`{"taskId":"t3","status":"working","owner":"/mcp caller:alice"}`)
	if err := ta.PutTask(ctx, "t3", working, exp); err != nil {
		t.Fatal(err)
	}
	var earlier []byte
	if err := sql.QueryRow(ctx, "SELECT record FROM tasks WHERE id = 't3'").Scan(&earlier); err != nil {
		t.Fatal(err)
	}
	done := []byte(`{"taskId":"t3","status":"completed","owner":"/mcp caller:alice","result":{"content":[]}}`)
	if err := ta.PutTask(ctx, "t3", done, exp); err != nil {
		t.Fatal(err)
	}
	if got, err := tb.GetTask(ctx, "t3"); err != nil || string(got) != string(done) {
		t.Fatalf("the finished task: %s %v", got, err)
	}
	if _, err := sql.Exec(ctx, "UPDATE tasks SET record = $1 WHERE id = 't3'", earlier); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*SealedTasks{ta, tb} {
		if got, err := r.GetTask(ctx, "t3"); !errors.Is(err, ErrTaskForged) || got != nil {
			t.Errorf("an earlier record put back: read %q, %v", got, err)
		}
	}
}
