package hostpath

import (
	"strings"
	"testing"
)

// A grant is judged against the user's home as well as the system's
// folders: root's home, /root, is a system folder to every other user
// and a home to root, whose projects may live there.
func TestRisk(t *testing.T) {
	me := &Policy{Home: "/home/me", Own: []string{"/home/me/.local/state/toolshelf"}, ConfigDir: "/home/me/.config/toolshelf"}
	root := &Policy{Home: "/root"}
	for _, c := range []struct {
		pol   *Policy
		path  string
		write bool
		want  string // a word of the reason, "" for none
	}{
		{me, "/home/me/projects", true, ""},
		{me, "/home/me", false, "home folder"},
		{me, "/home", false, "every user shares"},
		{me, "/home/me/.ssh", false, "hidden"},
		{me, "/home/me/.config/toolshelf/data", true, ""},
		{me, "/home/me/.local/state/toolshelf", false, "toolshelf's own"},
		{me, "/root/projects", false, "system (/root)"},
		{me, "/usr/share/doc", false, ""},
		{me, "/usr/share/doc", true, "system (/usr)"},
		{me, "/etc/hosts", false, "system (/etc)"},
		{me, "/", false, "whole file system"},
		{root, "/root/projects", true, ""},
		{root, "/root", true, "home folder"},
		{root, "/root/.ssh", false, "hidden"},
		{root, "/etc", false, "folder of the system"},
	} {
		got := c.pol.Risk(c.path, c.write)
		if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
			t.Errorf("home %s, %s (write %v): %q, want %q", c.pol.Home, c.path, c.write, got, c.want)
		}
	}
}
