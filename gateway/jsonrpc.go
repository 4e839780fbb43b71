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

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The go-sdk reads a JSON-RPC id into an int64 or a string: an id of
// 12345678901234567890 comes back as -9223372036854775808, 1.5 as 1, and
// 9007199254740993 as ...992, and a client matches the answer to no
// request. The gateway refuses such ids with an error instead, before the
// SDK sees them: a numeric id must be an integer a float64 holds exactly
// (|id| < 2^53), as JSON-RPC clients in JavaScript need anyway.

// maxSafeID is the largest integer every JSON number reader keeps exact.
const maxSafeID = 1<<53 - 1

// badID returns why a message's id cannot round-trip, or "" when it can
// (or the message has none, or is not JSON: the SDK answers that).
func badID(msg []byte) string {
	var m struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(msg, &m) != nil || len(m.ID) == 0 || m.ID[0] == '"' || string(m.ID) == "null" {
		return ""
	}
	if n, err := strconv.ParseInt(string(m.ID), 10, 64); err == nil && n >= -maxSafeID && n <= maxSafeID {
		return ""
	}
	return fmt.Sprintf("id %s must be a string or an integer between -(2^53-1) and 2^53-1, so that it comes back exactly", m.ID)
}

// idError is the JSON-RPC error answering a message with a bad id.
func idError(why string) []byte {
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": nil, "error": map[string]any{"code": -32600, "message": "Invalid Request: " + why}})
	return b
}

// batchBadID checks every message of a body that may be a batch.
func batchBadID(body []byte) string {
	body = bytes.TrimSpace(body)
	if len(body) > 0 && body[0] == '[' {
		var msgs []json.RawMessage
		if json.Unmarshal(body, &msgs) == nil {
			for _, m := range msgs {
				if why := badID(m); why != "" {
					return why
				}
			}
		}
		return ""
	}
	return badID(body)
}

// checkIDs refuses an HTTP request whose JSON-RPC id would not come back
// exactly, with 400 and a JSON-RPC error naming it.
func checkIDs(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			body, err := io.ReadAll(io.LimitReader(r.Body, MaxRequestBytes+1))
			r.Body = io.NopCloser(bytes.NewReader(body))
			if err == nil {
				if why := batchBadID(body); why != "" {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(http.StatusBadRequest)
					w.Write(idError(why))
					return
				}
			}
		}
		h.ServeHTTP(w, r)
	})
}

// StdioTransport is an mcp.IOTransport over r and w that answers a
// message whose id would not come back exactly with a JSON-RPC error
// itself, and passes every other line to the SDK.
func StdioTransport(r io.Reader, w io.Writer) mcp.Transport {
	lw := &lockedWriter{w: w}
	pr, pw := io.Pipe()
	go func() {
		br := bufio.NewReaderSize(r, 64<<10)
		for {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) > 0 {
				if why := batchBadID(line); why != "" {
					lw.Write(append(idError(why), '\n'))
				} else if _, werr := pw.Write(line); werr != nil {
					return
				}
			}
			if err != nil {
				pw.CloseWithError(err)
				return
			}
		}
	}()
	return &mcp.IOTransport{Reader: pr, Writer: lw}
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
