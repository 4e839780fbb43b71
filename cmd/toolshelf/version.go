package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version is toolshelf's module version, as the Go toolchain recorded it
// ("dev" for a build from a checkout), reported to servers and clients.
func version() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return "dev"
}

// printVersion writes the version with the VCS revision and time the
// build was made from, when the toolchain recorded them.
func printVersion(w io.Writer) {
	fmt.Fprintf(w, "toolshelf %s", version())
	if bi, ok := debug.ReadBuildInfo(); ok {
		var rev, at, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				at = s.Value
			case "vcs.modified":
				if s.Value == "true" {
					modified = ", modified"
				}
			}
		}
		if rev != "" {
			fmt.Fprintf(w, " (%.12s %s%s)", rev, at, modified)
		}
	}
	fmt.Fprintf(w, " %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
}
