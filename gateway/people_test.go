package gateway

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/internal/oauthtest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/signin"
	"github.com/toolshelf/toolshelf/telemetry"
	"github.com/toolshelf/toolshelf/upstream"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// notesServer is an in-memory server with one tool, add.
func notesServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "notes", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "add", Description: "Add a note"}, func(ctx context.Context, req *mcp.CallToolRequest, in struct {
		Text string `json:"text"`
	}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "added " + in.Text}}}, nil, nil
	})
	return srv
}

// peopleHost serves a host whose profiles people open by their groups:
// ops (sre), dev (dev) and ci (a static token only), with rules.
func peopleHost(t *testing.T, idp *testenv.IDP, policy string) (url string, records func() []auditRecord) {
	url, records, _ = tracedPeopleHost(t, idp, policy)
	return url, records
}

// tracedPeopleHost is peopleHost whose spans are kept.
func tracedPeopleHost(t *testing.T, idp *testenv.IDP, policy string) (url string, records func() []auditRecord, spans *tracetest.InMemoryExporter) {
	t.Helper()
	v, err := identity.New(identity.Config{Issuer: idp.Issuer, Audience: "toolshelf", Scopes: []string{"mcp"}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := &upstream.Options{}
	if policy != "" {
		opts.Policies, _ = rulesFile(t, policy)
	}
	pool := upstream.NewPool([]config.ServerConfig{inMemory("notes", notesServer())}, opts)
	// The host runs the audit log: records() stops the host to read it.
	auditFile := filepath.Join(t.TempDir(), "audit.jsonl")
	log, err := audit.Open(auditFile, nil)
	if err != nil {
		t.Fatal(err)
	}
	profiles := []config.Profile{
		{Name: "ops", Servers: []string{"notes"}, Claims: map[string][]string{"groups": {"sre"}}},
		{Name: "dev", Servers: []string{"notes"}, Claims: map[string][]string{"groups": {"dev"}}},
		{Name: "ci", Servers: []string{"notes"}, Tokens: []string{"ci-token-0123456789"}},
	}
	claims := map[string]map[string][]string{}
	for _, p := range profiles {
		claims[p.Name] = p.Claims
	}
	spans = tracetest.NewInMemoryExporter()
	tel, err := telemetry.New(context.Background(), &telemetry.Options{Getenv: noEnv, SpanExporter: spans, Synchronous: true})
	if err != nil {
		t.Fatal(err)
	}
	h, err := NewHost(pool, &HostOptions{Profiles: profiles, AdminToken: testAdmin, Server: Options{Audit: log, Telemetry: tel}, People: &People{Verifier: v, Claims: claims}})
	if err != nil {
		t.Fatal(err)
	}
	hctx, stopHost := context.WithCancel(context.Background())
	stopped := make(chan struct{})
	go func() { defer close(stopped); h.Run(hctx) }()
	stop := func() { stopHost(); <-stopped }
	t.Cleanup(stop)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*config.DefaultTimeout))
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv.URL, func() []auditRecord {
		stop()
		recs, _, err := audit.Read(auditFile, time.Time{})
		if err != nil {
			t.Fatal(err)
		}
		var out []auditRecord
		for _, r := range recs {
			out = append(out, auditRecord{r.Profile, r.Subject, r.Email, r.Tool, r.Outcome, r.Decision})
		}
		return out
	}, spans
}

type auditRecord struct{ Profile, Subject, Email, Tool, Outcome, Decision string }

// servedHost runs a host of pool until the test ends, once its servers
// have started, and serves it over HTTP on loopback.
func servedHost(t *testing.T, pool *upstream.Pool, opts *HostOptions) *httptest.Server {
	t.Helper()
	h, err := NewHost(pool, opts)
	if err != nil {
		t.Fatal(err)
	}
	background(t, h.Run)
	ctx, cancel := context.WithTimeout(context.Background(), testenv.Timeout(2*config.DefaultTimeout))
	defer cancel()
	if err := pool.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h.Handler())
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	return srv
}

