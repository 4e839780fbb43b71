// Package registrytest serves the read side of the MCP Registry API
// (/v0.1, as its OpenAPI description has it) from a file of entries, and
// the npm registry's version metadata of their packages, on loopback:
// for tests of what reads registries. The entries' "REGISTRY" is the
// server's own URL.
package registrytest

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
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
	// packuments are npm packages' metadata by name, and tarballs where
	// their tarballs are (ServeNPM).
	packuments map[string]map[string]any
	tarballs   string
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
	case strings.HasPrefix(path, "/npm/-/tarball/"):
		r.tarball(w, strings.TrimPrefix(path, "/npm/-/tarball/"))
	case strings.HasPrefix(path, "/npm/"):
		key, _ := url.PathUnescape(strings.TrimPrefix(path, "/npm/"))
		if m, ok := r.npm[key]; ok {
			w.Write(m)
			return
		}
		if p, ok := r.packuments[key]; ok {
			w.Header().Set("Content-Type", "application/json")
			json.NewEncoder(w).Encode(p)
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

// ServeNPM serves, under /npm, the npm registry's side of every package
// the package-lock.json files hold: each one's metadata (its versions,
// their dependencies, and a tarball here with the lock's integrity), and
// the tarballs themselves from this machine's npm cache (npm config get
// cache), which an npm ci of those locks filled. A package a lock holds under an alias
// ("old": "npm:pkg@1.0.0") is served under its own name: an older
// version beside the pinned one. npx run with npm_config_registry=URL/npm
// then installs offline from this machine what the locks pinned.
func (r *Registry) ServeNPM(t testing.TB, lockFiles ...string) {
	t.Helper()
	out, err := exec.Command("npm", "config", "get", "cache").Output()
	if err != nil {
		t.Fatalf("npm config get cache: %v", err)
	}
	npmCache := strings.TrimSpace(string(out))
	r.mu.Lock()
	defer r.mu.Unlock()
	r.packuments, r.tarballs = map[string]map[string]any{}, filepath.Join(npmCache, "_cacache", "content-v2", "sha512")
	for _, lockFile := range lockFiles {
		data, err := os.ReadFile(lockFile)
		if err != nil {
			t.Fatal(err)
		}
		var lock struct {
			Packages map[string]map[string]any `json:"packages"`
		}
		if err := json.Unmarshal(data, &lock); err != nil {
			t.Fatalf("%s: %v", lockFile, err)
		}
		for path, p := range lock.Packages {
			r.addPackage(path, p)
		}
	}
}

// addPackage adds a package-lock entry (at path) to the packuments.
func (r *Registry) addPackage(path string, p map[string]any) {
	i := strings.LastIndex(path, "node_modules/")
	if i < 0 {
		return // the root
	}
	name, _ := p["name"].(string) // set for an alias
	if name == "" {
		name = path[i+len("node_modules/"):]
	}
	version, _ := p["version"].(string)
	integrity, _ := p["integrity"].(string)
	sum, ok := strings.CutPrefix(integrity, "sha512-")
	if version == "" || !ok {
		return // linked, or bundled
	}
	raw, err := base64.StdEncoding.DecodeString(sum)
	if err != nil {
		return
	}
	manifest := map[string]any{"name": name, "version": version,
		"dist": map[string]any{"integrity": integrity, "tarball": r.URL + "/npm/-/tarball/" + hex.EncodeToString(raw)}}
	for _, k := range []string{"dependencies", "optionalDependencies", "peerDependencies", "peerDependenciesMeta", "bin", "engines", "os", "cpu"} {
		if v, ok := p[k]; ok {
			manifest[k] = v
		}
	}
	pk := r.packuments[name]
	if pk == nil {
		pk = map[string]any{"name": name, "versions": map[string]any{}, "dist-tags": map[string]any{"latest": version}}
		r.packuments[name] = pk
	}
	pk["versions"].(map[string]any)[version] = manifest
	if latest, _ := pk["dist-tags"].(map[string]any)["latest"].(string); semverLess(latest, version) {
		pk["dist-tags"].(map[string]any)["latest"] = version
	}
}

// semverLess compares two versions by their numbers (1.10.0 after 1.9.0);
// pre-releases and the like are compared as text.
func semverLess(a, b string) bool {
	as, bs := strings.Split(a, "."), strings.Split(b, ".")
	for i := 0; i < min(len(as), len(bs)); i++ {
		x, errX := strconv.Atoi(as[i])
		y, errY := strconv.Atoi(bs[i])
		switch {
		case errX != nil || errY != nil:
			if as[i] != bs[i] {
				return as[i] < bs[i]
			}
		case x != y:
			return x < y
		}
	}
	return len(as) < len(bs)
}

// tarball serves a tarball from the npm cache by its sha512, in hex.
func (r *Registry) tarball(w http.ResponseWriter, sum string) {
	if len(sum) != 128 || strings.Trim(sum, "0123456789abcdef") != "" || r.tarballs == "" {
		http.Error(w, `{"error":"Not found"}`, http.StatusNotFound)
		return
	}
	f, err := os.Open(filepath.Join(r.tarballs, sum[:2], sum[2:4], sum[4:]))
	if err != nil {
		http.Error(w, `{"error":"not in this machine's npm cache"}`, http.StatusNotFound)
		return
	}
	defer f.Close()
	w.Header().Set("Content-Type", "application/octet-stream")
	io.Copy(w, f)
}

// Cached reports whether the npm cache ServeNPM serves from holds a
// package's tarball.
func (r *Registry) Cached(name, version string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	v, _ := r.packuments[name]["versions"].(map[string]any)[version].(map[string]any)
	dist, _ := v["dist"].(map[string]any)
	tarball, _ := dist["tarball"].(string)
	sum := tarball[strings.LastIndex(tarball, "/")+1:]
	if len(sum) != 128 {
		return false
	}
	_, err := os.Stat(filepath.Join(r.tarballs, sum[:2], sum[2:4], sum[4:]))
	return err == nil
}
