package upstream

import (
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/config"
)

// A server started as docker or podman run is contained by its engine:
// not wrapped in bwrap (which would keep it from the engine's socket),
// and refused when its flags undo the container's isolation or mount
// what its "paths" do not grant.
func TestContainerEngines(t *testing.T) {
	for _, tc := range []struct {
		name, config, err string
	}{
		{"plain", `{"command": "docker", "args": ["run", "-i", "--rm", "mcp/fetch"]}`, ""},
		{"podman with a granted mount", `{"command": "podman", "args": ["run", "-i", "--rm", "-v", "/srv/data:/data:ro", "mcp/fs", "/data"], "paths": {"read": ["/srv/data"]}}`, ""},
		{"a named volume", `{"command": "docker", "args": ["run", "-i", "-v", "cache:/root/.cache", "img"]}`, ""},
		{"host network", `{"command": "docker", "args": ["run", "-i", "--network", "host", "img"]}`, "--network=host"},
		{"host network, one word", `{"command": "docker", "args": ["run", "-i", "--net=host", "img"]}`, "--net=host"},
		{"host pid", `{"command": "podman", "args": ["run", "--pid=host", "img"]}`, "--pid=host"},
		{"another container's network", `{"command": "docker", "args": ["run", "--network", "container:db", "img"]}`, "another container"},
		{"privileged", `{"command": "docker", "args": ["run", "--privileged", "img"]}`, "privileged mode"},
		{"a capability", `{"command": "docker", "args": ["run", "--cap-add=SYS_ADMIN", "img"]}`, "added capabilities"},
		{"a device", `{"command": "/usr/bin/docker", "args": ["run", "--device", "/dev/kvm", "img"]}`, "a host device"},
		{"the home folder", `{"command": "docker", "args": ["run", "-v", "/root:/host", "img"]}`, "which the server's \"paths\" do not grant"},
		{"the engine's socket", `{"command": "docker", "args": ["run", "--mount", "type=bind,source=/var/run/docker.sock,target=/s", "img"]}`, "/var/run/docker.sock"},
		{"after the image, the server's own", `{"command": "docker", "args": ["run", "-i", "img", "--privileged"]}`, ""},
		{"a flag's value before the image", `{"command": "docker", "args": ["run", "--name", "srv", "-e", "K=V", "--privileged", "img"]}`, "privileged mode"},
		{"flags together", `{"command": "docker", "args": ["run", "-it", "--rm=true", "img"]}`, ""},
		{"a flag toolshelf does not know", `{"command": "docker", "args": ["run", "--gpus", "all", "--privileged", "img"]}`, "a flag toolshelf does not know"},
		{"a known flag, its value in one word", `{"command": "podman", "args": ["run", "--name=srv", "--network=host", "img"]}`, "--network=host"},
		{"uncontained by choice", `{"command": "docker", "args": ["run", "--privileged", "img"], "contain": false}`, ""},
	} {
		cfgs, err := config.ParseConfig([]byte(`{"mcpServers": {"s": `+tc.config+`}}`), "/tmp/servers.json", nil)
		switch {
		case tc.err == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%s: %v, want %q", tc.name, err, tc.err)
		case err == nil && tc.name != "uncontained by choice":
			if c := (&serverConfig{ServerConfig: cfgs[0]}).containment(); !c.Contained || c.Engine == "" {
				t.Errorf("%s: %+v", tc.name, c)
			}
		}
	}
}
