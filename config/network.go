package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// parseNetwork reads "network" as an object: {"hostPorts": [...],
// "outbound": bool}.
func parseNetwork(raw json.RawMessage, sc *ServerConfig) error {
	var n struct {
		HostPorts []int `json:"hostPorts"`
		Outbound  *bool `json:"outbound"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&n); err != nil {
		return fmt.Errorf(`"network": want {"hostPorts": [PORT, ...], "outbound": true|false}: %v`, err)
	}
	if len(n.HostPorts) == 0 {
		return errors.New(`"network": {"hostPorts": []} grants no port: list the ports of the host's loopback the server needs, or write "network": true`)
	}
	seen := map[int]bool{}
	for _, p := range n.HostPorts {
		switch {
		case p < 1024 || p > 65535:
			return fmt.Errorf(`"network": "hostPorts": %d: want a port from 1024 to 65535 (a contained server has no privilege to listen below 1024)`, p)
		case seen[p]:
			return fmt.Errorf(`"network": "hostPorts": %d is listed twice`, p)
		}
		seen[p] = true
		sc.HostPorts = append(sc.HostPorts, p)
	}
	sc.NoNetwork = n.Outbound != nil && !*n.Outbound
	return nil
}
