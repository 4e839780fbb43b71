package gateway

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/shelf"

	"github.com/google/go-cmp/cmp"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/internal/testenv"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/upstream"
)

// A model writes what it likes into names and queries. A megabyte of it
// costs bounded work (BenchmarkHostileName measures it) and is not
// echoed back whole.
func TestHostileNamesAndQueries(t *testing.T) {
	cs := connect(t, newGateway(t, upstream.Fixed(builtin.Catalog(), "the built-in catalog").Scope(nil), nil), nil)
	huge := strings.Repeat("mcp__github__create_issue_", 1<<20/26)

	res := call(t, cs, toolCall, map[string]any{"name": huge})
	if !res.IsError || !strings.Contains(text(res), "bytes in all") || len(text(res)) > 2000 {
		t.Errorf("call_tool with a %d-byte name: %d bytes back: %.300s", len(huge), len(text(res)), text(res))
	}
	res = call(t, cs, toolCall, map[string]any{"name": "mcp__github__create_isue"})
	if !strings.Contains(text(res), "mcp__github__create_issue") {
		t.Errorf("a near miss gets no suggestion: %s", text(res))
	}

	res = call(t, cs, toolSearch, map[string]any{"query": "create a github issue " + huge})
	var sr searchResult
	if err := json.Unmarshal([]byte(text(res)), &sr); err != nil {
		t.Fatalf("search_tools with a %d-byte query: %v: %.300s", len(huge), err, text(res))
	}
	if len(sr.Query) > echoLimit || !strings.Contains(sr.Note, search.NoteCut) || len(sr.Matches) == 0 {
		t.Errorf("search_tools with a %d-byte query: query echoed %d bytes, note %q, %d matches", len(huge), len(sr.Query), sr.Note, len(sr.Matches))
	}
}

// A server that writes a megabyte of description costs a compact match
// a sentence of it, and a whole match (search.results "full") ten
// kilobytes; select: gives the whole text.
func TestLongDescriptionsAreCut(t *testing.T) {
	long := strings.Repeat("Reads a ledger entry and more ", 50_000)
	for _, form := range []shelf.Form{shelf.Compact, shelf.Full} {
		g, _ := gatewayFor(t, &Options{Results: form}, memServer(t, "ledger", []json.RawMessage{rawTool("read_entry", long, nil)}))
		cs := connect(t, g, nil)
		var sr searchResult
		json.Unmarshal([]byte(text(call(t, cs, toolSearch, map[string]any{"query": "read a ledger entry"}))), &sr)
		switch {
		case len(sr.Matches) != 1:
			t.Fatalf("%s: %d matches", form, len(sr.Matches))
		case form == shelf.Compact && (len(sr.Matches[0].Purpose) > 200 || sr.Matches[0].Description != ""):
			t.Errorf("compact: purpose of %d bytes, description of %d", len(sr.Matches[0].Purpose), len(sr.Matches[0].Description))
		case form == shelf.Full && (len(sr.Matches[0].Description) > 10_200 || !strings.Contains(sr.Matches[0].Description, "select:mcp__ledger__read_entry gives the whole text")):
			t.Errorf("full: description of %d bytes", len(sr.Matches[0].Description))
		}
		json.Unmarshal([]byte(text(call(t, cs, toolSearch, map[string]any{"query": "select:mcp__ledger__read_entry"}))), &sr)
		if len(sr.Matches) != 1 || sr.Matches[0].Description != long {
			t.Errorf("%s: select: did not give the whole description", form)
		}
	}
}

// BenchmarkHostileName is the cost of answering call_tool with a one
// megabyte unknown name over the built-in catalog (519 tools).
func BenchmarkHostileName(b *testing.B) {
	cs := connect(b, newGateway(b, upstream.Fixed(builtin.Catalog(), "the built-in catalog").Scope(nil), nil), nil)
	huge := strings.Repeat("x", 1<<20)
	for b.Loop() {
		call(b, cs, toolCall, map[string]any{"name": huge})
	}
}

// BenchmarkHostileQuery is the cost of search_tools with a one megabyte
// query (cut to MaxQuery) over the built-in catalog.
func BenchmarkHostileQuery(b *testing.B) {
	cs := connect(b, newGateway(b, upstream.Fixed(builtin.Catalog(), "the built-in catalog").Scope(nil), nil), nil)
	huge := strings.Repeat("create a github issue ", 1<<20/22)
	for b.Loop() {
		call(b, cs, toolSearch, map[string]any{"query": huge})
	}
}

