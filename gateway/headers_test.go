package gateway

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/internal/mcptest"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/policy"
)

// A 2026-07-28 client's call_tool carries the tool it calls as a header
// (x-mcp-header on "name": Mcp-Param-Tool), which infrastructure in front
// of the gateway can act on; a header that differs from the body is
// refused with -32020 (as Mcp-Name is), and a call without it is served.
func TestCallToolHeader(t *testing.T) {
	g, _ := gatewayFor(t, nil, standardUpstreams(t)...)
	var mu sync.Mutex
	var seen []string // the Mcp-Param-Tool of each tools/call
	inner := g.Handler(&HTTPOptions{AdminToken: testAdmin})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Mcp-Method") == "tools/call" {
			mu.Lock()
			seen = append(seen, r.Header.Get("Mcp-Param-Tool"))
			mu.Unlock()
		}
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)

	// The go-sdk's client sends it, once it has listed the tools.
	cs := httpClient(t, srv.URL, nil, nil)
	listNames(t, cs)
	if res := call(t, cs, toolCall, map[string]any{"name": "mcp__slack__post_message", "arguments": map[string]any{"text": "hi"}}); res.IsError {
		t.Fatalf("call: %s", text(res))
	}
	mu.Lock()
	if len(seen) != 1 || seen[0] != "mcp__slack__post_message" {
		t.Errorf("Mcp-Param-Tool sent: %q", seen)
	}
	mu.Unlock()

	caps := "{}"
	body := func(tool string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":%q,"arguments":{"text":"x"}},`+
			`"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":%s}}}`, tool, caps)
	}
	headers := func(param string) map[string]string {
		h := map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "call_tool"}
		if param != "" {
			h["Mcp-Param-Tool"] = param
		}
		return h
	}
	// A firewall let "list_channels" through; the body calls another.
	st, got, err := postWith(srv.URL+"/mcp", body("mcp__slack__post_message"), headers("mcp__slack__list_channels"))
	if err != nil || !strings.Contains(got, "-32020") || strings.Contains(got, `"tool":"post_message"`) {
		t.Errorf("a header that differs from the body: %d %s %v", st, got, err)
	}
	st, got, err = postWith(srv.URL+"/mcp", body("mcp__slack__post_message"), headers(""))
	if err != nil || !strings.Contains(got, `post_message`) || strings.Contains(got, "-32020") {
		t.Errorf("a call without the header: %d %s %v", st, got, err)
	}
	h := headers("mcp__slack__post_message")
	h["Mcp-Name"] = "search_tools"
	if st, got, err = postWith(srv.URL+"/mcp", body("mcp__slack__post_message"), h); err != nil || !strings.Contains(got, "-32020") {
		t.Errorf("Mcp-Name that differs from the body: %d %s %v", st, got, err)
	}

	// The check is one for every client, made before anything that
	// rewrites a request: a client declaring the tasks extension (whose
	// calls may become tasks, replayed with headers made from the body)
	// is refused alike, and its call never reaches the server.
	caps = `{"extensions":{"` + tasksExtension + `":{}}}`
	for _, tc := range []struct {
		name   string
		tool   string // the tool the body calls through call_tool
		header map[string]string
	}{
		{"another tool in Mcp-Param-Tool", "mcp__slack__post_message", headers("mcp__slack__list_channels")},
		{"a base64 header naming another tool", "mcp__slack__post_message", headers("=?base64?bWNwX19zbGFja19fbGlzdF9jaGFubmVscw==?=")},
		{"Mcp-Name naming search_tools", "mcp__slack__post_message", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "search_tools", "Mcp-Param-Tool": "mcp__slack__post_message"}},
		{"no Mcp-Name", "mcp__slack__post_message", map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Param-Tool": "mcp__slack__post_message"}},
		{"an empty tool name in the body", "", headers("mcp__slack__list_channels")},
	} {
		st, got, err := postWith(srv.URL+"/mcp", body(tc.tool), tc.header)
		if err != nil || !strings.Contains(got, "-32020") || strings.Contains(got, `"tool":"post_message"`) {
			t.Errorf("tasks client, %s: %d %s %v", tc.name, st, got, err)
		}
	}
	if st, got, err := postWith(srv.URL+"/mcp", body("mcp__slack__post_message"), headers("mcp__slack__post_message")); err != nil || strings.Contains(got, "-32020") || !strings.Contains(got, "post_message") {
		t.Errorf("tasks client, matching headers: %d %s %v", st, got, err)
	}
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"1"},"io.modelcontextprotocol/clientCapabilities":{}}`
	// What the check cannot read it refuses, for every client: a body
	// that is not JSON, params of another shape, another method than the
	// header says.
	for name, b := range map[string]string{
		"not JSON":               `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":`,
		"a name of another type": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":["call_tool"],"arguments":{"name":"mcp__slack__post_message"}}}`,
		"another method":         `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}`,
		// Keys the SDK's decoding matches as the header's tool, which a
		// reader of the first exact key would not: the SDK takes the
		// last, and matches keys whatever their case.
		"the tool named twice":      `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool",` + meta + `,"arguments":{"name":"mcp__slack__post_message","name":"mcp__slack__list_channels"}}}`,
		"the tool again, in caps":   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool",` + meta + `,"arguments":{"name":"mcp__slack__post_message","NAME":"mcp__slack__list_channels"}}}`,
		"the tool only in caps":     `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool",` + meta + `,"arguments":{"Name":"mcp__slack__list_channels"}}}`,
		"arguments again, folded":   `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool",` + meta + `,"arguments":{"name":"mcp__slack__post_message"},"argument\u017f":{"name":"mcp__slack__list_channels"}}}`,
		"params twice":              `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool",` + meta + `,"arguments":{"name":"mcp__slack__post_message"}},"PARAMS":{"name":"call_tool",` + meta + `,"arguments":{"name":"mcp__slack__list_channels"}}}`,
		"the method twice":          `{"jsonrpc":"2.0","id":1,"method":"tools/call","Method":"tools/list","params":{"name":"call_tool",` + meta + `,"arguments":{"name":"mcp__slack__post_message"}}}`,
		"arguments of another type": `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":["mcp__slack__post_message"]}}`,
		"a batch":                   `[{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__slack__post_message"}}}]`,
	} {
		st, got, err := postWith(srv.URL+"/mcp", b, headers("mcp__slack__post_message"))
		if err != nil || st != http.StatusBadRequest || !(strings.Contains(got, "-32700") || strings.Contains(got, "-32020")) || strings.Contains(got, "channels") && !strings.Contains(got, "-32") {
			t.Errorf("%s: %d %s %v", name, st, got, err)
		}
	}
}

