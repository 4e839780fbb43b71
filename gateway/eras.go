package gateway

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net"
	"net/http"
	"strings"

	"github.com/toolshelf/toolshelf/identity"
)

// Serving both eras of MCP on one path (see mcpHandler): which requests
// have no session, who their caller is, and the header a 2026-07-28 call
// carries its tool in.

// checkCall is the one check of what a 2026-07-28 tools/call is, made
// before anything that reads its headers (tasks, the
// fleet's relay, rounds): Mcp-Name must name the body's tool, and a
// call_tool's Mcp-Param-Tool the tool the body calls through it, or the
// request is refused with -32020, whatever the client declares. What
// routes or filters by header then routes what runs. A call_tool without
// Mcp-Param-Tool gets it filled in from the body: a client that called
// without listing tools first cannot know the header, and what it did
// not send, nothing in front of the gateway acted on.
func checkCall(h http.Handler) http.Handler {
	const param = "Mcp-Param-" + toolHeader
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get("Mcp-Method") != "tools/call" {
			h.ServeHTTP(w, r)
			return
		}
		e := envelopeOf(r) // read once, by the front door
		var id []byte
		if e != nil {
			id = e.id
		}
		refuseCode := func(code int, format string, args ...any) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			writeRPC(w, id, nil, rpcError(code, fmt.Sprintf(format, args...)))
		}
		refuse := func(format string, args ...any) { refuseCode(-32020, format, args...) }
		// What cannot be read is refused here, not passed on to be read
		// again by something that may read it otherwise.
		switch {
		case e == nil:
			refuseCode(-32700, "the request body could not be read whole (at most %d bytes)", MaxRequestBytes)
			return
		case !e.valid || e.batch:
			refuseCode(-32700, "the request is not a JSON-RPC tools/call this gateway can read: not one JSON object")
			return
		case e.bad != "":
			refuseCode(-32700, "the request is not a JSON-RPC tools/call this gateway can read: %s", e.bad)
			return
		}
		if e.method != "tools/call" {
			refuse("the Mcp-Method header says tools/call, and the body is %s", quoteClipped(e.method))
			return
		}
		if got := r.Header.Get("Mcp-Name"); got != headerValue(e.name) {
			refuse("the Mcp-Name header %s is not the tool the body calls, %s", quoteClipped(got), quoteClipped(e.name))
			return
		}
		if e.name != toolCall || e.target == nil {
			h.ServeHTTP(w, r)
			return
		}
		target := *e.target
		switch got := r.Header.Get(param); {
		case got == "" && target != "":
			r.Header.Set(param, headerValue(target))
		case got != headerValue(target):
			refuse("the %s header %s is not the tool the body calls through %s, %s", param, quoteClipped(got), toolCall, quoteClipped(target))
			return
		}
		h.ServeHTTP(w, r)
	})
}

// headerValue is a header's form of a string parameter: as it is when it
// is printable ASCII without surrounding space, else base64 in the form
// x-mcp-header defines.
func headerValue(s string) string {
	plain := s == strings.TrimSpace(s)
	for i := 0; i < len(s) && plain; i++ {
		plain = s[i] >= 0x20 && s[i] < 0x7f
	}
	if plain {
		return s
	}
	return "=?base64?" + base64.StdEncoding.EncodeToString([]byte(s)) + "?="
}

// firstSessionless is the first MCP revision without sessions.
const firstSessionless = "2026-07-28"

// sessionless reports whether a request's protocol version header names
// a revision without sessions. Versions are dates, so they compare as
// strings; an empty or malformed one is an older client's.
func sessionless(version string) bool {
	return len(version) == len(firstSessionless) && version >= firstSessionless
}

// callerKey carries the caller of a request without a session (callerOf).
type callerKey struct{}

// callerOf names the caller of a request without a session, for
// following its searches and calls as a session's (what search learns,
// the rank metrics) and for whom a task answers: a person signed in
// through the team's identity provider is themselves, wherever they call
// from (their access token changes as it is refreshed; they do not);
// else the credential, the address and the client program, hashed. Two clients behind one address
// with one credential and one client program are one caller; learning
// counts them once, which errs on the safe side of its guards.
func callerOf(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr
	}
	who := r.Header.Get("Authorization") + "\x00" + host + "\x00" + r.Header.Get("User-Agent")
	if p := identity.PersonOf(r.Context()); p != nil {
		who = "person\x00" + p.Subject // wherever they are
	}
	sum := sha256.Sum256([]byte(who))
	return "caller:" + hex.EncodeToString(sum[:12])
}
