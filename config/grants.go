package config

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/internal/folders"
	"github.com/toolshelf/toolshelf/internal/hostpath"
)

// checkGrants refuses a grant of "paths" that is, holds or leads through a
// link to what no server is given: the system's folders (to write, or
// its private ones at all), the home folder, a folder that holds it, a
// hidden folder of it outside the configuration's folder (dir), or
// toolshelf's own state and cache (folders.Kept; hostpath.Policy.Risk).
func checkGrants(sc *ServerConfig, dir string, getenv func(string) string) error {
	pol := hostpath.Policy{Home: getenv("HOME"), ConfigDir: dir, Own: folders.Kept(getenv)}
	for _, g := range []struct {
		paths []string
		key   string
		write bool
	}{{sc.ReadPaths, "read", false}, {sc.WritePaths, "write", true}} {
		for i, p := range g.paths {
			real := hostpath.Resolve(p, sc.Cwd)
			if why := pol.Risk(real, g.write); why != "" {
				via := ""
				plain := p
				if !filepath.IsAbs(p) {
					plain = filepath.Join(sc.Cwd, p)
				}
				if real != filepath.Clean(plain) {
					via = " (it leads to " + real + ")"
				}
				return fmt.Errorf(`"paths": {"%s"}[%d]: %s%s %s: no server is granted it; grant a folder of its own`, g.key, i, p, via, why)
			}
		}
	}
	return nil
}

// maxGrantEntries bounds what of a granted folder is looked at.
const maxGrantEntries = 2000

// SecretLooking returns the files, in the folders a contained stdio
// server is granted (its cwd when the configuration names one, its
// "paths"), whose names look like they hold secrets (.env, a key, a
// token file, credentials): a grant holds what is in it, and doctor says
// so. Only the folders' own entries are looked at.
func (c *ServerConfig) SecretLooking() []string {
	if c.TransportName() != "stdio" || c.NoContain || c.Dial != nil {
		return nil
	}
	dirs := slices.Concat(c.ReadPaths, c.WritePaths)
	if !c.CwdDefault && c.Cwd != "" {
		dirs = append(dirs, c.Cwd)
	}
	var out []string
	for _, d := range dirs {
		d = Anchor(d, c.Cwd)
		f, err := os.Open(d)
		if err != nil {
			continue
		}
		names, _ := f.Readdirnames(maxGrantEntries)
		f.Close()
		slices.Sort(names)
		for _, n := range names {
			if looksSecret(n) {
				out = append(out, filepath.Join(d, n))
			}
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// looksSecret reports whether a file's name says it holds a secret.
func looksSecret(name string) bool {
	l := strings.ToLower(name)
	switch {
	case l == ".env" || strings.HasPrefix(l, ".env.") || l == ".netrc" || l == ".npmrc" || l == ".pypirc" || l == ".git-credentials":
		return true
	case strings.HasPrefix(l, "id_rsa") || strings.HasPrefix(l, "id_ed25519") || strings.HasPrefix(l, "id_ecdsa"):
		return !strings.HasSuffix(l, ".pub")
	}
	for _, ext := range []string{".pem", ".key", ".p12", ".pfx", ".kdbx"} {
		if strings.HasSuffix(l, ext) {
			return true
		}
	}
	for _, w := range []string{"token", "secret", "password", "passwd", "credential", "apikey", "api_key", "api-key"} {
		if strings.Contains(l, w) {
			return true
		}
	}
	return false
}
