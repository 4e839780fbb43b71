package launcher

import (
	"encoding/binary"
	"fmt"
	"net"
	"syscall"
)

// prohibitRoutes adds, in this process's network namespace, a prohibit
// route (RTN_PROHIBIT: a connection fails with "permission denied") for
// each IPv4 address, with one rtnetlink request each, acknowledged.
func prohibitRoutes(addrs []string) error {
	fd, err := syscall.Socket(syscall.AF_NETLINK, syscall.SOCK_RAW|syscall.SOCK_CLOEXEC, syscall.NETLINK_ROUTE)
	if err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	defer syscall.Close(fd)
	kernel := &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}
	if err := syscall.Bind(fd, &syscall.SockaddrNetlink{Family: syscall.AF_NETLINK}); err != nil {
		return fmt.Errorf("netlink: %w", err)
	}
	buf := make([]byte, 4096)
	for i, a := range addrs {
		ip := net.ParseIP(a).To4()
		if ip == nil {
			return fmt.Errorf("%q is not an IPv4 address", a)
		}
		seq := uint32(i + 1)
		if err := syscall.Sendto(fd, routeRequest(ip, seq), 0, kernel); err != nil {
			return fmt.Errorf("route to %s: %w", a, err)
		}
		if err := netlinkAck(fd, buf, seq); err != nil {
			return fmt.Errorf("route to %s: %w", a, err)
		}
	}
	return nil
}

// routeRequest is an RTM_NEWROUTE message: ip/32 in the main table, of
// type prohibit.
func routeRequest(ip net.IP, seq uint32) []byte {
	const size = syscall.NLMSG_HDRLEN + syscall.SizeofRtMsg + syscall.SizeofRtAttr + 4
	b := make([]byte, size)
	e := binary.NativeEndian
	e.PutUint32(b[0:], size)
	e.PutUint16(b[4:], syscall.RTM_NEWROUTE)
	e.PutUint16(b[6:], syscall.NLM_F_REQUEST|syscall.NLM_F_ACK|syscall.NLM_F_CREATE|syscall.NLM_F_EXCL)
	e.PutUint32(b[8:], seq)
	rt := b[syscall.NLMSG_HDRLEN:]
	rt[0] = syscall.AF_INET       // family
	rt[1] = 32                    // destination prefix length
	rt[4] = syscall.RT_TABLE_MAIN // table
	rt[5] = syscall.RTPROT_STATIC // protocol
	rt[6] = syscall.RT_SCOPE_UNIVERSE
	rt[7] = syscall.RTN_PROHIBIT
	attr := rt[syscall.SizeofRtMsg:]
	e.PutUint16(attr[0:], syscall.SizeofRtAttr+4)
	e.PutUint16(attr[2:], syscall.RTA_DST)
	copy(attr[syscall.SizeofRtAttr:], ip)
	return b
}

// netlinkAck reads the kernel's answer to request seq: nil for an
// acknowledgement, the error it carries otherwise.
func netlinkAck(fd int, buf []byte, seq uint32) error {
	for {
		n, _, err := syscall.Recvfrom(fd, buf, 0)
		if err != nil {
			return err
		}
		msgs, err := syscall.ParseNetlinkMessage(buf[:n])
		if err != nil {
			return err
		}
		for _, m := range msgs {
			if m.Header.Seq != seq || m.Header.Type != syscall.NLMSG_ERROR {
				continue
			}
			if len(m.Data) < 4 {
				return fmt.Errorf("a short netlink answer")
			}
			if code := int32(binary.NativeEndian.Uint32(m.Data)); code != 0 {
				return syscall.Errno(-code)
			}
			return nil
		}
	}
}
