package gateway

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/jsonscan"
)

// The go-sdk reads a JSON-RPC id into an int64 or a string: an id of
// 12345678901234567890 comes back as -9223372036854775808, 1.5 as 1, and
// 9007199254740993 as ...992, and a client matches the answer to no
// request. The gateway refuses such ids with an error instead, before the
// SDK sees them: a numeric id must be an integer a float64 holds exactly
// (|id| < 2^53), as JSON-RPC clients in JavaScript need anyway.

// maxSafeID is the largest integer every JSON number reader keeps exact.
const maxSafeID = 1<<53 - 1

// badID returns why a valid message's id cannot round-trip, or "" when
// it can (or the message has none). It reads the id without decoding the
// message: a 4 MiB message is scanned, not copied.
func badID(msg []byte) string {
	var id []byte
	sc := jsonscan.New(msg)
	sc.Object(func(key string) {
		v := sc.Value()
		if key == "id" {
			id = v // the last, as encoding/json takes it
		}
	})
	return idProblem(id)
}

// idProblem returns why a message's id (its JSON, nil when it has none)
// cannot round-trip, or "".
func idProblem(id []byte) string {
	if len(id) == 0 || id[0] == '"' || string(id) == "null" {
		return ""
	}
	if n, err := strconv.ParseInt(string(id), 10, 64); err == nil && n >= -maxSafeID && n <= maxSafeID {
		return ""
	}
	return fmt.Sprintf("id %s must be a string or an integer between -(2^53-1) and 2^53-1, so that it comes back exactly", cut(string(id), 100))
}

// idError is the JSON-RPC error answering a message with a bad id.
func idError(why string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": "Invalid Request: " + why}})
	return b
}

// batchBadID checks every message of a valid body that may be a batch.
func batchBadID(body []byte) string {
	sc := jsonscan.New(body)
	if sc.Peek() != '[' {
		return badID(body)
	}
	why := ""
	sc.Array(func() {
		if m := sc.Value(); why == "" {
			why = badID(m)
		}
	})
	return why
}

// screen checks a message read whole, and returns it as the SDK may take
// it: why its id cannot come back exactly, or the message with a long
// search query cut (screenMessage). A message that is not JSON is left
// to the SDK, which answers it.
func screen(msg []byte) (out []byte, badID string) {
	if !jsonscan.Valid(msg) {
		return msg, ""
	}
	if why := batchBadID(msg); why != "" {
		return nil, why
	}
	return screenMessage(msg), ""
}

// Large messages (a tool's arguments of megabytes) are served
// maxLargeMessages at a time.
const (
	largeMessage     = 256 << 10
	maxLargeMessages = 4
)

// screenRequests reads a POST's body once, whole, into its envelope,
// which the checks after it read (envelopeOf); refuses a request whose
// JSON-RPC id would not come back exactly, with 400 and a JSON-RPC error
// naming it; cuts a long search query before the SDK decodes it; and
// serves large messages a few at a time.
func screenRequests(large chan struct{}, h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			// Room for the body its length announces (within the
			// bound): growing a buffer for a 4 MiB body allocates
			// twice that.
			buf := bytes.NewBuffer(make([]byte, 0, min(max(r.ContentLength, 0), MaxRequestBytes+1)+bytes.MinRead))
			_, err := buf.ReadFrom(io.LimitReader(r.Body, MaxRequestBytes+1))
			body := buf.Bytes()
			if err == nil && len(body) <= MaxRequestBytes {
				e := readEnvelope(body)
				if why := e.screen(); why != "" {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					w.Write(idError(why))
					return
				}
				if e.bad != "" {
					// A key given twice, or a field of the wrong type: a
					// check reading it could check other than what the SDK
					// runs. Refused here for every method, not only where
					// a check reads it today.
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					writeRPC(w, e.id, nil, rpcError(-32700, "the request cannot be read as one JSON-RPC message: "+e.bad))
					return
				}
				body = e.body
				r.ContentLength = int64(len(body))
				r = withEnvelope(r, e)
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
			if len(body) > largeMessage {
				// A few large messages are decoded at a time, however
				// many clients send them: each costs the heap about 25
				// times its size while it is served.
				select {
				case large <- struct{}{}:
					defer func() { <-large }()
				case <-r.Context().Done():
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// screen is screen's work on a message whose envelope is read: why its
// id cannot come back, or "" with a long query cut in e.body.
func (e *envelope) screen() string {
	switch {
	case !e.valid:
		return ""
	case e.batch:
		return batchBadID(e.body)
	}
	if why := idProblem(e.id); why != "" {
		return why
	}
	e.body = cutQuery(e.body, e.method, e.name, e.query[0], e.query[1])
	return ""
}

// StdioTransport is an mcp.IOTransport over r and w that answers a
// message whose id would not come back exactly with a JSON-RPC error
// itself, and passes every other line to the SDK; once a gateway serves
// it (Server.ServeStdio), the gateway answers the extensions' methods the
// SDK has none for (skills/*, groups/*) on it too.
func StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	lw := &lockedWriter{w: w}
	pr, pw := io.Pipe()
	t := &stdioTransport{IOTransport: &mcp.IOTransport{Reader: pr, Writer: lw}}
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				e := readEnvelope(line)
				if why := e.screen(); why != "" {
					lw.Write(append(idError(why), '\n'))
				} else if answer := t.answer(e); answer != nil {
					lw.Write(append(answer, '\n'))
				} else if _, werr := pw.Write(e.body); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return t
}

// stdioTransport is StdioTransport's transport: the SDK's, and the
// gateway's answers to what the SDK has no methods for.
type stdioTransport struct {
	*mcp.IOTransport
	answers atomic.Pointer[func(e *envelope) []byte]
}

// answer is the gateway's answer to a line, or nil for the SDK's.
func (t *stdioTransport) answer(e *envelope) []byte {
	if f := t.answers.Load(); f != nil {
		return (*f)(e)
	}
	return nil
}

// lockedWriter serialises the SDK's writes and the gateway's own.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (l *lockedWriter) Close() error { return nil }
