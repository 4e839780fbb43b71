// Package hostpath decides which folders of the host a contained server
// may be granted. A grant is judged as the sandbox will bind it: with
// "~" expanded and every link on the way followed, so that a link in the
// configuration's folder to /etc or ~/.ssh is the folder it leads to.
package hostpath

import (
	"os"
	"path/filepath"
	"strings"
)

// systemFolders hold the system: its programs, settings, devices and
// what its services keep. The sandbox gives a server /usr and the
// libraries read-only already; a grant adds nothing there but a way to
// change them or read what is kept private.
var systemFolders = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/boot", "/proc", "/sys", "/dev", "/var", "/run", "/root", "/snap", "/nix"}

// secretFolders are the system folders no grant reaches, not even to
// read: settings, devices, the kernel's views, root's home.
var secretFolders = []string{"/etc", "/boot", "/proc", "/sys", "/dev", "/run", "/root"}

// sharedFolders are the system's folders for everyone's files and
// mounts: one of them whole is every user's, not a server's.
var sharedFolders = []string{"/tmp", "/var/tmp", "/home", "/mnt", "/media", "/opt", "/srv", "/usr/local", "/Users", "/Volumes"}

// Expand is p with a leading "~" (alone or before "/") replaced by home.
func Expand(p, home string) string {
	if home == "" {
		return p
	}
	if p == "~" {
		return home
	}
	if rest, ok := strings.CutPrefix(p, "~/"); ok {
		return filepath.Join(home, rest)
	}
	return p
}

// Resolve is p made absolute against dir, cleaned, with the links of its
// longest existing part followed: a path not made yet under a link is
// where the link leads.
func Resolve(p, dir string) string {
	if p == "" {
		return ""
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	p = filepath.Clean(p)
	rest := ""
	for cur := p; ; {
		if real, err := filepath.EvalSymlinks(cur); err == nil {
			return filepath.Join(real, rest)
		}
		parent := filepath.Dir(cur)
		if parent == cur {
			return p
		}
		rest = filepath.Join(filepath.Base(cur), rest)
		cur = parent
	}
}

// Policy is what a grant is judged against.
type Policy struct {
	// Home is the user's home folder.
	Home string
	// Own are toolshelf's own folders (its state and cache), which no
	// grant may reach or hold.
	Own []string
	// ConfigDir is the configuration's folder: what is under it is the
	// person's, even inside a hidden folder of the home (toolshelf's
	// configuration lives in ~/.config/toolshelf by default).
	ConfigDir string
}

// Risk says why a grant of p (absolute, resolved by Resolve) may not be
// given, or "". Refused: the whole file system; a system folder, or
// anything in one for writing (and in /etc, /proc, /sys, /dev, /boot,
// /run or /root at all); the home folder, a folder that holds it, or a
// hidden file or folder of it (keys, shell start-up files, other
// programs' settings) outside the configuration's folder; a folder of
// toolshelf's own, or one that holds it.
func (pol *Policy) Risk(p string, write bool) string {
	if p == "/" {
		return "is the whole file system"
	}
	if contains(sharedFolders, p) {
		return "is a folder every user shares"
	}
	home := cleanDir(pol.Home)
	for _, d := range systemFolders {
		if d == home {
			continue // root's home, /root: judged as a home below
		}
		if p == d {
			return "is a folder of the system"
		}
		if within(p, d) && (write || contains(secretFolders, d)) {
			return "is in a folder of the system (" + d + ")"
		}
	}
	switch {
	case home != "" && p == home:
		return "is the home folder"
	case home != "" && within(home, p):
		return "holds the home folder"
	}
	for _, o := range pol.Own {
		if o = cleanDir(o); o == "" {
			continue
		}
		if p == o || within(p, o) || within(o, p) {
			return "is or holds a folder of toolshelf's own (" + o + ")"
		}
	}
	if rest, ok := strings.CutPrefix(p, home+"/"); home != "" && ok && strings.HasPrefix(rest, ".") && !pol.inConfig(p) {
		return "is a hidden file or folder of the home folder (keys and settings live there)"
	}
	return ""
}

// inConfig reports whether p is in the configuration's folder (not the
// home folder itself).
func (pol *Policy) inConfig(p string) bool {
	c := cleanDir(pol.ConfigDir)
	return c != "" && c != cleanDir(pol.Home) && (p == c || within(p, c))
}

// cleanDir is a folder cleaned and resolved, "" for none or the root.
func cleanDir(d string) string {
	if d == "" {
		return ""
	}
	d = Resolve(d, "/")
	if d == "/" {
		return ""
	}
	return d
}

// within reports whether p is strictly inside dir.
func within(p, dir string) bool { return strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/") }

// InConfig reports whether p (resolved) lies in the folder dir (resolved
// too): where a registry's own default may point.
func InConfig(p, dir string) bool {
	d := cleanDir(dir)
	return d != "" && (p == d || within(p, d))
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// IsDir reports whether p is a folder.
func IsDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}
