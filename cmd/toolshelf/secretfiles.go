package main

import (
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"slices"
	"sync"

	"github.com/toolshelf/toolshelf/config"
)

// secretVars are the variables that hold toolshelf's own secrets. Each may
// be given as a file instead, named by the variable with _FILE appended
// (as Docker's and PostgreSQL's images do), so that the value is in
// neither the process's command line nor its environment.
var secretVars = []string{envAuthToken, envStore, envStoreKey, envStoreOldKey, envFleetKey, envProxyToken}

// withSecretFiles returns getenv with each secret variable that is unset
// but has a _FILE companion read from that file, or an error naming the
// variable and the file that could not be read.
func withSecretFiles(getenv func(string) string, held *heldPaths) (func(string) string, error) {
	values := map[string]string{}
	for _, name := range secretVars {
		file := getenv(name + "_FILE")
		if file == "" {
			continue
		}
		if getenv(name) != "" {
			return nil, usagef("both $%s and $%s_FILE are set; set one", name, name)
		}
		v, err := held.readSecretFile(file)
		if err != nil {
			return nil, usagef("$%s_FILE: %v", name, err)
		}
		values[name] = v
	}
	if len(values) == 0 {
		return getenv, nil
	}
	return func(name string) string {
		if v, ok := values[name]; ok {
			return v
		}
		return getenv(name)
	}, nil
}

// heldPaths is the one list of the files toolshelf holds secret or
// writes, filled where each enters the program (a secret file read, the
// audit log's and the journal's paths); contained servers never see them
// (upstream.Options.Hide). It is safe for concurrent use.
type heldPaths struct {
	mu    sync.Mutex
	paths []string
}

// add holds paths; "" is skipped.
func (h *heldPaths) add(paths ...string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, p := range paths {
		if p != "" && !slices.Contains(h.paths, p) {
			h.paths = append(h.paths, p)
		}
	}
}

// list returns the paths held.
func (h *heldPaths) list() []string {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.paths)
}

// readSecretFile reads a secret of toolshelf's own from a file (see
// config.ReadSecretFile), and holds the file; an empty file is an
// error: a token or a key is never empty.
func (h *heldPaths) readSecretFile(file string) (string, error) {
	h.add(file)
	v, err := config.ReadSecretFile(file)
	if err == nil && v == "" {
		err = fmt.Errorf("%s is empty", file)
	}
	return v, err
}

// hasPassword reports whether a URL carries a password, in its user part
// or as a "password" query value.
func hasPassword(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil || raw == "" {
		return false
	}
	if u.User != nil {
		if _, ok := u.User.Password(); ok {
			return true
		}
	}
	return u.Query().Has("password")
}

// newToken makes a random token: 32 bytes, in hex.
func newToken() string {
	b := make([]byte, 32)
	rand.Read(b)
	return hex.EncodeToString(b)
}
