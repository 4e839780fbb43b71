package main

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/upstream"
)

// Over HTTP on loopback without a token, /mcp is open to every process of
// this machine. That is safe only while no server can reach loopback: a
// server that shares the host's network (uncontained, "network": "host",
// or contained without slirp4netns) could call /mcp and, through it,
// another server's tools outside its own reach. Then /mcp needs the admin
// token, which serve keeps in a file of the state folder (mode 600) so
// that clients can send it and it stays the same from run to run.

// maxKeptToken bounds the kept token file: a token is 64 characters.
const maxKeptToken = 4096

// httpTokenName is the file in toolshelf's state folder that keeps the
// admin token for a gateway started without one.
const httpTokenName = "http-token"

// httpTokenPath is where the kept admin token is: beside what was learned.
func httpTokenPath(e *env) string {
	p := learn.DefaultPath(e.getenv)
	if p == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(p), httpTokenName)
}

// keptToken is the admin token an earlier run kept at path, "" when there
// is none; a file that is there but cannot be read, or holds no token, is
// an error naming it.
func keptToken(path string) (string, error) { return keptSecret(path, "the kept admin token") }

// keptSecret is a secret of at least 32 characters an earlier run kept at
// path (what names it in errors), "" when there is none.
func keptSecret(path, what string) (string, error) {
	if path == "" {
		return "", nil
	}
	// Read through the file opened without following a link (and not
	// waiting on a FIFO): what was checked is what is read.
	f, err := os.OpenFile(path, os.O_RDONLY|noFollow, 0)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("%s %s: %v (remove it to make a new one)", what, path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("%s %s is not a regular file (remove it to make a new one)", what, path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeptToken+1))
	if err != nil || len(b) > maxKeptToken {
		return "", fmt.Errorf("%s %s cannot be read or is longer than %d bytes (remove it to make a new one)", what, path, maxKeptToken)
	}
	v := strings.TrimSpace(string(b))
	if len(v) < 32 {
		return "", fmt.Errorf("%s %s is shorter than 32 characters (remove it to make a new one)", what, path)
	}
	return v, nil
}

// consoleKeyName is the file in toolshelf's state folder, beside the
// kept admin token, that keeps the key the console signs its sign-in
// cookies with: a new run of serve does not sign everyone out.
const consoleKeyName = "console-key"

// consoleKey is the console's signing key kept beside the admin token at
// tokenPath (made at the first run), nil when there is no state folder.
func consoleKey(tokenPath string) ([]byte, error) {
	if tokenPath == "" {
		return nil, nil
	}
	path := filepath.Join(filepath.Dir(tokenPath), consoleKeyName)
	key, err := keptSecret(path, "the console's kept key")
	if err != nil || key != "" {
		return []byte(key), err
	}
	b := make([]byte, 32)
	rand.Read(b)
	key = hex.EncodeToString(b)
	if err := keepToken(path, key); err != nil {
		return nil, fmt.Errorf("keeping the console's key in %s: %w", path, err)
	}
	return []byte(key), nil
}

// keepToken writes token to a new file at path, readable by its owner
// alone, following no link.
func keepToken(path, token string) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL|noFollow, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(token + "\n"); err != nil {
		f.Close()
		os.Remove(path)
		return err
	}
	return f.Close()
}

// closeLoopback refuses a --http port a server is granted ("hostPorts"),
// and makes /mcp need the admin token when it would otherwise be open (no
// token given, no profile tokens, no identity) and a server can reach a
// port of the host's loopback, and says so with the file the token is in.
func (o *serveOptions) closeLoopback(src *toolSource, hopts *gateway.HostOptions, logger *slog.Logger) error {
	if o.http == "" || src.pool == nil {
		return nil
	}
	if _, port, err := net.SplitHostPort(o.http); err == nil {
		if n, err := strconv.Atoi(port); err == nil && n != 0 {
			if err := portNotGranted(src.pool, n); err != nil {
				return err
			}
		}
	}
	if o.token != "" || hopts.People != nil {
		return nil
	}
	for _, p := range hopts.Profiles {
		if len(p.Tokens) > 0 {
			return nil // /mcp is closed already (see serve --help)
		}
	}
	shared := src.pool.ReachHost()
	if len(shared) == 0 {
		return nil
	}
	if o.tokenKept == "" {
		if o.tokenPath == "" {
			return usagef("--http: servers %s can reach this machine's loopback and could call /mcp, which then needs a token: set --auth-token-file (no state folder to keep one in)", strings.Join(shared, ", "))
		}
		if err := keepToken(o.tokenPath, o.adminToken); err != nil {
			return fmt.Errorf("--http: servers %s can reach this machine's loopback and could call /mcp, which then needs a token; keeping one: %v (or set --auth-token-file)", strings.Join(shared, ", "), err)
		}
		o.tokenKept = o.tokenPath
	}
	hopts.AuthToken = o.adminToken
	logger.Warn("/mcp needs a token: these servers can reach this machine's loopback and could call it; clients send the token in the file as a bearer token (or give serve --auth-token-file)",
		"servers", strings.Join(shared, ","), "token_file", o.tokenKept)
	return nil
}

// portNotGranted refuses to serve on a port of the host a server is
// granted: the server would reach the gateway, and through it every
// other server.
func portNotGranted(pool *upstream.Pool, port int) error {
	if names := pool.GrantedPort(port); len(names) > 0 {
		return usagef("--http: port %d is granted to %s (\"network\": {\"hostPorts\"}): a server may not reach the gateway; serve on another port or take it out of the grant", port, strings.Join(names, ", "))
	}
	return nil
}
