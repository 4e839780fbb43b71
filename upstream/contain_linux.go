package upstream

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"
)

// sandboxer is how this system contains servers, found once: bwrap (and
// setpriv when toolshelf is root), or why servers run uncontained.
type sandboxer struct {
	bwrap, setpriv string
	asNobody       bool
	why            string // "" when servers can be contained
	// slirp is slirp4netns, which gives a contained server a network of
	// its own (see netns.go); "" when it is not installed.
	slirp string
}

var (
	sandboxOnce sync.Once
	sandboxHere sandboxer
)

// findSandbox probes, once, whether bwrap can make a sandbox here: it is
// installed and the kernel lets it make the namespaces (user namespaces
// may be off, or refused inside a container).
func findSandbox() sandboxer {
	sandboxOnce.Do(func() { sandboxHere = probeSandbox() })
	return sandboxHere
}

func probeSandbox() sandboxer {
	var s sandboxer
	var err error
	if s.bwrap, err = exec.LookPath("bwrap"); err != nil {
		s.why = "bubblewrap (bwrap) is not installed (Debian and Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)"
		return s
	}
	s.slirp, _ = exec.LookPath("slirp4netns")
	if os.Geteuid() == 0 {
		s.asNobody = true
		if s.setpriv, err = exec.LookPath("setpriv"); err != nil {
			s.why = "toolshelf runs as root and setpriv (util-linux) is not installed to run servers as nobody"
			return s
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	plan := &sandboxPlan{asNobody: s.asNobody, setpriv: s.setpriv}
	cmd := exec.CommandContext(ctx, s.bwrap, append(plan.args(), "true")...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		msg := strings.TrimSpace(stderr.String())
		if msg == "" {
			msg = err.Error()
		}
		line, _, _ := strings.Cut(msg, "\n")
		s.why = "bubblewrap cannot make a sandbox here (user namespaces off or refused?): " + truncate(line, 200)
	}
	return s
}

// ownerOf is the user id that owns a file.
func ownerOf(st os.FileInfo) int {
	if sys, ok := st.Sys().(*syscall.Stat_t); ok {
		return int(sys.Uid)
	}
	return -1
}
