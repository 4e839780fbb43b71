package launcher

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
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

// nsGetUserns is the ioctl that gives a namespace's owning user namespace
// (linux/nsfs.h: NS_GET_USERNS).
const nsGetUserns = 0xb701

// netOwner opens the user namespace that owns pid's network namespace:
// the one slirp4netns must join to configure it. bwrap makes a second,
// nested user namespace inside the first (--disable-userns), so pid's own
// user namespace is not it once the sandbox has gone on.
func netOwner(pid int) (*os.File, error) {
	net, err := os.Open("/proc/" + strconv.Itoa(pid) + "/ns/net")
	if err != nil {
		return nil, err
	}
	defer net.Close()
	fd, _, errno := syscall.Syscall(syscall.SYS_IOCTL, net.Fd(), nsGetUserns, 0)
	if errno != 0 {
		return nil, fmt.Errorf("the owner of the sandbox's network namespace: %w", errno)
	}
	return os.NewFile(fd, "userns"), nil
}

// CannotContain says why stdio servers cannot be contained here; "" when
// they can.
func CannotContain() string { return findSandbox().why }

// OwnNetworks reports whether a contained server gets a network of its
// own here (slirp4netns is installed); else it shares the host's.
func OwnNetworks() bool { sb := findSandbox(); return sb.why == "" && sb.slirp != "" }
