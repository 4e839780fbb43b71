package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/toolshelf/toolshelf/upstream"
)

// writeUncontained says which stdio servers run uncontained and why,
// once for each reason: such a server can read whatever toolshelf's user
// can, toolshelf's token files and configuration among them.
func writeUncontained(w io.Writer, statuses []upstream.Status) {
	groups := upstream.Uncontained(statuses)
	if len(groups) == 0 {
		return
	}
	fmt.Fprintln(w, "\nUncontained (these servers can read everything your user can, toolshelf's secrets included):")
	for _, g := range groups {
		fmt.Fprintf(w, "  %s: %s\n", strings.Join(g.Servers, ", "), g.Why)
	}
}

// writeGrantHints says, for each contained server, what it will not find
// or cannot write of what it is given (as serve says at its start).
func writeGrantHints(w io.Writer, statuses []upstream.Status) {
	var hints []string
	for _, s := range statuses {
		hints = append(hints, s.Hints...)
	}
	if len(hints) == 0 {
		return
	}
	fmt.Fprintln(w, "\nGrants (what a contained server will not find, or cannot write):")
	for _, h := range hints {
		fmt.Fprintf(w, "  %s\n", h)
	}
}
