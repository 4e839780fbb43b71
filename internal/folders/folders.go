// Package folders says where toolshelf keeps its files: its configuration,
// state and cache folders, read from the command's environment as the XDG
// base directory specification places them (and as macOS and Windows
// place configuration and caches).
//
// Every part of toolshelf that writes there, and every wall that keeps
// servers out of there (the sandbox's covered folders, the grants a
// configuration may not give), asks this package, with the same
// environment: a wall that placed a folder in one way while the writer
// placed it in another would guard the wrong folder.
package folders

import (
	"os"
	"path/filepath"
	"runtime"
)

// Name is the folder toolshelf keeps under each base folder.
const Name = "toolshelf"

// Config is toolshelf's configuration folder (servers.json, sign-ins):
// $XDG_CONFIG_HOME/toolshelf, else ~/.config/toolshelf; on macOS
// ~/Library/Application Support/toolshelf, on Windows %AppData%\toolshelf.
// getenv is the command's environment (os.Getenv when nil). It is ""
// when the environment places none.
func Config(getenv func(string) string) string {
	return under(getenv, "XDG_CONFIG_HOME", ".config", "Library/Application Support", "AppData")
}

// Cache is toolshelf's cache folder (tool lists, servers' package
// caches, embeddings): $XDG_CACHE_HOME/toolshelf, else
// ~/.cache/toolshelf; on macOS ~/Library/Caches/toolshelf, on Windows
// %LocalAppData%\toolshelf.
func Cache(getenv func(string) string) string {
	return under(getenv, "XDG_CACHE_HOME", ".cache", "Library/Caches", "LocalAppData")
}

// State is toolshelf's state folder (what was learned, the ledger, kept
// secrets, journals): $XDG_STATE_HOME/toolshelf, else
// ~/.local/state/toolshelf, on every system.
func State(getenv func(string) string) string {
	return under(getenv, "XDG_STATE_HOME", ".local/state", "", "")
}

// Own are toolshelf's three folders, those of them the environment
// places: no server may be granted them or see them.
func Own(getenv func(string) string) []string {
	var own []string
	for _, d := range []string{Config(getenv), Cache(getenv), State(getenv)} {
		if d != "" {
			own = append(own, d)
		}
	}
	return own
}

// Kept are the state and cache folders, those the environment places:
// toolshelf's keys, journals and servers' caches, no part of which a
// configuration may grant a server. The configuration folder is not one:
// a folder beside servers.json is the person's to grant (the sandbox
// still covers the configuration folder itself, Own).
func Kept(getenv func(string) string) []string {
	var kept []string
	for _, d := range []string{State(getenv), Cache(getenv)} {
		if d != "" {
			kept = append(kept, d)
		}
	}
	return kept
}

// under is toolshelf's folder under a base folder: the XDG variable's
// value when it is absolute (a relative one is to be ignored), else the
// base in the home folder; on macOS and Windows their own place first,
// when the folder has one there (darwin relative to home, windows a
// variable).
func under(getenv func(string) string, xdg, rel, darwin, windows string) string {
	if getenv == nil {
		getenv = os.Getenv
	}
	var base string
	switch {
	case runtime.GOOS == "windows" && windows != "":
		base = getenv(windows)
	case runtime.GOOS == "darwin" && darwin != "":
		base = inHome(getenv, darwin)
	default:
		if v := getenv(xdg); filepath.IsAbs(v) {
			base = v
		} else {
			base = inHome(getenv, rel)
		}
	}
	if !filepath.IsAbs(base) {
		return ""
	}
	return filepath.Join(base, Name)
}

// inHome is rel in the home folder, "" when the environment names none
// (or a relative one).
func inHome(getenv func(string) string, rel string) string {
	home := getenv("HOME")
	if runtime.GOOS == "windows" {
		home = getenv("USERPROFILE")
	}
	if !filepath.IsAbs(home) {
		return ""
	}
	return filepath.Join(home, filepath.FromSlash(rel))
}
