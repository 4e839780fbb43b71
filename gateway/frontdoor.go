package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/toolshelf/toolshelf/internal/jsonscan"
)

// The front door: every request to an MCP path passes the same checks in
// the same order, built in one place (frontDoor), and a POST's body is
// read once, by screenRequests, into an envelope that every check after
// it reads instead of the body:
//
//	checkOrigin      a browser page of another origin
//	authorize        bearer, profile or person token, or a replica's signature
//	relay            (a fleet) the replica holding the session or the parked call
//	screenRequests   the body read whole (MaxRequestBytes), the envelope; ids that cannot come back; long queries cut; large bodies a few at a time
//	serveExtensions  skills/list, skills/get, groups/list, groups/get: methods the go-sdk has none for
//	era              MCP 2026-07-28 without sessions, or an earlier client's session
//	checkCall        (2026-07-28) a tools/call's headers are its body's tool
//	tasker           (2026-07-28) tasks/*, and the mark on a call that may become a task
//	the go-sdk       JSON-RPC, the typed params, the handlers (runAsTask, the tools)

// frontDoor is the handler of one gateway's MCP path: its checks,
// outermost first, in front of its transports.
func (s *Server) frontDoor(opts *HTTPOptions, relay func(http.Handler) http.Handler, large chan struct{}) http.Handler {
	return checkOrigin(opts.authorize(s.Profile(), s.behindDoor(opts, relay, large)))
}

// behindDoor is what the front door lets a request through to: the
// fleet's relay, the screen of large messages, the extensions and the
// transport, which holds the sessions (a Host keeps it while the door
// changes with the profiles).
func (s *Server) behindDoor(opts *HTTPOptions, relay func(http.Handler) http.Handler, large chan struct{}) http.Handler {
	return relay(screenRequests(large, s.serveExtensions(s.mcpHandler(opts))))
}

// envelope is what the front door reads of a JSON-RPC request.
type envelope struct {
	body   []byte
	valid  bool // the body is JSON; one that is not is the SDK's to answer
	batch  bool
	id     []byte
	method string
	name   string  // params.name
	target *string // params.arguments.name: the tool a call_tool calls
	taskID string  // params.taskId
	// tasks: params._meta's client capabilities declare the tasks
	// extension; taskIDs: params.notifications.taskIds names some.
	tasks, taskIDs bool
	// query is where a search_tools query's string is in the body
	// (start and end), or -1.
	query [2]int
	// bad says why the request cannot be read as the SDK would read it:
	// a field of the wrong type, or a key given twice (encoding/json
	// takes the last, matching keys without regard to case, and a check
	// reading the first would not check what runs).
	bad string
}

type envelopeKey struct{}

// readEnvelope reads the envelope of a message read whole.
func readEnvelope(body []byte) *envelope {
	e := &envelope{body: body, query: [2]int{-1, -1}}
	if e.valid = jsonscan.Valid(body); !e.valid {
		return e
	}
	sc := jsonscan.New(body)
	if sc.Peek() == '[' {
		e.batch = true
		return e
	}
	var f fields
	sc.Members(func(key string) {
		switch f.of(key, "id", "method", "params") {
		case "id":
			e.id = sc.Value()
		case "method":
			e.method = f.str(sc, "method")
		case "params":
			e.params(sc, &f)
		}
	})
	e.bad = f.bad
	return e
}

// params reads the envelope's part of a request's params.
func (e *envelope) params(sc *jsonscan.Scanner, f *fields) {
	f.object(sc, "params", func(key string) {
		switch f.of(key, "name", "arguments", "taskId", "_meta", "notifications") {
		case "name":
			e.name = f.str(sc, "params.name")
		case "taskId":
			e.taskID = f.str(sc, "params.taskId")
		case "arguments":
			e.arguments(sc, f)
		case "_meta":
			sc.Members(func(key string) {
				if key != "io.modelcontextprotocol/clientCapabilities" {
					return
				}
				sc.Members(func(key string) {
					if key == "extensions" {
						sc.Members(func(key string) { e.tasks = e.tasks || key == tasksExtension })
					}
				})
			})
		case "notifications":
			sc.Members(func(key string) {
				if key == "taskIds" {
					v := sc.Value()
					e.taskIDs = len(v) > 0 && string(v) != "null" && string(v) != "[]"
				}
			})
		}
	})
}

// arguments reads a call's arguments: call_tool's tool, and a search's
// query.
func (e *envelope) arguments(sc *jsonscan.Scanner, f *fields) {
	var g fields
	f.object(sc, "params.arguments", func(key string) {
		switch g.of(key, "name", "query") {
		case "name":
			if sc.Peek() == 'n' { // null: no tool named
				sc.Skip()
				return
			}
			name := g.str(sc, "params.arguments.name")
			e.target = &name
		case "query":
			if sc.Peek() == '"' {
				e.query[0] = sc.Pos()
				e.query[1] = e.query[0] + len(sc.Value())
			}
		}
	})
	if f.bad == "" {
		f.bad = g.bad
	}
}

