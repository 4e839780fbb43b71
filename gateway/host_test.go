package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/shelf"
	"github.com/toolshelf/toolshelf/upstream"
)

// Host.Apply changes a profile's tools and the gateways' settings in
// place: an open session lists again (list_changed) and sees the new
// tools, a tool the profile lost is refused, a group added is served;
// a change of who opens a profile is left for a restart, changing nothing.
func TestHostAppliesProfilesInPlace(t *testing.T) {
	pool := upstream.NewPool(standardUpstreams(t), nil)
	const token = "ro-token-0123456789abcdef"
	ro := config.Profile{Name: "ro", Servers: []string{"github"}, Tokens: []string{token}}
	host, err := NewHost(pool, &HostOptions{Profiles: []config.Profile{ro},
		Server: Options{Settings: policy.Settings{Mode: policy.ModeStandard}}})
	if err != nil {
		t.Fatal(err)
	}
	background(t, host.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	pool.Wait(ctx)
	g := host.Gateway("ro")
	changed := make(chan struct{}, 16)
	cs := connect(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {
		select {
		case changed <- struct{}{}:
		default:
		}
	}})
	of := func(server string) func(string) bool {
		return func(n string) bool { return strings.Contains(n, server) }
	}
	testenv.Eventually(t, time.Minute, "the profile's tools to be listed", func() bool {
		names := listNames(t, cs)
		return slices.ContainsFunc(names, of("github")) && !slices.ContainsFunc(names, of("slack"))
	})
drain: // the list_changed of the servers' start
	for {
		select {
		case <-changed:
		default:
			break drain
		}
	}
	var githubTool string
	for _, n := range listNames(t, cs) {
		if strings.Contains(n, "create_issue") {
			githubTool = n
		}
	}

	moved := ro
	moved.Servers = []string{"slack"}
	if left := host.Apply([]config.Profile{moved}, nil, Settings{Groups: []config.GroupConfig{{Name: "chat", Description: "Talk in Slack", Tools: []string{"*post_message*"}}}}); len(left) > 0 {
		t.Fatalf("a change of a profile's tools was left for a restart: %v", left)
	}
	select {
	case <-changed:
	case <-ctx.Done():
		t.Fatal("timed out: no list_changed for the profile's new tools")
	}
	testenv.Eventually(t, time.Minute, "the session to list the profile's new tools", func() bool {
		names := listNames(t, cs)
		return slices.ContainsFunc(names, of("slack")) && !slices.ContainsFunc(names, of("github"))
	})
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: githubTool, Arguments: map[string]any{}}); err == nil && !res.IsError {
		t.Errorf("a tool the profile lost was called: %s", text(res))
	}
	if !slices.ContainsFunc(g.groups(ctx), func(gr *group) bool { return gr.Name == "chat" }) {
		t.Error("the group added is not served")
	}

}

// Host.Apply changes who opens each path while sessions are open: a
// profile's token taken out ends its use (the next request is refused,
// and the session's open stream is ended), its new token opens it, a
// profile added is served at its path, one removed is gone from it.
func TestHostAppliesWhoOpensProfiles(t *testing.T) {
	pool := upstream.NewPool(standardUpstreams(t), nil)
	const old, renewed, chat = "ro-token-0123456789abcdef", "ro-token-renewed-0123456789", "chat-token-0123456789abcdef"
	ro := config.Profile{Name: "ro", Servers: []string{"github"}, Tokens: []string{old}}
	host, err := NewHost(pool, &HostOptions{Profiles: []config.Profile{ro}})
	if err != nil {
		t.Fatal(err)
	}
	background(t, host.Run)
	srv := httptest.NewServer(host.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	cs := sessionWithStream(t, ctx, srv.URL+"/mcp/ro", old)
	openWith := func(token string) bool { return host.underWay(token) }
	testenv.Eventually(t, time.Minute, "the session's stream to be open", func() bool { return openWith(old) })

	renewedRO := ro
	renewedRO.Tokens = []string{renewed}
	if left := host.Apply([]config.Profile{renewedRO, {Name: "chat", Servers: []string{"slack"}, Tokens: []string{chat}}}, nil, Settings{}); len(left) > 0 {
		t.Fatalf("left for a restart: %v", left)
	}
	testenv.Eventually(t, time.Minute, "the stream opened with the token taken out to end", func() bool { return !openWith(old) })
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/mcp/ro", old, http.StatusUnauthorized},
		{"/mcp/ro", renewed, http.StatusOK},
		{"/mcp/chat", chat, http.StatusOK},
		{"/mcp/chat", renewed, http.StatusForbidden},
	} {
		if st, body, err := postWith(srv.URL+tc.path, ping, map[string]string{"Authorization": "Bearer " + tc.token}); err != nil || st != tc.want {
			t.Errorf("%s with %s: %d %v %s, want %d", tc.path, tc.token, st, err, body, tc.want)
		}
	}
	if _, err := cs.ListTools(ctx, nil); err == nil {
		t.Error("the session opened with the token taken out still lists tools")
	}

	host.Apply([]config.Profile{renewedRO}, nil, Settings{})
	if st, _, _ := postWith(srv.URL+"/mcp/chat", ping, map[string]string{"Authorization": "Bearer " + chat}); st != http.StatusNotFound {
		t.Errorf("the removed profile's path: %d", st)
	}
	if host.Gateway("chat") != nil {
		t.Error("the removed profile's gateway is still the host's")
	}
}

