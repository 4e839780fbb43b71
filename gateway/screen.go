package gateway

import (
	"encoding/json"

	"github.com/toolshelf/toolshelf/internal/jsonscan"
	"github.com/toolshelf/toolshelf/search"
)

// The go-sdk decodes a message with about 25 bytes of heap for each of
// its bytes, all live at once: a search_tools query of 4 MB (a request
// may have 4 MiB) took the gateway's heap from 25 to 100 MB for the
// time of the request. A search reads only the first search.MaxQuery
// bytes of its query, so a longer query is cut to screenedQuery bytes in
// the message before the SDK decodes it: the search, its note ("the
// query was cut") and its answer are the same, and the message costs
// what its other fields do.

// screenedQuery is what is kept of a long query: room beyond what is
// searched, so that the search still sees that it was cut.
const screenedQuery = 4 * search.MaxQuery

// screenMessage returns msg (one valid JSON-RPC message, as a body or a
// line of stdio) with a search_tools query longer than screenedQuery cut
// to it, or msg itself.
func screenMessage(msg []byte) []byte {
	if len(msg) < screenedQuery {
		return msg
	}
	var method, name string
	start, end := -1, -1 // the query's string in msg
	sc := jsonscan.New(msg)
	sc.Object(func(key string) {
		switch key {
		case "method":
			method, _ = sc.String()
		case "params":
			sc.Object(func(key string) {
				switch key {
				case "name":
					name, _ = sc.String()
				case "arguments":
					sc.Object(func(key string) {
						if key != "query" || sc.Peek() != '"' {
							return
						}
						start = sc.Pos() // Peek put it at the string
						end = start + len(sc.Value())
					})
				}
			})
		}
	})
	return cutQuery(msg, method, name, start, end)
}

// cutQuery returns msg with the search_tools query at msg[start:end] cut
// to screenedQuery, when it is longer; else msg.
func cutQuery(msg []byte, method, name string, start, end int) []byte {
	if method != "tools/call" || name != toolSearch || start < 0 || end-start <= screenedQuery {
		return msg
	}
	query, ok := jsonscan.Unquote(msg[start:end])
	if !ok || len(query) <= screenedQuery {
		return msg
	}
	kept, _ := json.Marshal(cut(query, screenedQuery))
	out := make([]byte, 0, start+len(kept)+len(msg)-end)
	return append(append(append(out, msg[:start]...), kept...), msg[end:]...)
}