// bearerClient is an HTTP client that sends a bearer token.
func bearerClient(token string) *http.Client {
	return &http.Client{Transport: roundTrip(func(r *http.Request) (*http.Response, error) {
		r.Header.Set("Authorization", "Bearer "+token)
		return http.DefaultTransport.RoundTrip(r)
	})}
}

func connectAs(t *testing.T, endpoint, token string) (*mcp.ClientSession, error) {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: bearerClient(token), MaxRetries: -1}, nil)
	if err == nil {
		t.Cleanup(func() { cs.Close() })
	}
	return cs, err
}

// TestPeopleOpenTheirProfiles: a person's access token of the team's
// provider opens the profiles their groups map to and no other; the audit
// log names the person; a static token still opens its profile.
func TestPeopleOpenTheirProfiles(t *testing.T) {
	idp := testenv.StartIDP(t, nil)
	url, records, spans := tracedPeopleHost(t, idp, "")
	alice, bob, carol := idp.Token(t, "alice"), idp.Token(t, "bob"), idp.Token(t, "carol")

	cs, err := connectAs(t, url+"/mcp/ops", alice)
	if err != nil {
		t.Fatalf("alice (sre) opening ops: %v", err)
	}
	if res := call(t, cs, toolCall, map[string]any{"name": "mcp__notes__add", "arguments": map[string]any{"text": "x"}}); res.IsError {
		t.Fatalf("alice's call: %s", text(res))
	}
	ci, err := connectAs(t, url+"/mcp/ci", "ci-token-0123456789")
	if err != nil {
		t.Fatalf("the ci token: %v", err)
	}
	call(t, ci, toolCall, map[string]any{"name": "mcp__notes__add", "arguments": map[string]any{"text": "y"}})

	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		who, path, token string
		want             int
		says             string
	}{
		{"bob (dev) at ops", "/mcp/ops", bob, 403, "needs groups=sre"},
		{"carol (no group) at dev", "/mcp/dev", carol, 403, "needs groups=dev"},
		{"alice at the default profile, which no claim opens", "/mcp", alice, 403, "profile everything"},
		{"alice at ci, a profile of tokens only", "/mcp/ci", alice, 403, "profile ci"},
	} {
		st, body, err := postWith(url+tc.path, ping, map[string]string{"Authorization": "Bearer " + tc.token})
		if err != nil || st != tc.want || !strings.Contains(body, tc.says) {
			t.Errorf("%s: %d %q %v; want %d saying %q", tc.who, st, body, err, tc.want, tc.says)
		}
	}

	// The call's span names the person (enduser.id); the ci token's none.
	people := map[string]bool{}
	for _, sp := range spans.GetSpans() {
		for _, a := range sp.Attributes {
			if a.Key == "enduser.id" {
				people[a.Value.AsString()] = true
			}
		}
	}
	if !people["alice"] || len(people) != 1 {
		t.Errorf("spans name %v, want alice alone", people)
	}
	// Metrics keep bounded labels: no person is in one.
	if m := get(t, url+"/metrics", adminHeader); !strings.Contains(m, "mcp_server_operation_duration") || strings.Contains(m, "alice") {
		t.Errorf("/metrics names a person, or measures nothing:\n%.2000s", m)
	}
	got := records()
	want := []auditRecord{
		{"ops", "alice", "alice@example.com", "mcp__notes__add", "ok", ""},
		{"ci", "", "", "mcp__notes__add", "ok", ""},
	}
	if len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("audit records:\n got %+v\nwant %+v", got, want)
	}
}

