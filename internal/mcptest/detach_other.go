//go:build !unix

package mcptest

import (
	"fmt"
	"os"
)

func detach() int {
	fmt.Fprintln(os.Stderr, "detach needs sessions (unix)")
	return 1
}

func daemonize() int {
	fmt.Fprintln(os.Stderr, "daemonize needs sessions (unix)")
	return 1
}
