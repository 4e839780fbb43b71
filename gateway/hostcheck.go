package gateway

import (
	"net"
	"net/http"
	"slices"
	"strings"
)

// CheckHost serves h only to requests whose Host header names this
// listener: the address it listens on, a name in allowed (serve's
// --allowed-host), "localhost" when it listens on loopback, and any IP
// address when it listens on all of them. Anything else gets 403: a web
// page whose name was rebound to 127.0.0.1 (DNS rebinding) sends its own
// name, which is none of these, on every route, not only /mcp.
func CheckHost(listen net.Addr, allowed []string, h http.Handler) http.Handler {
	var ip net.IP
	if tcp, ok := listen.(*net.TCPAddr); ok {
		ip = tcp.IP
	}
	names := make([]string, 0, len(allowed)+1)
	for _, a := range allowed {
		names = append(names, strings.ToLower(hostOnly(a)))
	}
	any := ip == nil || ip.IsUnspecified()
	if any || ip.IsLoopback() {
		names = append(names, "localhost")
	}
	ok := func(host string) bool {
		host = strings.ToLower(hostOnly(host))
		if slices.Contains(names, host) {
			return true
		}
		got := net.ParseIP(host)
		switch {
		case got == nil:
			return false
		case any:
			return true
		case ip.IsLoopback():
			return got.IsLoopback()
		}
		return got.Equal(ip)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !ok(r.Host) {
			http.Error(w, "toolshelf: this gateway does not serve the host named in the request; an operator adds a name it is reached by with serve --allowed-host", http.StatusForbidden)
			return
		}
		h.ServeHTTP(w, r)
	})
}

// hostOnly is a Host header's or an address's host, without port or
// brackets.
func hostOnly(hostport string) string {
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		return h
	}
	return strings.Trim(hostport, "[]")
}