// Profiles with tokens and no --auth-token: /mcp (every tool) is closed,
// not open to any local process; the profile's path takes its token; and
// the start-up log's wording says who may open each path.
func TestProfileTokensCloseEverything(t *testing.T) {
	pool := upstream.NewPool(standardUpstreams(t), nil)
	host, err := NewHost(pool, &HostOptions{Profiles: []config.Profile{
		{Name: "ro", Servers: []string{"github"}, Tokens: []string{"ro-token-0123456789abcdef"}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	background(t, host.Run)
	srv := httptest.NewServer(host.Handler())
	t.Cleanup(srv.Close)
	url := srv.URL
	ping := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		path, token string
		want        int
	}{
		{"/mcp", "", http.StatusUnauthorized},
		{"/mcp", "ro-token-0123456789abcdef", http.StatusForbidden},
		{"/mcp/ro", "", http.StatusUnauthorized},
		{"/mcp/ro", "ro-token-0123456789abcdef", http.StatusOK},
	} {
		hdr := map[string]string{}
		if tc.token != "" {
			hdr["Authorization"] = "Bearer " + tc.token
		}
		st, body, err := postWith(url+tc.path, ping, hdr)
		if err != nil || st != tc.want {
			t.Errorf("%s with %q: %d %v %s, want %d", tc.path, tc.token, st, err, body, tc.want)
		}
		if tc.path == "/mcp" && tc.token == "" && !strings.Contains(body, "--auth-token-file") {
			t.Errorf("the refusal does not say what opens /mcp: %s", body)
		}
	}
	want := []Route{{"/mcp", "everything", "no one: profiles have tokens and no admin token is set (--auth-token-file)"}, {"/mcp/ro", "ro", "its 1 token(s)"}}
	if diff := cmp.Diff(want, host.Routes()); diff != "" {
		t.Errorf("routes (-want +got):\n%s", diff)
	}
	if got := (&HTTPOptions{}).Access(""); got != "anyone who can reach the address" {
		t.Errorf("without tokens: %q", got)
	}
}

// A search query over what is searched is cut before the SDK decodes the
// message, over HTTP and stdio: the answer is the same (the note says the
// query was cut, the tool is found), and the gateway's heap does not hold
// the SDK's 25 bytes a byte of it.
func TestLongQueryScreened(t *testing.T) {
	huge := "create a github issue " + strings.Repeat("é", 1<<20)
	msg, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call",
		"params": map[string]any{"name": toolSearch, "arguments": map[string]any{"query": huge, "limit": 3}}})
	out, _ := screen(msg)
	var m struct {
		ID     int `json:"id"`
		Params struct {
			Name      string `json:"name"`
			Arguments struct {
				Query string `json:"query"`
				Limit int    `json:"limit"`
			} `json:"arguments"`
		} `json:"params"`
	}
	if err := json.Unmarshal(out, &m); err != nil {
		t.Fatal(err)
	}
	q := m.Params.Arguments.Query
	if len(q) > screenedQuery || len(q) <= search.MaxQuery || !strings.HasPrefix(huge, q) || !utf8.ValidString(q) || m.ID != 7 || m.Params.Arguments.Limit != 3 {
		t.Errorf("screened: id %d, limit %d, a query of %d bytes", m.ID, m.Params.Arguments.Limit, len(q))
	}
	// Left alone: other tools' arguments, short queries, invalid JSON.
	for _, keep := range [][]byte{
		bytes.Replace(msg, []byte(`"search_tools"`), []byte(`"call_tool"`), 1),
		[]byte(`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"search_tools","arguments":{"query":"create an issue"}}}`),
		msg[:len(msg)-1],
	} {
		if got, _ := screen(keep); !bytes.Equal(got, keep) {
			t.Errorf("a message that is not a long search was changed: %.100s", keep)
		}
	}

	g := newGateway(t, upstream.Fixed(builtin.Catalog(), "the built-in catalog").Scope(nil), nil)
	url := httpGateway(t, g, nil)
	cs := httpClient(t, url, nil, nil)
	res := call(t, cs, toolSearch, map[string]any{"query": huge})
	var sr searchResult
	if err := json.Unmarshal([]byte(text(res)), &sr); err != nil {
		t.Fatalf("%v: %.300s", err, text(res))
	}
	if !strings.Contains(sr.Note, search.NoteCut) || len(sr.Matches) == 0 || !strings.Contains(sr.Matches[0].Name, "issue") {
		t.Errorf("a screened search over HTTP: note %q, %d matches", sr.Note, len(sr.Matches))
	}
}

// Large messages are served a few at a time, however many clients send
// them at once: the SDK's decoding of each costs about 25 times its size.
func TestLargeMessagesBounded(t *testing.T) {
	large := make(chan struct{}, maxLargeMessages)
	var inside, most atomic.Int32
	release := make(chan struct{})
	h := screenRequests(large, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ContentLength <= largeMessage {
			return // a small message, answered at once
		}
		n := inside.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		<-release
		inside.Add(-1)
	}))
	srv := httptest.NewServer(h)
	defer srv.Close()
	body := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"call_tool","arguments":{"name":"mcp__files__write","arguments":{"text":"` + strings.Repeat("x", 1<<20) + `"}}}}`
	var wg sync.WaitGroup
	for range 3 * maxLargeMessages {
		wg.Go(func() {
			resp, err := http.Post(srv.URL, "application/json", strings.NewReader(body))
			if err == nil {
				resp.Body.Close()
			}
		})
	}
	testenv.Eventually(t, 10*time.Second, "the first large messages to be served", func() bool { return inside.Load() == maxLargeMessages })
	// A small message is not held back by the large ones.
	resp, err := http.Post(srv.URL, "application/json", strings.NewReader(`{"jsonrpc":"2.0","id":2,"method":"ping"}`))
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	close(release)
	wg.Wait()
	if m := most.Load(); m > maxLargeMessages {
		t.Errorf("%d large messages served at once; want at most %d", m, maxLargeMessages)
	}
}