// A change of the claims that open a profile applies to people at once:
// a person the new claims leave out is refused from the next request and
// the requests of theirs under way are ended; one they now take in opens
// it; the default profile's claims (identity's own) change the same way.
func TestHostAppliesClaims(t *testing.T) {
	idp := testenv.StartIDP(t, nil)
	v, err := identity.New(identity.Config{Issuer: idp.Issuer, Audience: "toolshelf", Scopes: []string{"mcp"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool([]config.ServerConfig{inMemory("notes", notesServer())}, nil)
	ops := config.Profile{Name: "ops", Servers: []string{"notes"}, Claims: map[string][]string{"groups": {"sre"}}}
	host, err := NewHost(pool, &HostOptions{Profiles: []config.Profile{ops}, AdminToken: testAdmin,
		People: &People{Verifier: v, Claims: map[string]map[string][]string{"ops": ops.Claims}}})
	if err != nil {
		t.Fatal(err)
	}
	background(t, host.Run)
	srv := httptest.NewServer(host.Handler())
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	alice, bob := idp.Token(t, "alice"), idp.Token(t, "bob") // sre, dev
	sessionWithStream(t, context.Background(), srv.URL+"/mcp/ops", alice)
	underWay := host.underWay
	testenv.Eventually(t, time.Minute, "alice's stream to be open", func() bool { return underWay(alice) })

	devOps := ops
	devOps.Claims = map[string][]string{"groups": {"dev"}}
	host.Apply([]config.Profile{devOps}, map[string][]string{"groups": {"dev"}}, Settings{})
	testenv.Eventually(t, time.Minute, "alice's stream to end", func() bool { return !underWay(alice) })
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		who, path, token string
		want             int
	}{
		{"alice (sre) at ops", "/mcp/ops", alice, http.StatusForbidden},
		{"bob (dev) at ops", "/mcp/ops", bob, http.StatusOK},
		{"bob (dev) at the default profile", "/mcp", bob, http.StatusOK},
		{"alice (sre) at the default profile", "/mcp", alice, http.StatusForbidden},
	} {
		if st, body, err := postWith(srv.URL+tc.path, ping, map[string]string{"Authorization": "Bearer " + tc.token}); err != nil || st != tc.want {
			t.Errorf("%s: %d %v %s, want %d", tc.who, st, err, body, tc.want)
		}
	}
}

// Server.Apply changes a search's answer from the next search on: its
// budget (an answer cut past it says so) and the form of its matches.
func TestServerAppliesSearchSettings(t *testing.T) {
	pool := upstream.NewPool(standardUpstreams(t), nil)
	background(t, pool.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	pool.Wait(ctx)
	g := newGateway(t, pool.Scope(nil), &Options{Budget: 5})
	cs := connect(t, g, nil)
	search := func() string {
		return text(call(t, cs, toolSearch, map[string]any{"query": "create an issue or a pull request in github", "limit": 5}))
	}
	if got := search(); !strings.Contains(got, "past this answer's budget of 5 tokens") {
		t.Fatalf("a budget of 5 tokens cut nothing: %s", got)
	}
	g.Apply(Settings{Budget: -1, Results: shelf.Full})
	got := search()
	if strings.Contains(got, "budget") || !strings.Contains(got, `"input_schema"`) {
		t.Errorf("after Apply (no budget, whole definitions): %s", got)
	}
}

// sessionWithStream opens a session (of a revision with sessions, whose
// client keeps a stream open) at url with a bearer token ("" for none).
func sessionWithStream(t *testing.T, ctx context.Context, url, token string) *mcp.ClientSession {
	t.Helper()
	hc := http.DefaultClient
	if token != "" {
		hc = &http.Client{Transport: headerTransport{http.Header{"Authorization": {"Bearer " + token}}}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("opening %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// underWay reports whether a request with the bearer token ("" for
// none) is under way on the host's MCP paths.
func (h *Host) underWay(token string) bool {
	h.open.mu.Lock()
	defer h.open.mu.Unlock()
	for q := range h.open.m {
		if q.bearer == token {
			return true
		}
	}
	return false
}

// What the door cannot tell apart it refuses: a stream let in because
// the gateway was open to anyone is ended once a token closes it, and
// one of a profile that is removed is ended with its path.
func TestHostEndsWhatItNoLongerOpens(t *testing.T) {
	pool := upstream.NewPool(standardUpstreams(t), nil)
	host, err := NewHost(pool, &HostOptions{Profiles: []config.Profile{{Name: "ro", Servers: []string{"github"}}}})
	if err != nil {
		t.Fatal(err)
	}
	background(t, host.Run)
	srv := httptest.NewServer(host.Handler())
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(time.Minute))
	defer cancel()
	sessionWithStream(t, ctx, srv.URL+"/mcp", "")
	testenv.Eventually(t, time.Minute, "the open gateway's stream to be open", func() bool { return host.underWay("") })
	// A token appears: /mcp is closed to anyone without one.
	host.Apply([]config.Profile{{Name: "ro", Servers: []string{"github"}, Tokens: []string{"ro-token-0123456789abcdef"}}}, nil, Settings{})
	testenv.Eventually(t, time.Minute, "the stream let in without a credential to end", func() bool { return !host.underWay("") })

	// A profile's stream ends with the profile.
	sessionWithStream(t, ctx, srv.URL+"/mcp/ro", "ro-token-0123456789abcdef")
	testenv.Eventually(t, time.Minute, "ro's stream to be open", func() bool { return host.underWay("ro-token-0123456789abcdef") })
	host.Apply(nil, nil, Settings{})
	testenv.Eventually(t, time.Minute, "the removed profile's stream to end", func() bool { return !host.underWay("ro-token-0123456789abcdef") })
}
