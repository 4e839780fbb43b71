//go:build !linux

package launcher

import (
	"errors"
	"os"
	"runtime"
)

// sandboxer is how this system contains servers: here, not at all.
type sandboxer struct {
	bwrap, setpriv string
	asNobody       bool
	why            string
	slirp          string
}

// findSandbox says why servers run uncontained: bubblewrap and the
// namespaces it uses are Linux's.
func findSandbox() sandboxer {
	return sandboxer{why: "containment needs Linux (bubblewrap); this is " + runtime.GOOS}
}

// ownerOf: containment is Linux's; here no file is known to be nobody's.
func ownerOf(os.FileInfo) int { return -1 }

// netOwner: network namespaces are Linux's.
func netOwner(int) (*os.File, error) { return nil, errors.New("network namespaces need Linux") }

// CannotContain: containment is Linux's.
func CannotContain() string { return findSandbox().why }

// OwnNetworks: network namespaces are Linux's.
func OwnNetworks() bool { return false }