// fields follows the keys of one object as encoding/json matches them to
// a struct's fields, and what is wrong with them.
type fields struct {
	seen [8]string // the few names a check reads
	n    int
	bad  string
}

// of returns which of names key is, as encoding/json matches it (case
// folded), or "": a name met twice makes the object bad.
func (f *fields) of(key string, names ...string) string {
	for _, n := range names {
		if strings.EqualFold(key, n) {
			for _, s := range f.seen[:f.n] {
				if s == n && f.bad == "" {
					f.bad = fmt.Sprintf("the key %q is given twice (or in two cases)", n)
				}
			}
			if f.n < len(f.seen) {
				f.seen[f.n] = n
				f.n++
			}
			return n
		}
	}
	return ""
}

// str reads a string field; null reads as "", as encoding/json has it.
func (f *fields) str(sc *jsonscan.Scanner, where string) string {
	if sc.Peek() == 'n' {
		sc.Skip()
		return ""
	}
	s, ok := sc.String()
	if !ok && f.bad == "" {
		f.bad = where + " is not a string"
	}
	return s
}

// object reads an object field with member; null reads as none. It
// reports whether the value was an object.
func (f *fields) object(sc *jsonscan.Scanner, where string, member func(key string)) bool {
	if sc.Peek() == 'n' {
		sc.Skip()
		return false
	}
	if !sc.Members(member) {
		if f.bad == "" {
			f.bad = where + " is not an object"
		}
		return false
	}
	return true
}

// envelopeOf returns a request's envelope: the front door's, or, for a
// request that did not pass it, read now (the body read whole, within
// MaxRequestBytes, and put back). nil for a body that cannot be read or
// is past the bound.
func envelopeOf(r *http.Request) *envelope {
	if e, ok := r.Context().Value(envelopeKey{}).(*envelope); ok {
		return e
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
	r.Body = io.NopCloser(bytes.NewReader(body))
	if err != nil || len(body) > MaxRequestBytes {
		return nil
	}
	return readEnvelope(body)
}

// withEnvelope is r carrying its envelope, for the checks after the
// front door.
func withEnvelope(r *http.Request, e *envelope) *http.Request {
	return r.WithContext(context.WithValue(r.Context(), envelopeKey{}, e))
}

// serveExtensions answers the methods of the extensions the gateway
// serves that the go-sdk has no methods for (skills.go, groups.go), for
// clients of every revision; anything else goes on to next.
func (s *Server) serveExtensions(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost {
			next.ServeHTTP(w, r)
			return
		}
		e := envelopeOf(r)
		res, rpcErr, ok := s.answerExtension(r.Context(), e)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		writeRPC(w, e.id, res, rpcErr)
	})
}

// answerExtension answers e if it is a request of an extension's method
// the go-sdk has none for (ok), over any transport: its params read, and
// its result written, once here for every method.
func (s *Server) answerExtension(ctx context.Context, e *envelope) (result, rpcErr json.RawMessage, ok bool) {
	answer := s.extensionMethod(e)
	if answer == nil {
		return nil, nil, false
	}
	var msg struct {
		Params extensionParams `json:"params"`
	}
	if err := json.Unmarshal(e.body, &msg); err != nil {
		return nil, rpcError(jsonrpc.CodeInvalidParams, e.method+": "+cut(err.Error(), echoLimit)), true
	}
	res, rpcErr := answer(ctx, e.method, msg.Params)
	if rpcErr != nil {
		return nil, rpcErr, true
	}
	b, err := json.Marshal(res)
	if err != nil {
		return nil, rpcError(jsonrpc.CodeInternalError, err.Error()), true
	}
	return b, nil, true
}

// extensionParams are the params of the extensions' methods the gateway
// answers itself: what a skill, a group or a folder is named by, and the
// page asked for.
type extensionParams struct {
	URI    string `json:"uri"`
	Name   string `json:"name"`
	Cursor string `json:"cursor"`
}

// An extensionMethod answers one of those methods: its result, or a
// JSON-RPC error.
type extensionMethod func(ctx context.Context, method string, p extensionParams) (result any, rpcErr json.RawMessage)

// extensionMethod is what answers a request of an extension's method the
// go-sdk has none for, or nil.
func (s *Server) extensionMethod(e *envelope) extensionMethod {
	if e == nil || e.batch || !e.valid || len(e.id) == 0 {
		return nil
	}
	switch e.method {
	case "skills/list", "skills/get":
		return s.skillsMethod
	case "groups/list", "groups/get":
		return s.groupsMethod
	case "resources/directory/read":
		if s.up.ReadsSkillDirectories() {
			return s.directoryMethod
		}
	}
	return nil
}