// List results say how long a client may keep them and for whom
// (ttlMs, cacheScope): public for a gateway every client sees alike,
// private where profiles, people or activation make the list depend on
// who asks; and they come in the same order every time (prompt caches
// stay warm).
func TestListsAreCacheable(t *testing.T) {
	for _, tc := range []struct {
		opts  *Options
		scope string
	}{
		{nil, "public"},
		{&Options{PrivateLists: true}, "private"},
		{&Options{Activate: true}, "private"},
	} {
		g, _ := gatewayFor(t, tc.opts, standardUpstreams(t)...)
		cs := httpClient(t, httpGateway(t, g, nil), nil, nil)
		var first []string
		for range 3 {
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if res.TTLMs != listTTL || res.CacheScope != tc.scope {
				t.Errorf("%+v: ttlMs %d, cacheScope %q; want %d, %q", tc.opts, res.TTLMs, res.CacheScope, listTTL, tc.scope)
			}
			var names []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
			}
			if !slices.IsSorted(names) || (first != nil && !slices.Equal(first, names)) {
				t.Errorf("tools/list order: %v, then %v", first, names)
			}
			first = names
		}
		if res, err := cs.ListResources(context.Background(), nil); err != nil || res.CacheScope != tc.scope || res.TTLMs != listTTL {
			t.Errorf("resources/list: %+v %v", res, err)
		}
	}
}

