package config

// Transport is a way of reaching a server, as the configuration names
// it: remote transports take "url", the others "command" (or, in a
// program, Dial).
type Transport struct {
	Name   string
	Remote bool
}

// Transports are the transports a server may have (upstream dials each).
var Transports = []Transport{{Name: "stdio"}, {Name: "http", Remote: true}, {Name: "sse", Remote: true}, {Name: "in-process"}}

// transportNamed returns the transport of a name, and whether there is
// one.
func transportNamed(name string) (Transport, bool) {
	for _, t := range Transports {
		if t.Name == name {
			return t, true
		}
	}
	return Transport{}, false
}
