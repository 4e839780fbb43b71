package launcher

import (
	"os"
	"slices"
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
		{"a named volume", `{"command": "docker", "args": ["run", "-i", "-v", "cache:/root/.cache", "img"]}`, "a named volume (cache)"},
		{"an anonymous volume", `{"command": "docker", "args": ["run", "-i", "-v", "/root/.cache", "img"]}`, ""},
		{"a named volume by --mount", `{"command": "docker", "args": ["run", "--mount", "source=cache,target=/c", "img"]}`, "a named volume"},
		{"a volume's driver options", `{"command": "docker", "args": ["run", "--mount", "type=volume,target=/c,volume-opt=device=/etc,volume-opt=o=bind", "img"]}`, "volume-opt"},
		{"a tmpfs by --mount", `{"command": "docker", "args": ["run", "--mount", "type=tmpfs,target=/c", "img"]}`, ""},
		{"a home by ~", `{"command": "docker", "args": ["run", "-v", "~/.ssh:/s", "img"]}`, "do not grant"},
		{"privileged, one word", `{"command": "docker", "args": ["run", "--privileged=true", "img"]}`, "privileged mode"},
		{"the host's user namespace", `{"command": "podman", "args": ["run", "--userns=host", "img"]}`, "--userns=host"},
		{"the host's user namespace, two words", `{"command": "docker", "args": ["run", "--userns", "host", "img"]}`, "--userns=host"},
		{"a host file's variables", `{"command": "docker", "args": ["run", "--env-file", "/etc/environment", "img"]}`, "--env-file /etc/environment"},
		{"a granted file's variables", `{"command": "docker", "args": ["run", "--env-file=/srv/app/env", "img"], "paths": {"read": ["/srv/app"]}}`, ""},
		{"the host by name", `{"command": "docker", "args": ["run", "--add-host", "h:host-gateway", "img"]}`, "a name for the host itself"},
		{"the host's loopback by name", `{"command": "docker", "args": ["run", "--add-host=db:127.0.0.1", "img"]}`, "a name for the host itself"},
		{"another host by name", `{"command": "docker", "args": ["run", "--add-host=db:10.1.2.3", "img"]}`, ""},
		{"podman's way to the host's loopback", `{"command": "podman", "args": ["run", "--network=slirp4netns:allow_host_loopback=true", "img"]}`, "namespace undoes"},
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
			if c := (&Plan{ServerConfig: cfgs[0]}).Containment(); !c.Contained || c.Engine == "" {
				t.Errorf("%s: %+v", tc.name, c)
			}
		}
	}
}

// TestEngineCommand: the engine's CLI runs with toolshelf's environment,
// not the server's (whose LD_PRELOAD or DOCKER_HOST it would obey on the
// host), and the variables the run passes by name reach the container
// through a file only the CLI reads.
func TestEngineCommand(t *testing.T) {
	t.Setenv("DOCKER_CONFIG", "/person/docker")
	cfgs, err := config.ParseConfig([]byte(`{"mcpServers": {"s": {"command": "docker",
		"args": ["run", "-i", "--rm", "-e", "GITHUB_TOKEN", "--env=MODE", "-e", "FIXED=1", "--env", "ABSENT", "img", "-e", "SERVER_OWN"],
		"env": {"GITHUB_TOKEN": "ghp_secret", "MODE": "ro", "LD_PRELOAD": "/tmp/x.so", "DOCKER_HOST": "tcp://evil:2375"}}}}`), "/tmp/servers.json", nil)
	if err != nil {
		t.Fatal(err)
	}
	cfg := &Plan{ServerConfig: cfgs[0]}
	env := basicEnviron(nil, cfg.Env)
	run, err := engineCommand(cfg, env)
	if err != nil {
		t.Fatal(err)
	}
	defer (&sandboxPlan{envFile: run.envFile}).close()
	for _, kv := range run.cmd.Env {
		if strings.Contains(kv, "LD_PRELOAD") || strings.Contains(kv, "evil") || strings.Contains(kv, "ghp_secret") {
			t.Errorf("the CLI's environment has %s", kv)
		}
	}
	if !slices.Contains(run.cmd.Env, "DOCKER_CONFIG=/person/docker") {
		t.Errorf("the person's DOCKER_CONFIG did not reach the CLI: %q", run.cmd.Env)
	}
	want := []string{"docker", "run", "--env-file", run.envFile, "-i", "--rm", "-e", "FIXED=1", "img", "-e", "SERVER_OWN"}
	if !slices.Equal(run.cmd.Args, want) {
		t.Errorf("args = %q\nwant %q", run.cmd.Args, want)
	}
	got, err := os.ReadFile(run.envFile)
	if err != nil || string(got) != "GITHUB_TOKEN=ghp_secret\nMODE=ro\n" {
		t.Errorf("env file = %q, %v", got, err)
	}
	if st, err := os.Stat(run.envFile); err != nil || st.Mode().Perm() != 0o600 {
		t.Errorf("env file mode: %v %v", st, err)
	}
	(&sandboxPlan{envFile: run.envFile}).close()
	if _, err := os.Stat(run.envFile); !os.IsNotExist(err) {
		t.Errorf("the env file is left after the server stopped: %v", err)
	}

	cfg.Env["GITHUB_TOKEN"] = "two\nlines"
	env = basicEnviron(nil, cfg.Env)
	if _, err := engineCommand(cfg, env); err == nil || !strings.Contains(err.Error(), "line break") {
		t.Errorf("a value with a line break: %v", err)
	}
}