// TestRefusedTokens: each kind of token the gateway must not take gets
// 401 with a challenge that points at the metadata (the client's cue to
// sign in), and a token without the needed scope 403 insufficient_scope
// naming it; the metadata names the provider.
func TestRefusedTokens(t *testing.T) {
	idp := testenv.StartIDP(t, nil)
	url, _ := peopleHost(t, idp, "")
	now := time.Now().Unix()
	claims := func(change map[string]any) map[string]any {
		c := map[string]any{"iss": idp.Issuer, "aud": "toolshelf", "sub": "alice", "groups": []string{"sre"}, "scope": "mcp", "iat": now, "exp": now + 600}
		for k, v := range change {
			if v == nil {
				delete(c, k)
			} else {
				c[k] = v
			}
		}
		return c
	}
	other, otherKid := testenv.NewSigningKey(t)
	rs := map[string]any{"alg": "RS256", "kid": idp.Kid}
	metadata := url + "/.well-known/oauth-protected-resource/mcp/ops"
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name, token string
		status      int
		challenge   []string
	}{
		{"none", "", 401, []string{`resource_metadata="` + metadata + `"`}},
		{"expired", signed(t, rs, claims(map[string]any{"exp": now - 3600}), idp.Key), 401, []string{`error="invalid_token"`, "expired"}},
		{"not yet valid", signed(t, rs, claims(map[string]any{"nbf": now + 3600}), idp.Key), 401, []string{`error="invalid_token"`, "not valid yet"}},
		{"wrong issuer", signed(t, rs, claims(map[string]any{"iss": "https://other.example.com"}), idp.Key), 401, []string{`error="invalid_token"`}},
		{"wrong audience", signed(t, rs, claims(map[string]any{"aud": "another-api"}), idp.Key), 401, []string{`error="invalid_token"`, "audience"}},
		{"alg none", unsigned(t, claims(nil)), 401, []string{`error="invalid_token"`}},
		{"unknown kid", signed(t, map[string]any{"alg": "RS256", "kid": otherKid}, claims(nil), other), 401, []string{`error="invalid_token"`}},
		{"no mcp scope", signed(t, rs, claims(map[string]any{"scope": "read"}), idp.Key), 403, []string{`error="insufficient_scope"`, `scope="mcp"`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			headers := map[string]string{}
			if tc.token != "" {
				headers["Authorization"] = "Bearer " + tc.token
			}
			req, _ := http.NewRequest(http.MethodPost, url+"/mcp/ops", strings.NewReader(ping))
			for k, v := range headers {
				req.Header.Set(k, v)
			}
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			got := resp.Header.Get("WWW-Authenticate")
			if resp.StatusCode != tc.status {
				t.Errorf("status %d, want %d (%s)", resp.StatusCode, tc.status, got)
			}
			for _, w := range append(tc.challenge, `resource_metadata="`+metadata+`"`) {
				if !strings.Contains(got, w) {
					t.Errorf("WWW-Authenticate %q lacks %q", got, w)
				}
			}
		})
	}
	var doc struct {
		Resource             string   `json:"resource"`
		AuthorizationServers []string `json:"authorization_servers"`
	}
	if err := json.Unmarshal([]byte(get(t, metadata, nil)), &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Resource != url+"/mcp/ops" || len(doc.AuthorizationServers) != 1 || doc.AuthorizationServers[0] != idp.Issuer {
		t.Errorf("metadata: %+v", doc)
	}
}

