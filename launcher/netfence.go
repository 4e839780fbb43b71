package launcher

import (
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"
)

// slirp4netns keeps a contained server from the host's loopback, but the
// host's other addresses (its LAN address, a container bridge's) are
// ordinary destinations to it: a service listening on 0.0.0.0, often one
// that trusts "the local host", would answer there. So before the server
// runs, its network namespace gets a prohibit route for each IPv4 address
// of the host's interfaces: a connection to one fails at once, as the
// host's loopback does. (slirp4netns is given no IPv6, so there is no
// IPv6 way out to fence.) The routes are set by toolshelf's own program,
// run inside the namespace by nsenter; the server, which runs without
// capabilities, cannot remove them. Granted ports (hostPorts) are carried
// by the forwarder over Unix sockets, not by these routes.

// fenceArg, as the first argument, makes a program linking this package
// the fence (see init): the routes for the addresses that follow.
const fenceArg = "--toolshelf-fence-host-addresses"

func init() {
	if len(os.Args) > 1 && os.Args[1] == fenceArg {
		if err := prohibitRoutes(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "toolshelf fence:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
}

// HostAddresses is every IPv4 address of the host's interfaces but the
// loopback's (the sandbox has a loopback of its own, and slirp4netns
// already keeps the host's from it).
func HostAddresses() ([]string, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, fmt.Errorf("the host's addresses: %w", err)
	}
	var out []string
	for _, a := range addrs {
		n, ok := a.(*net.IPNet)
		if !ok {
			continue
		}
		if ip := n.IP.To4(); ip != nil && !ip.IsLoopback() {
			out = append(out, ip.String())
		}
	}
	return out, nil
}

// fenceHost routes the host's addresses nowhere in the network namespace
// of pid. owner is the user namespace that owns it (nil when toolshelf
// is root and needs none to enter it). What cannot be fenced stops the
// start: the server does not run with the host in reach.
func fenceHost(pid int, owner *os.File) error {
	addrs, err := HostAddresses()
	if err != nil || len(addrs) == 0 {
		return err
	}
	nsenter, err := exec.LookPath("nsenter")
	if err != nil {
		return fmt.Errorf("nsenter (util-linux) is needed to keep the host's addresses from a contained server: %w", err)
	}
	self, err := os.Executable()
	if err != nil {
		return fmt.Errorf("toolshelf's own program, which fences the sandbox's network: %w", err)
	}
	args := []string{"--net=/proc/" + strconv.Itoa(pid) + "/ns/net"}
	cmd := exec.Command(nsenter)
	if owner != nil {
		args = append(args, "--user=/proc/self/fd/3", "--preserve-credentials")
		cmd.ExtraFiles = []*os.File{owner}
	}
	cmd.Args = append(append(append([]string{nsenter}, args...), "--", self, fenceArg), addrs...)
	cmd.Env = sandboxEnv()
	out := newTailBuffer(1024)
	cmd.Stdout, cmd.Stderr = out, out
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("fencing the host's addresses: %w", err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err = <-done:
	case <-time.After(netnsTimeout):
		cmd.Process.Kill()
		<-done
		return fmt.Errorf("fencing the host's addresses did not end within %v", netnsTimeout)
	}
	if err != nil {
		return fmt.Errorf("fencing the host's addresses (%s) failed: %v: %s", strings.Join(addrs, ", "), err, strings.TrimSpace(out.Tail(1024)))
	}
	return nil
}
