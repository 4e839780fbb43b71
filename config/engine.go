package config

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
)

// A server started as "docker run …" or "podman run …" is contained by
// its engine: in bubblewrap it could not reach the engine's socket, and
// the engine's own isolation (namespaces, its own root file system) does
// what bwrap would. What the engine is asked for is checked when the
// configuration is read, so that the flags do not undo it: no host
// network, PID, IPC or user namespace, no privileged mode, no added
// capabilities or devices, no bind mounts beyond the server's "paths".

// engines are the container engines recognised, by command name.
var engines = map[string]bool{"docker": true, "podman": true, "nerdctl": true}

// EngineOf is the engine a server's command runs its server with ("" for
// none): COMMAND run ….
func EngineOf(cfg *ServerConfig) string {
	name := filepath.Base(cfg.Command)
	if !engines[name] || len(cfg.Args) == 0 || cfg.Args[0] != "run" {
		return ""
	}
	return name
}

// engineRefused are the flags that would undo an engine's isolation, and
// why, by flag (without its value).
var engineRefused = map[string]string{
	"--privileged":   "privileged mode gives the container the host's devices and every capability",
	"--cap-add":      "added capabilities",
	"--device":       "a host device",
	"--security-opt": "a changed security profile (seccomp, AppArmor, no-new-privileges)",
}

// engineFlags are the flags of "run" that toolshelf knows, and whether
// each takes a value: the image is the first argument that is not a flag
// or a flag's value, and what follows it is the server's own. A flag
// not known here is refused (its value could be taken for the image, and
// the flags after it pass unread): written as --flag=VALUE, or dropped.
var engineFlags = map[string]bool{
	"-i": false, "--interactive": false, "-t": false, "--tty": false, "-d": false, "--detach": false,
	"--rm": false, "--init": false, "--read-only": false, "-P": false, "--publish-all": false, "--no-healthcheck": false,
	"--privileged": false,
	"-e":           true, "--env": true, "--env-file": true, "-v": true, "--volume": true, "--mount": true, "--volumes-from": true,
	"--network": true, "--net": true, "--pid": true, "--ipc": true, "--userns": true, "--uts": true, "--cgroupns": true,
	"--cap-add": true, "--cap-drop": true, "--device": true, "--security-opt": true,
	"--name": true, "-w": true, "--workdir": true, "-u": true, "--user": true, "--entrypoint": true,
	"-p": true, "--publish": true, "-m": true, "--memory": true, "--cpus": true, "--platform": true, "--pull": true,
	"-l": true, "--label": true, "-h": true, "--hostname": true, "--add-host": true, "--dns": true, "--tmpfs": true,
	"--ulimit": true, "--shm-size": true, "--stop-timeout": true, "--log-driver": true, "--log-opt": true, "--expose": true,
}

// hostNamespaces are flags whose value "host" shares the host's.
var hostNamespaces = map[string]bool{"--network": true, "--net": true, "--pid": true, "--ipc": true, "--userns": true, "--uts": true, "--cgroupns": true}

// checkEngine refuses a docker or podman run whose flags undo its
// isolation, or mount what the server's "paths" do not grant.
func checkEngine(cfg *ServerConfig) error {
	engine := EngineOf(cfg)
	if engine == "" {
		return nil
	}
	grants := append(append([]string(nil), cfg.ReadPaths...), cfg.WritePaths...)
	for i := range grants {
		grants[i] = Anchor(grants[i], cfg.Cwd)
	}
	args := cfg.Args[1:]
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" || !strings.HasPrefix(a, "-") {
			break // the image: what follows is the server's own
		}
		flag, value, hasValue := strings.Cut(a, "=")
		takes, known := engineFlags[flag]
		if !known && !strings.HasPrefix(flag, "--") && len(flag) > 2 && strings.Trim(flag[1:], "itdP") == "" {
			takes, known = false, true // short flags together: -it
		}
		if !known {
			return fmt.Errorf("%s run %s: a flag toolshelf does not know, so it cannot tell where the image is; write it as %s=VALUE if it takes one, or run the server with \"contain\": false", engine, flag, flag)
		}
		if !takes && hasValue && engineRefused[flag] == "" {
			continue // --rm=true and the like
		}
		// The flag's value: after "=", or the next argument (taken).
		next := func() string {
			if hasValue {
				return value
			}
			if i+1 < len(args) {
				i++
				return args[i]
			}
			return ""
		}
		if err := checkEngineFlag(engine, flag, takes, next, cfg.Cwd, grants); err != nil {
			return err
		}
	}
	return nil
}

// checkEngineFlag checks one flag of an engine's run: refused outright,
// a namespace of the host's, or a mount beyond the grants. next gives the
// flag's value (and consumes it), for a flag that takes one.
func checkEngineFlag(engine, flag string, takes bool, next func() string, cwd string, grants []string) error {
	switch {
	case engineRefused[flag] != "":
		return fmt.Errorf("%s run %s: %s would undo the container's isolation; toolshelf runs such a server only with \"contain\": false", engine, flag, engineRefused[flag])
	case hostNamespaces[flag]:
		if v := next(); v == "host" || strings.HasPrefix(v, "container:") || strings.HasPrefix(v, "ns:") {
			return fmt.Errorf("%s run %s=%s: the host's (or another container's) namespace undoes the container's isolation; toolshelf runs such a server only with \"contain\": false", engine, flag, v)
		}
	case flag == "--volumes-from":
		next()
		return fmt.Errorf("%s run --volumes-from: another container's mounts are not the server's \"paths\"", engine)
	case flag == "-v" || flag == "--volume" || flag == "--mount":
		v := next()
		host := mountSource(flag, v)
		if host == "" || !filepath.IsAbs(host) && !strings.HasPrefix(host, ".") {
			return nil // a volume of the engine's own, or a tmpfs
		}
		host = Anchor(host, cwd)
		if !Under(host, grants) && !slices.Contains(grants, host) {
			return fmt.Errorf("%s run %s %s: the container would see %s, which the server's \"paths\" do not grant; grant it there", engine, flag, v, host)
		}
	case takes:
		next() // its value, not the image
	}
	return nil
}

// mountSource is the host's side of a -v/--volume or --mount value ("" for
// none: a tmpfs, or a volume the engine keeps).
func mountSource(flag, v string) string {
	if flag != "--mount" {
		host, _, _ := strings.Cut(v, ":")
		return host
	}
	for _, kv := range strings.Split(v, ",") {
		if k, val, _ := strings.Cut(kv, "="); k == "source" || k == "src" {
			return val
		}
	}
	return ""
}
