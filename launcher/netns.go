package launcher

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// A contained server that may use the network gets a network namespace
// of its own (bwrap --unshare-net), which slirp4netns (what rootless
// Podman uses) connects outward, in user mode, with no route to the
// host's loopback (--disable-host-loopback): a hostile server cannot
// call the gateway's /mcp on 127.0.0.1, a PostgreSQL that trusts local
// connections, or any other local service; nor at the host's other
// addresses (netfence.go). "network": false gives it no
// network at all. Where slirp4netns is not installed, contained servers
// share the host's network, and toolshelf says so at start.

// netnsTimeout bounds setting up a server's network.
const netnsTimeout = 30 * time.Second

// netns is one server's network under way: the pipes bwrap says its
// sandbox's pid on and waits on, and slirp4netns once started.
type netns struct {
	info, block *os.File // the ends toolshelf reads and writes
	child       []*os.File
	slirp       *exec.Cmd
}

// newNetns gives cmd (bwrap with --info-fd N --block-fd N+1) its two
// pipes, as the next two of its fds (4 and 5: fd 3 is its --args).
func newNetns(cmd *exec.Cmd) (*netns, error) {
	infoR, infoW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	blockR, blockW, err := os.Pipe()
	if err != nil {
		infoR.Close()
		infoW.Close()
		return nil, err
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, infoW, blockR)
	return &netns{info: infoR, block: blockW, child: []*os.File{infoW, blockR}}, nil
}

// attach connects the started sandbox's namespace outward with slirp4netns
// and lets the server run. joinUser: the sandbox has a user namespace of
// its own (toolshelf is not root), which slirp4netns joins to reach it.
func (n *netns) attach(slirp string, joinUser bool) error {
	if n == nil {
		return nil
	}
	for _, f := range n.child {
		f.Close() // the child's ends are the child's now
	}
	n.child = nil
	type result struct {
		pid int
		err error
	}
	got := make(chan result, 1)
	go func() {
		var info struct {
			Pid int `json:"child-pid"`
		}
		err := json.NewDecoder(bufio.NewReader(io.LimitReader(n.info, 4096))).Decode(&info)
		got <- result{info.Pid, err}
	}()
	var pid int
	select {
	case r := <-got:
		if r.err != nil || r.pid <= 0 {
			return fmt.Errorf("bubblewrap did not say its sandbox's pid: %v", r.err)
		}
		pid = r.pid
	case <-time.After(netnsTimeout):
		return fmt.Errorf("bubblewrap did not say its sandbox's pid within %v", netnsTimeout)
	}
	// bwrap sets up the namespace's loopback first; slirp4netns at the
	// same time makes bwrap's netlink request fail. The loopback's
	// address in the namespace's routes says bwrap is done with it.
	if err := loopbackUp(pid); err != nil {
		return err
	}
	readyR, readyW, err := os.Pipe()
	if err != nil {
		return err
	}
	defer readyR.Close()
	args := []string{"--configure", "--mtu=65520", "--disable-host-loopback", "--ready-fd=3"}
	extra := []*os.File{readyW}
	var owner *os.File
	if joinUser {
		// The user namespace that owns the network namespace, given to
		// slirp4netns as its fd 4.
		owner, err = netOwner(pid)
		if err != nil {
			readyW.Close()
			return err
		}
		defer owner.Close()
		extra = append(extra, owner)
		args = append(args, "--userns-path=/proc/self/fd/4")
	}
	n.slirp = exec.Command(slirp, append(args, strconv.Itoa(pid), "tap0")...)
	n.slirp.ExtraFiles = extra
	n.slirp.Env = sandboxEnv()
	stderr := newTailBuffer(2048)
	n.slirp.Stderr = stderr
	if err := n.slirp.Start(); err != nil {
		readyW.Close()
		return fmt.Errorf("slirp4netns: %w", err)
	}
	readyW.Close()
	ready := make(chan error, 1)
	go func() {
		b := make([]byte, 1)
		_, err := readyR.Read(b)
		ready <- err
	}()
	select {
	case err := <-ready:
		if err != nil {
			return fmt.Errorf("slirp4netns did not connect the sandbox (%v): %s", err, stderr.Tail(2048))
		}
	case <-time.After(netnsTimeout):
		return fmt.Errorf("slirp4netns did not connect the sandbox within %v", netnsTimeout)
	}
	if err := fenceHost(pid, owner); err != nil {
		return err
	}
	if _, err := n.block.Write([]byte{1}); err != nil {
		return fmt.Errorf("the sandbox did not wait for its network: %w", err)
	}
	return nil
}

// loopbackUp waits until the network namespace of pid has its loopback
// address, which bwrap gives it, or says why not.
func loopbackUp(pid int) error {
	routes := "/proc/" + strconv.Itoa(pid) + "/net/fib_trie"
	deadline := time.Now().Add(netnsTimeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		b, err := os.ReadFile(routes)
		if err == nil && strings.Contains(string(b), "127.0.0.1") {
			return nil
		}
		if err != nil && !os.IsNotExist(err) || time.Now().After(deadline) {
			return fmt.Errorf("the sandbox's loopback was not set up (%s): %v", routes, err)
		}
		if err != nil {
			return fmt.Errorf("the sandbox ended before its network was set up")
		}
		<-tick.C
	}
}

// close ends what the network holds: its pipes, and slirp4netns once the
// server has exited.
func (n *netns) close() {
	if n == nil {
		return
	}
	for _, f := range append(n.child, n.info, n.block) {
		f.Close()
	}
	if n.slirp != nil && n.slirp.Process != nil {
		n.slirp.Process.Kill()
		n.slirp.Wait()
	}
}