// A 2026-07-28 client hears of list changes on one subscriptions/listen
// stream (its SDK opens it), fed by every server it may see: a tool one
// server adds reaches it, tagged with its subscription.
func TestListenAcrossServers(t *testing.T) {
	cfgs := append(standardUpstreams(t), memServer(t, "dyn", mcptest.SimpleTools("add_tool")))
	g, _ := gatewayFor(t, &Options{Settings: policy.Settings{Mode: policy.ModeStandard}}, cfgs...)
	url := httpGateway(t, g, nil)
	changed := make(chan any, 10)
	cs := httpClient(t, url, &mcp.ClientOptions{ToolListChangedHandler: func(_ context.Context, req *mcp.ToolListChangedRequest) {
		// Tagged with the subscription it came on.
		changed <- req.Params.GetMeta()["io.modelcontextprotocol/subscriptionId"]
	}}, nil)
	if v := cs.InitializeResult().ProtocolVersion; v != "2026-07-28" {
		t.Fatalf("negotiated %s", v)
	}
	call(t, cs, "mcp__dyn__add_tool", map[string]any{"name": "brand_new"})
	select {
	case tag := <-changed:
		if tag == nil || tag == "" {
			t.Error("the notification names no subscription")
		}
	case <-time.After(testenv.Timeout(config.DefaultTimeout)):
		t.Fatal("no list_changed on the client's listen stream")
	}
	if names := listNames(t, cs); !slices.Contains(names, "mcp__dyn__brand_new") {
		t.Errorf("new tool not listed: %v", names)
	}
}

// A request without a session is followed as its caller's: a person is
// the same caller whatever token or address they call with; without a
// person, the credential, address and client program tell callers apart.
func TestCallerOf(t *testing.T) {
	req := func(auth, addr, agent string, person string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		r.Header.Set("Authorization", auth)
		r.Header.Set("User-Agent", agent)
		r.RemoteAddr = addr
		if person != "" {
			r = r.WithContext(identity.WithPerson(r.Context(), &identity.Person{Subject: person}))
		}
		return r
	}
	same := func(a, b *http.Request) bool { return callerOf(a) == callerOf(b) }
	if !same(req("Bearer t1", "10.0.0.1:5000", "a", "alice"), req("Bearer t2", "10.0.0.9:6000", "b", "alice")) {
		t.Error("alice with a refreshed token from elsewhere is another caller")
	}
	if same(req("Bearer t1", "10.0.0.1:5000", "a", "alice"), req("Bearer t1", "10.0.0.1:5000", "a", "bob")) {
		t.Error("alice and bob are one caller")
	}
	if same(req("Bearer t1", "10.0.0.1:5000", "a", ""), req("Bearer t1", "10.0.0.1:5001", "b", "")) {
		t.Error("two client programs are one caller")
	}
	if !same(req("Bearer t1", "10.0.0.1:5000", "a", ""), req("Bearer t1", "10.0.0.1:5001", "a", "")) {
		t.Error("one client's two connections are two callers")
	}
}

// A request whose envelope is ambiguous (a key the gateway reads given
// twice, in any case, or a field of the wrong type) is refused at the
// front door for every method, whether or not a check reads that key
// today: the SDK takes the last of two keys, and a check could read
// another.
func TestAmbiguousRequestsRefused(t *testing.T) {
	g, _ := gatewayFor(t, nil, standardUpstreams(t)...)
	srv := httptest.NewServer(g.Handler(&HTTPOptions{AdminToken: testAdmin}))
	t.Cleanup(srv.Close)
	for _, body := range []string{
		`{"jsonrpc":"2.0","id":1,"method":"tools/list","METHOD":"tools/call","params":{"name":"mcp__slack__post_message","arguments":{}}}`,
		`{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"a","Name":"b"}}`,
		`{"jsonrpc":"2.0","id":3,"method":"tasks/get","params":{"taskId":"mine","TaskID":"theirs"}}`,
		`{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":["call_tool"],"arguments":{}}}`,
		`{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__slack__post_message","NAME":"mcp__github__delete_repo"}}}`,
		`{"jsonrpc":"2.0","id":6,"method":"resources/read","params":"skill://x"}`,
	} {
		st, got, err := postWith(srv.URL+"/mcp", body, map[string]string{"Authorization": "Bearer " + testAdmin})
		if err != nil || st != http.StatusBadRequest || !strings.Contains(got, "-32700") {
			t.Errorf("%s\n  answered %d %s %v, want 400 and -32700", body, st, got, err)
		}
	}
}