// TestSessionStaysWithItsPerson: a session one person opened refuses
// another person's requests, though both may open the profile.
func TestSessionStaysWithItsPerson(t *testing.T) {
	idp := testenv.StartIDP(t, &testenv.IDPOptions{People: map[string]testenv.IDPPerson{
		"alice": {Groups: []string{"sre"}}, "dave": {Groups: []string{"sre"}},
	}})
	url, _ := peopleHost(t, idp, "")
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"t","version":"1"}}}`
	req, _ := http.NewRequest(http.MethodPost, url+"/mcp/ops", strings.NewReader(init))
	req.Header.Set("Authorization", "Bearer "+idp.Token(t, "alice"))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if resp.StatusCode != 200 || session == "" {
		t.Fatalf("alice's initialize: %d, session %q", resp.StatusCode, session)
	}
	st, body, err := postWith(url+"/mcp/ops", `{"jsonrpc":"2.0","id":2,"method":"ping"}`, map[string]string{"Authorization": "Bearer " + idp.Token(t, "dave"), "Mcp-Session-Id": session})
	if err != nil || st != http.StatusForbidden {
		t.Errorf("dave on alice's session: %d %q %v", st, body, err)
	}
}

// TestRulesSeeThePerson: a rule reads who is calling (context.person),
// and a limit counts each person of a profile apart.
func TestRulesSeeThePerson(t *testing.T) {
	idp := testenv.StartIDP(t, &testenv.IDPOptions{People: map[string]testenv.IDPPerson{
		"alice": {Email: "alice@example.com", Groups: []string{"sre"}},
		"erin":  {Email: "erin@contractor.example", Groups: []string{"sre"}},
		"frank": {Email: "frank@example.com", Groups: []string{"sre"}},
	}})
	url, records := peopleHost(t, idp, `
@id("no-contractors")
@message("contractors may not add notes")
forbid (principal, action == Action::"call", resource)
when { context.person.email like "*@contractor.example" };

