package main

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"

	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/learn"
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
func keptToken(path string) (string, error) {
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
		return "", fmt.Errorf("the kept admin token %s: %v (remove it to make a new one)", path, err)
	}
	defer f.Close()
	if st, err := f.Stat(); err != nil || !st.Mode().IsRegular() {
		return "", fmt.Errorf("the kept admin token %s is not a regular file (remove it to make a new one)", path)
	}
	b, err := io.ReadAll(io.LimitReader(f, maxKeptToken+1))
	if err != nil || len(b) > maxKeptToken {
		return "", fmt.Errorf("the kept admin token %s cannot be read or is longer than %d bytes (remove it to make a new one)", path, maxKeptToken)
	}
	v := strings.TrimSpace(string(b))
	if len(v) < 32 {
		return "", fmt.Errorf("the kept admin token %s is shorter than 32 characters (remove it to make a new one)", path)
	}
	return v, nil
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

// closeLoopback makes /mcp need the admin token when it would otherwise
// be open (no token given, no profile tokens, no identity) and a server
// shares the host's network, and says so with the file the token is in.
func (o *serveOptions) closeLoopback(src *toolSource, hopts *gateway.HostOptions, logger *slog.Logger) error {
	if o.http == "" || o.token != "" || hopts.People != nil || src.pool == nil {
		return nil
	}
	for _, p := range hopts.Profiles {
		if len(p.Tokens) > 0 {
			return nil // /mcp is closed already (see serve --help)
		}
	}
	shared := src.pool.OnHostNetwork()
	if len(shared) == 0 {
		return nil
	}
	if o.tokenKept == "" {
		if o.tokenPath == "" {
			return usagef("--http: servers %s share this machine's network and could call /mcp, which then needs a token: set --auth-token-file (no state folder to keep one in)", strings.Join(shared, ", "))
		}
		if err := keepToken(o.tokenPath, o.adminToken); err != nil {
			return fmt.Errorf("--http: servers %s share this machine's network and could call /mcp, which then needs a token; keeping one: %v (or set --auth-token-file)", strings.Join(shared, ", "), err)
		}
		o.tokenKept = o.tokenPath
	}
	hopts.AuthToken = o.adminToken
	logger.Warn("/mcp needs a token: these servers share this machine's network and could call it; clients send the token in the file as a bearer token (or give serve --auth-token-file)",
		"servers", strings.Join(shared, ","), "token_file", o.tokenKept)
	return nil
}
