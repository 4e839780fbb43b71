package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/upstream"
)

// writeUncontained says which stdio servers run uncontained and why,
// once for each reason: such a server can read whatever toolshelf's user
// can, toolshelf's token files and configuration among them.
func writeUncontained(w io.Writer, statuses []upstream.Status) {
	var whys []string
	byWhy := map[string][]string{}
	for _, s := range statuses {
		if s.Uncontained == "" {
			continue
		}
		if _, ok := byWhy[s.Uncontained]; !ok {
			whys = append(whys, s.Uncontained)
		}
		byWhy[s.Uncontained] = append(byWhy[s.Uncontained], s.Name)
	}
	if len(whys) == 0 {
		return
	}
	fmt.Fprintln(w, "\nUncontained (these servers can read everything your user can, toolshelf's secrets included):")
	slices.Sort(whys)
	for _, why := range whys {
		fmt.Fprintf(w, "  %s: %s\n", strings.Join(byWhy[why], ", "), why)
	}
}
