package upstream

import (
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/launcher"
)

// UncontainedGroup is the stdio servers that run uncontained for one
// reason.
type UncontainedGroup struct {
	Why     string
	Servers []string
}

// Uncontained groups the servers of statuses that run uncontained by
// why, the reasons in order: what the start-up log, list, doctor and the
// console say once for each reason.
func Uncontained(statuses []Status) []UncontainedGroup {
	var out []UncontainedGroup
	for _, st := range statuses {
		if st.Uncontained == "" || st.State == StateDisabled {
			continue
		}
		i := slices.IndexFunc(out, func(g UncontainedGroup) bool { return g.Why == st.Uncontained })
		if i < 0 {
			out = append(out, UncontainedGroup{Why: st.Uncontained})
			i = len(out) - 1
		}
		out[i].Servers = append(out[i].Servers, st.Name)
	}
	slices.SortFunc(out, func(a, b UncontainedGroup) int { return strings.Compare(a.Why, b.Why) })
	return out
}

// logContainment says once, at start, which stdio servers run
// uncontained and why, a line for each reason.
func (p *Pool) logContainment() {
	for _, g := range Uncontained(p.Status()) {
		p.logger.Warn("stdio servers run uncontained: they can read everything toolshelf's user can, its token files and configuration too", "servers", strings.Join(g.Servers, ","), "why", g.Why)
	}
	var host []string
	for _, s := range p.list() {
		if c := s.cfg.Containment(); s.cfg.HostNetwork && c.Contained && c.Engine == "" {
			host = append(host, s.cfg.Name)
		}
	}
	if len(host) > 0 {
		p.logger.Warn("contained servers share the host's network, its loopback too (\"network\": \"host\"): they can reach the gateway and any local service", "servers", strings.Join(host, ","))
	}
	if launcher.CannotContain() == "" && !launcher.OwnNetworks() {
		var shared []string
		for _, s := range p.list() {
			if c := s.cfg.Containment(); c.Contained && c.Engine == "" && !s.cfg.NoNetwork && !s.cfg.HostNetwork && len(s.cfg.HostPorts) == 0 {
				shared = append(shared, s.cfg.Name)
			}
		}
		if len(shared) > 0 {
			p.logger.Warn("contained servers share the host's network, its loopback too (the gateway, local databases): install slirp4netns (Debian: apt install slirp4netns) to give each a network of its own, or set \"network\": false", "servers", strings.Join(shared, ","))
		}
	}
}

// ReachHost names the stdio servers that can reach a port of the host's
// loopback, and so could call a gateway that listens there: those that
// run uncontained, those with "network": "host", contained ones where
// slirp4netns is not installed to give them a network of their own, and
// those granted "hostPorts" (whatever the ports: a gateway's port may be
// chosen after the grant was written). (A server contained by its engine
// had its flags checked: no host network.) Disabled servers are not
// named.
func (p *Pool) ReachHost() []string {
	var out []string
	for _, s := range p.list() {
		c := s.cfg.Containment()
		switch {
		case s.cfg.Disabled || s.cfg.TransportName() != "stdio" || s.cfg.Dial != nil:
		case !c.Contained, c.Engine == "" && s.cfg.HostNetwork, c.Engine == "" && len(s.cfg.HostPorts) > 0,
			c.Engine == "" && !s.cfg.NoNetwork && !launcher.OwnNetworks():
			out = append(out, s.cfg.Name)
		}
	}
	return out
}

// GrantedPort names the servers granted a port of the host's loopback
// ("hostPorts"): a gateway refuses to listen on one.
func (p *Pool) GrantedPort(port int) []string {
	var out []string
	for _, s := range p.list() {
		if !s.cfg.Disabled && slices.Contains(s.cfg.HostPorts, port) {
			out = append(out, s.cfg.Name)
		}
	}
	return out
}