@id("two-a-minute")
@limit("2/minute")
permit (principal == Profile::"ops", action == Action::"call", resource);
`)
	add := func(cs *mcp.ClientSession) *mcp.CallToolResult {
		return call(t, cs, toolCall, map[string]any{"name": "mcp__notes__add", "arguments": map[string]any{"text": "x"}})
	}
	erin, err := connectAs(t, url+"/mcp/ops", idp.Token(t, "erin"))
	if err != nil {
		t.Fatal(err)
	}
	if res := add(erin); !res.IsError || !strings.Contains(text(res), "contractors may not") {
		t.Errorf("erin's call: %s", text(res))
	}
	alice, err := connectAs(t, url+"/mcp/ops", idp.Token(t, "alice"))
	if err != nil {
		t.Fatal(err)
	}
	frank, err := connectAs(t, url+"/mcp/ops", idp.Token(t, "frank"))
	if err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if res := add(alice); res.IsError {
			t.Fatalf("alice's call %d: %s", i+1, text(res))
		}
	}
	if res := add(alice); !res.IsError || !strings.Contains(text(res), "two-a-minute") {
		t.Errorf("alice's third call in a minute: %s", text(res))
	}
	if res := add(frank); res.IsError {
		t.Errorf("frank's first call, after alice used her limit: %s", text(res))
	}
	var decisions []string
	for _, r := range records() {
		decisions = append(decisions, r.Subject+":"+r.Decision)
	}
	if want := "erin:forbidden alice: alice: alice:limited frank:"; strings.Join(decisions, " ") != want {
		t.Errorf("records: %q, want %q", strings.Join(decisions, " "), want)
	}
}

func signed(t *testing.T, header, claims map[string]any, key *rsa.PrivateKey) string {
	t.Helper()
	input := jwtPart(t, header) + "." + jwtPart(t, claims)
	sum := sha256.Sum256([]byte(input))
	sig, err := rsa.SignPKCS1v15(rand.Reader, key, crypto.SHA256, sum[:])
	if err != nil {
		t.Fatal(err)
	}
	return input + "." + base64.RawURLEncoding.EncodeToString(sig)
}

func unsigned(t *testing.T, claims map[string]any) string {
	return jwtPart(t, map[string]any{"alg": "none"}) + "." + jwtPart(t, claims) + "."
}

func jwtPart(t *testing.T, v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return base64.RawURLEncoding.EncodeToString(data)
}

// whoServer answers whoami with the person of the token it was called
// with, as its authorization server knows them.
func whoServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "who", Version: "1"}, nil)
	mcp.AddTool(srv, &mcp.Tool{Name: "whoami", Description: "Say who is calling"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		who := "nobody"
		if ti := req.Extra.TokenInfo; ti != nil {
			who = ti.UserID
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: who}}}, nil, nil
	})
	return srv
}

// TestPerPersonSignIn: two people of one profile call a server marked
// "signin": "per-person". Each is asked to sign in on their first call
// (alice through URL elicitation, bob, whose client has none, by the URL
// in the tool error), and each opens the link in a real browser
// (Debian's chromium): the gateway has the browser sign in at the team's
// provider (oidc-provider, testdata/idp) first, and goes on to the
// server's sign-in only for the person the link is for. Bob opening
// alice's link is refused and spends it; a return to the callback from a
// browser that did not confirm is refused and spends the sign-in. Each
// call then carries the caller's own token: the server sees alice as
// alice and bob as bob, never one for the other. A caller who is no
// person (a static token) is refused.
func TestPerPersonSignIn(t *testing.T) {
	chrome := testenv.Chromium(t)
	var h http.Handler
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close() })
	idp := testenv.StartIDP(t, &testenv.IDPOptions{People: map[string]testenv.IDPPerson{
		"alice": {Email: "alice@example.com", Groups: []string{"sre"}}, "bob": {Email: "bob@example.com", Groups: []string{"sre"}},
	}, Redirects: []string{srv.URL + ConfirmPath}})
	upstreamSrv := oauthtest.New(t, whoServer())
	tokensFile := filepath.Join(t.TempDir(), "tokens.json")
	tokens := signin.Open(tokensFile)
	ctx := context.Background()
	// The gateway's own sign-in lists the tools; people's calls carry theirs.
	if _, err := signin.Login(ctx, tokens, "who", upstreamSrv.URL, &signin.LoginOptions{Open: func(_ context.Context, u string) error { return oauthtest.Browse(u) }}); err != nil {
		t.Fatal(err)
	}
	flows := signin.NewFlows(tokens, nil)
	v, err := identity.New(identity.Config{Issuer: idp.Issuer, Audience: "toolshelf", ClientID: testenv.GatewayClient, ClientSecret: testenv.GatewaySecret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool([]config.ServerConfig{{Name: "who", URL: upstreamSrv.URL, Signin: config.SigninPerPerson}}, &upstream.Options{Tokens: tokens, Flows: flows})
	profiles := []config.Profile{
		{Name: "ops", Servers: []string{"who"}, Claims: map[string][]string{"groups": {"sre"}}},
		{Name: "ci", Servers: []string{"who"}, Tokens: []string{"ci-token-0123456789"}},
	}
	host, err := NewHost(pool, &HostOptions{Profiles: profiles, AdminToken: testAdmin, People: &People{Verifier: v, Flows: flows,
		Claims: map[string]map[string][]string{"ops": profiles[0].Claims}}})
	if err != nil {
		t.Fatal(err)
	}
	background(t, host.Run)
	wctx, cancel := context.WithTimeout(ctx, testenv.Timeout(2*config.DefaultTimeout))
	defer cancel()
	if err := pool.Wait(wctx); err != nil {
		t.Fatal(err)
	}
	h = host.Handler()

	// Each person has a browser of their own (its own cookies).
	bctx, stopAll := context.WithTimeout(ctx, testenv.Timeout(3*time.Minute))
	defer stopAll()
	alloc, stopAlloc := chromedp.NewExecAllocator(bctx, append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(chrome), chromedp.NoSandbox)...)
	defer stopAlloc()
	// open has who's browser open link, sign in at the provider as who
	// (its login and consent pages, once per browser), and returns the
	// page the gateway ends on. It is called from the client's
	// elicitation handler too: it reports errors, not t.Fatal.
	browsers := map[string]context.Context{}
	open := func(who, link string) (string, error) {
		b := browsers[who]
		if b == nil {
			var stop context.CancelFunc
			b, stop = chromedp.NewContext(alloc)
			t.Cleanup(stop)
			browsers[who] = b
		}
		upstreamSrv.SetUser(who) // who signs in at the server, if the gateway lets the browser get there
		if err := chromedp.Do(b, chromedp.Navigate(link)); err != nil {
			return "", fmt.Errorf("%s opening %s: %v", who, link, err)
		}
		var page string
		var err error
		// Each step reads the page the browser is on, and acts on it; a
		// page that changes under a read (a navigation) is read again.
		for step := 0; step < 20; step++ {
			sctx, scancel := context.WithTimeout(b, testenv.Timeout(30*time.Second))
			err = chromedp.Do(sctx, chromedp.WaitReady(`body`))
			if err == nil {
				page, err = chromedp.Run(sctx, chromedp.OuterHTML(chromedp.CSS("html")))
			}
			scancel()
			switch {
			case err != nil:
				continue
			case strings.Contains(page, "Signed in to") || strings.Contains(page, `id="consent"`) || strings.Contains(page, "failed"):
				return page, nil
			case strings.Contains(page, `name="login"`):
				err = chromedp.Do(b, chromedp.SendKeys(`input[name=login]`, who), chromedp.SendKeys(`input[name=password]`, "any password"),
					chromedp.Submit(`input[name=login]`), chromedp.WaitNotPresent(`input[name=login]`))
			case strings.Contains(page, `type="submit"`):
				err = chromedp.Do(b, chromedp.Click(`button[type=submit]`), chromedp.WaitNotPresent(`button[type=submit]`))
			}
		}
		return page, fmt.Errorf("%s's browser did not end on a page of the gateway: %v\n%.2000s", who, err, page)
	}
	mustOpen := func(who, link string) string {
		t.Helper()
		page, err := open(who, link)
		if err != nil {
			t.Fatal(err)
		}
		return page
	}

	whoami := map[string]any{"name": "mcp__who__whoami", "arguments": map[string]any{}}
	var opener string // whose browser opens alice's link
	var aliceLinks []string
	alice, err := mcp.NewClient(&mcp.Implementation{Name: "alice", Version: "1"}, &mcp.ClientOptions{
		Capabilities: &mcp.ClientCapabilities{Elicitation: &mcp.ElicitationCapabilities{URL: &mcp.URLElicitationCapabilities{}}},
		ElicitationHandler: func(_ context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			if req.Params.Mode != "url" || !strings.HasPrefix(req.Params.URL, srv.URL+signin.BeginPath+"?state=") {
				return nil, fmt.Errorf("asked %q with %q", req.Params.Mode, req.Params.URL)
			}
			aliceLinks = append(aliceLinks, req.Params.URL)
			page, err := open(opener, req.Params.URL)
			if err != nil {
				return nil, err
			}
			if opener == "bob" && !strings.Contains(page, "This sign-in link is not yours") {
				t.Errorf("bob opening alice's link sees:\n%.2000s", page)
			}
			return &mcp.ElicitResult{Action: "accept"}, nil
		},
	}).Connect(ctx, &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/ops", HTTPClient: bearerClient(idp.Token(t, "alice")), MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer alice.Close()
	// Bob opens alice's link (one click on a link that looks genuine).
	opener = "bob"
	if res := call(t, alice, toolCall, whoami); !res.IsError || text(res) == "bob" {
		t.Fatalf("alice's call after bob opened her link: %q", text(res))
	}
	if recs, _ := tokens.List(); len(recs) != 1 {
		t.Fatalf("sign-ins kept after bob opened alice's link: %+v", recs)
	}
	// Her link is spent: opened again (by her), it is unknown.
	if page := mustOpen("alice", aliceLinks[0]); !strings.Contains(page, "unknown, used or expired") {
		t.Errorf("alice's spent link, opened again:\n%.2000s", page)
	}
	opener = "alice"
	if got := text(call(t, alice, toolCall, whoami)); got != "alice" || len(aliceLinks) != 2 {
		t.Fatalf("alice's call, her link opened by her: %q (links %d), want alice", got, len(aliceLinks))
	}

	bob, err := connectAs(t, srv.URL+"/mcp/ops", idp.Token(t, "bob"))
	if err != nil {
		t.Fatal(err)
	}
	link := func() string {
		res := call(t, bob, toolCall, whoami)
		msg := text(res)
		i := strings.Index(msg, srv.URL+signin.BeginPath)
		if !res.IsError || i < 0 {
			t.Fatalf("bob's call, not signed in, from a client without elicitation: %q", msg)
		}
		return strings.TrimRight(strings.Fields(msg[i:])[0], ",.")
	}
	// A return to the callback for bob's sign-in that does not come from
	// a browser bob confirmed in (a link crafted with its state, a code
	// of someone else's) is refused, and spends the sign-in.
	u, _ := url.Parse(link())
	resp, err := http.Get(srv.URL + signin.CallbackPath + "?state=" + url.QueryEscape(u.Query().Get("state")) + "&code=someone-elses")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusForbidden || !strings.Contains(string(body), "not from the browser") {
		t.Errorf("a return from another browser: %d %s", resp.StatusCode, body)
	}
	if page := mustOpen("bob", u.String()); !strings.Contains(page, "unknown, used or expired") {
		t.Errorf("bob's spent link:\n%.2000s", page)
	}
	if page := mustOpen("bob", link()); !strings.Contains(page, "Signed in to who") {
		t.Fatalf("bob signing in:\n%.2000s", page)
	}
	for _, tc := range []struct {
		cs   *mcp.ClientSession
		want string
	}{{bob, "bob"}, {alice, "alice"}, {bob, "bob"}} {
		if got := text(call(t, tc.cs, toolCall, whoami)); got != tc.want {
			t.Errorf("a call of %s reached the server as %q", tc.want, got)
		}
	}

	ci, err := connectAs(t, srv.URL+"/mcp/ci", "ci-token-0123456789")
	if err != nil {
		t.Fatal(err)
	}
	if res := call(t, ci, toolCall, whoami); !res.IsError || !strings.Contains(text(res), "no signed-in person") {
		t.Errorf("a static token's call of a per-person server: %q", text(res))
	}

	// A person sees and ends their own sign-ins, and no one else's.
	mine := func(token string) string {
		req, _ := http.NewRequest(http.MethodGet, srv.URL+SigninsPath, nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return string(b)
	}
	bobToken := idp.Token(t, "bob")
	if got := mine(bobToken); !strings.Contains(got, `"server":"who"`) || strings.Count(got, `"server"`) != 1 {
		t.Errorf("bob's sign-ins: %s", got)
	}
	req, _ := http.NewRequest(http.MethodDelete, srv.URL+SigninsPath+"?server=who", nil)
	req.Header.Set("Authorization", "Bearer "+bobToken)
	if resp, err := http.DefaultClient.Do(req); err != nil || resp.StatusCode != http.StatusNoContent {
		t.Fatalf("bob signing out: %v %v", resp, err)
	}
	if got := mine(bobToken); got != "[]\n" {
		t.Errorf("bob's sign-ins after signing out: %q", got)
	}
	// Signing out ends use at once: bob's open connection to the server
	// carries no more calls as him; his next call asks him to sign in.
	// Alice's goes on as hers.
	if res := call(t, bob, toolCall, whoami); !res.IsError || text(res) == "bob" || !strings.Contains(text(res), signin.BeginPath) {
		t.Errorf("bob's call after signing out: %q", text(res))
	}
	if got := text(call(t, alice, toolCall, whoami)); got != "alice" {
		t.Errorf("alice's call after bob signed out: %q", got)
	}

	recs, err := tokens.List()
	if err != nil {
		t.Fatal(err)
	}
	var subjects []string
	for _, r := range recs {
		subjects = append(subjects, r.Subject)
	}
	if got := strings.Join(subjects, ","); got != ",alice" {
		t.Errorf("sign-ins kept for %q, want the gateway's own and alice's (bob signed out)", got)
	}

	// A store that cannot say whether alice is still signed in (its file
	// damaged after a change) is taken as her signing out: her open
	// connection carries no more calls.
	if err := tokens.Put(&signin.Record{Server: "elsewhere", Resource: "https://elsewhere.test", Subject: "alice", AccessToken: "other-token"}); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokensFile, []byte("{not json"), 0o600); err != nil {
		t.Fatal(err)
	}
	if res := call(t, alice, toolCall, whoami); !res.IsError || text(res) == "alice" {
		t.Errorf("alice's call when the store cannot be read: %q", text(res))
	}
}

// TestTokenExchange: a server marked "signin": "exchange" gets, on each
// person's calls, a token the provider issued for its audience in
// exchange for the person's (RFC 8693, here in the real oidc-provider's
// token endpoint, written in testdata/idp/idp.mjs since oidc-provider has
// no exchange grant), naming the gateway as the actor; the person's own
// token never reaches it.
func TestTokenExchange(t *testing.T) {
	idp := testenv.StartIDP(t, &testenv.IDPOptions{People: map[string]testenv.IDPPerson{
		"alice": {Groups: []string{"sre"}}, "bob": {Groups: []string{"sre"}},
	}})
	apiCheck, err := identity.New(identity.Config{Issuer: idp.Issuer, Audience: "notes-api"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	seen := map[string]bool{} // every token the server was sent
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return whoServer() }, nil)
	api := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		tok, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		mu.Lock()
		seen[tok] = true
		mu.Unlock()
		who := "gateway" // its own key lists the tools
		if tok != "listing-key-0123456789" {
			p, err := apiCheck.Verify(r.Context(), tok)
			if err != nil {
				http.Error(w, err.Error(), http.StatusUnauthorized)
				return
			}
			act, _ := p.Claims["act"].(map[string]any)
			who = p.Subject + " via " + fmt.Sprint(act["sub"])
		}
		auth.RequireBearerToken(func(context.Context, string, *http.Request) (*auth.TokenInfo, error) {
			return &auth.TokenInfo{UserID: who, Expiration: time.Now().Add(time.Hour)}, nil
		}, nil)(h).ServeHTTP(w, r)
	}))
	t.Cleanup(api.Close)

	v, err := identity.New(identity.Config{Issuer: idp.Issuer, Audience: "toolshelf", ClientID: testenv.GatewayClient, ClientSecret: testenv.GatewaySecret}, nil)
	if err != nil {
		t.Fatal(err)
	}
	pool := upstream.NewPool([]config.ServerConfig{{Name: "api", URL: api.URL, Signin: config.SigninExchange, Audience: "notes-api",
		Headers: map[string]string{"Authorization": "Bearer listing-key-0123456789"}}}, &upstream.Options{Identity: v})
	profiles := []config.Profile{{Name: "ops", Servers: []string{"api"}, Claims: map[string][]string{"groups": {"sre"}}}}
	srv := servedHost(t, pool, &HostOptions{Profiles: profiles, AdminToken: testAdmin, People: &People{Verifier: v, Claims: map[string]map[string][]string{"ops": profiles[0].Claims}}})

	whoami := map[string]any{"name": "mcp__api__whoami", "arguments": map[string]any{}}
	own := map[string]string{"alice": idp.Token(t, "alice"), "bob": idp.Token(t, "bob")}
	for _, who := range []string{"alice", "bob", "alice"} {
		cs, err := connectAs(t, srv.URL+"/mcp/ops", own[who])
		if err != nil {
			t.Fatal(err)
		}
		if got, want := text(call(t, cs, toolCall, whoami)), who+" via "+testenv.GatewayClient; got != want {
			t.Errorf("%s's call reached the server as %q, want %q", who, got, want)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	for who, tok := range own {
		if seen[tok] {
			t.Errorf("%s's own token reached the server", who)
		}
	}
	if n := len(idp.Exchanges(t)); n != 2 {
		t.Errorf("%d exchanges at the provider, want one per person (the tokens are kept)", n)
	}
}
