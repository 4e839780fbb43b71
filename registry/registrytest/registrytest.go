// Package registrytest serves the read side of the MCP Registry API
// (/v0.1, as its OpenAPI description has it) from a file of entries, and
// the npm registry's version metadata of their packages, on loopback:
// for tests of what reads registries. The entries' "REGISTRY" is the
// server's own URL.
package registrytest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/toolshelf/toolshelf/registry"
)

// Registry is a registry on loopback.
type Registry struct {
	URL string

	mu      sync.Mutex
	entries []registry.Entry
	npm     map[string]json.RawMessage
	asked   map[string]int // GETs of one server's versions, by name
}

// Asked returns how many times a server's versions were asked for by
// name since the last call, by server name.
func (r *Registry) Asked() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	a := r.asked
	r.asked = nil
	return a
}

// Serve serves the entries of a file (testdata/registry/servers.json's
// shape) until the test ends.
func Serve(t testing.TB, file string) *Registry {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	r := &Registry{}
	srv := httptest.NewServer(http.HandlerFunc(r.serve))
	t.Cleanup(srv.Close)
	r.URL = srv.URL
	var f struct {
		Servers []registry.Entry           `json:"servers"`
		NPM     map[string]json.RawMessage `json:"npm"`
	}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(data), "REGISTRY", srv.URL)), &f); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	r.entries, r.npm = f.Servers, f.NPM
	return r
}

// Publish adds an entry (a new version is the latest; the others of its
// server no longer are).
func (r *Registry) Publish(e registry.Entry) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.entries {
		if r.entries[i].Server.Name == e.Server.Name {
			r.entries[i].Meta.Official.IsLatest = false
		}
	}
	e.Meta.Official.IsLatest = true
	r.entries = append(r.entries, e)
}

// SetStatus sets the status of every version of a server.
func (r *Registry) SetStatus(name, status, message string, at time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for i := range r.entries {
		if r.entries[i].Server.Name == name {
			r.entries[i].Meta.Official.Status, r.entries[i].Meta.Official.StatusMessage = status, message
			r.entries[i].Meta.Official.UpdatedAt = at
		}
	}
}

func (r *Registry) serve(w http.ResponseWriter, req *http.Request) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if req.Method != http.MethodGet {
		http.Error(w, `{"error":"read only"}`, http.StatusMethodNotAllowed)
		return
	}
	path := req.URL.EscapedPath()
	q := req.URL.Query()
	switch {
	case strings.HasPrefix(path, "/npm/"):
		key, _ := url.PathUnescape(strings.TrimPrefix(path, "/npm/"))
		if m, ok := r.npm[key]; ok {
			w.Write(m)
			return
		}
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
	case path == "/v0.1/servers":
		r.list(w, q)
	case strings.HasPrefix(path, "/v0.1/servers/"):
		rest := strings.TrimPrefix(path, "/v0.1/servers/")
		parts := strings.Split(rest, "/")
		name, _ := url.PathUnescape(parts[0])
		if r.asked == nil {
			r.asked = map[string]int{}
		}
		r.asked[name]++
		deleted := q.Get("include_deleted") == "true"
		switch {
		case len(parts) == 2 && parts[1] == "versions":
			var out []registry.Entry
			for _, e := range r.entries {
				if e.Server.Name == name && (deleted || e.Meta.Official.Status != "deleted") {
					out = append(out, e)
				}
			}
			if len(out) == 0 {
				http.Error(w, `{"error":"Server not found"}`, http.StatusNotFound)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"servers": out, "metadata": map[string]any{"count": len(out)}})
		case len(parts) == 3 && parts[1] == "versions":
			version, _ := url.PathUnescape(parts[2])
			for _, e := range r.entries {
				if e.Server.Name == name && (e.Server.Version == version || version == "latest" && e.Meta.Official.IsLatest) &&
					(deleted || e.Meta.Official.Status != "deleted") {
					json.NewEncoder(w).Encode(e)
					return
				}
			}
			http.Error(w, `{"error":"Server not found"}`, http.StatusNotFound)
		default:
			http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
		}
	default:
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
	}
}

// list answers GET /v0.1/servers: search (a substring of the name or the
// description), version (latest or exact), updated_since (deleted ones
// included then), include_deleted, cursor and limit.
func (r *Registry) list(w http.ResponseWriter, q url.Values) {
	search := strings.ToLower(q.Get("search"))
	var since time.Time
	if s := q.Get("updated_since"); s != "" {
		var err error
		if since, err = time.Parse(time.RFC3339, s); err != nil {
			http.Error(w, `{"error":"updated_since is not an RFC 3339 time"}`, http.StatusBadRequest)
			return
		}
	}
	deleted := q.Get("include_deleted") == "true" || !since.IsZero()
	var out []registry.Entry
	for _, e := range r.entries {
		o := e.Meta.Official
		switch {
		case !deleted && o.Status == "deleted":
		case search != "" && !strings.Contains(strings.ToLower(e.Server.Name), search) && !strings.Contains(strings.ToLower(e.Server.Description), search):
		case q.Get("version") == "latest" && !o.IsLatest:
		case q.Get("version") != "" && q.Get("version") != "latest" && q.Get("version") != e.Server.Version:
		case !since.IsZero() && !o.UpdatedAt.After(since):
		default:
			out = append(out, e)
		}
	}
	start, _ := strconv.Atoi(q.Get("cursor"))
	limit, err := strconv.Atoi(q.Get("limit"))
	if err != nil || limit <= 0 {
		limit = 30
	}
	start = min(max(start, 0), len(out))
	end := min(start+limit, len(out))
	meta := map[string]any{"count": end - start}
	if end < len(out) {
		meta["nextCursor"] = strconv.Itoa(end)
	}
	json.NewEncoder(w).Encode(map[string]any{"servers": out[start:end], "metadata": meta})
}
