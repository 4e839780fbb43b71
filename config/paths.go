package config

import (
	"path/filepath"
	"strings"
)

// Anchor is a path of the configuration made absolute against a folder
// (a server's cwd) and cleaned (Clean).
func Anchor(p, dir string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) && dir != "" {
		p = filepath.Join(dir, p)
	}
	return Clean(p)
}

// Clean is a path made absolute with its links resolved, where they
// resolve: what a grant or a check of it is about.
func Clean(p string) string {
	if p == "" {
		return ""
	}
	if abs, err := filepath.Abs(p); err == nil {
		p = abs
	}
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	return p
}

// truncate cuts s to n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// Under reports whether path is inside one of dirs.
func Under(path string, dirs []string) bool {
	for _, d := range dirs {
		if d == "/" || strings.HasPrefix(path, strings.TrimSuffix(d, "/")+"/") {
			return true
		}
	}
	return false
}
