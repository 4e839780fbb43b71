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

// EngineFlag is one flag of an engine's run, before the image: the flag
// as written before any "=", its value ("" when it takes none), and
// where it lies: Args[Start:End] of the run's arguments.
type EngineFlag struct {
	Flag, Value string
	Start, End  int
}

// EngineFlags reads the flags of "ENGINE run" (args: what follows "run")
// up to the image, and the image's index. A flag it does not know is an
// error: its value could be taken for the image, and the flags after it
// would pass unread.
func EngineFlags(engine string, args []string) (flags []EngineFlag, image int, err error) {
	i := 0
	for ; i < len(args); i++ {
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
			return nil, 0, fmt.Errorf("%s run %s: a flag toolshelf does not know, so it cannot tell where the image is; write it as %s=VALUE if it takes one, or run the server with \"contain\": false", engine, flag, flag)
		}
		f := EngineFlag{Flag: flag, Start: i}
		switch {
		case hasValue:
			f.Value = value
			if !takes && engineRefused[flag] == "" {
				f.Value = "" // --rm=true and the like
			}
		case takes && i+1 < len(args):
			i++
			f.Value = args[i]
		}
		f.End = i + 1
		flags = append(flags, f)
	}
	return flags, i, nil
}

// checkEngine refuses a docker or podman run whose flags undo its
// isolation, or reach what the server's "paths" do not grant.
func checkEngine(cfg *ServerConfig) error {
	engine := EngineOf(cfg)
	if engine == "" {
		return nil
	}
	grants := append(append([]string(nil), cfg.ReadPaths...), cfg.WritePaths...)
	for i := range grants {
		grants[i] = Anchor(grants[i], cfg.Cwd)
	}
	flags, _, err := EngineFlags(engine, cfg.Args[1:])
	if err != nil {
		return err
	}
	for _, f := range flags {
		if err := checkEngineFlag(engine, f.Flag, f.Value, cfg.Cwd, grants); err != nil {
			return err
		}
	}
	return nil
}

// checkEngineFlag checks one flag of an engine's run: refused outright,
// a namespace of the host's, or a file or mount beyond the grants.
func checkEngineFlag(engine, flag, v string, cwd string, grants []string) error {
	granted := func(host string) bool {
		host = Anchor(host, cwd)
		return Under(host, grants) || slices.Contains(grants, host)
	}
	switch {
	case engineRefused[flag] != "":
		return fmt.Errorf("%s run %s: %s would undo the container's isolation; toolshelf runs such a server only with \"contain\": false", engine, flag, engineRefused[flag])
	case hostNamespaces[flag]:
		if v == "host" || strings.HasPrefix(v, "container:") || strings.HasPrefix(v, "ns:") || strings.HasPrefix(v, "pod:") || strings.HasPrefix(v, "slirp4netns:") && strings.Contains(v, "allow_host_loopback=true") {
			return fmt.Errorf("%s run %s=%s: the host's (or another container's) namespace undoes the container's isolation; toolshelf runs such a server only with \"contain\": false", engine, flag, v)
		}
	case flag == "--volumes-from":
		return fmt.Errorf("%s run --volumes-from: another container's mounts are not the server's \"paths\"", engine)
	case flag == "--env-file":
		if !granted(v) {
			return fmt.Errorf("%s run --env-file %s: the engine would read a file of the host that the server's \"paths\" do not grant; give the server its variables in its \"env\"", engine, v)
		}
	case flag == "--add-host":
		if _, ip, _ := strings.Cut(v, ":"); ip == "host-gateway" || strings.HasPrefix(ip, "127.") || ip == "::1" || ip == "[::1]" {
			return fmt.Errorf("%s run --add-host %s: a name for the host itself; grant the server a port of the host with \"network\": {\"hostPorts\": [...]} instead", engine, v)
		}
	case flag == "-v" || flag == "--volume" || flag == "--mount":
		return checkMount(engine, flag, v, granted)
	}
	return nil
}

// checkMount checks a volume or mount: a bind of a granted path, a
// tmpfs, or an anonymous volume. A named volume is refused: it may have
// been made as a bind of any host folder (docker volume create -o
// type=none -o o=bind -o device=/etc), and so may a volume whose driver
// options a --mount gives.
func checkMount(engine, flag, v string, granted func(string) bool) error {
	host := mountSource(flag, v)
	if flag == "--mount" {
		kind := "volume" // docker's default
		for _, kv := range strings.Split(v, ",") {
			k, val, _ := strings.Cut(kv, "=")
			switch {
			case k == "type":
				kind = val
			case strings.HasPrefix(k, "volume-opt") || k == "volume-driver" || k == "bind-propagation" && strings.Contains(val, "shared"):
				return fmt.Errorf("%s run --mount %s: %s may make the volume a bind of any folder of the host; grant a folder in \"paths\" and bind that", engine, v, k)
			}
		}
		if kind != "bind" && kind != "tmpfs" && host != "" {
			return fmt.Errorf("%s run --mount %s: a named volume may hold any folder of the host; grant a folder in \"paths\" and bind that, or leave out the source for an anonymous volume", engine, v)
		}
	}
	switch {
	case host == "":
		return nil // a tmpfs, or an anonymous volume
	case filepath.IsAbs(host) || strings.HasPrefix(host, ".") || strings.HasPrefix(host, "~"):
		if strings.HasPrefix(host, "~") || !granted(host) {
			return fmt.Errorf("%s run %s %s: the container would see %s, which the server's \"paths\" do not grant; grant it there", engine, flag, v, host)
		}
		return nil
	}
	return fmt.Errorf("%s run %s %s: a named volume (%s) may hold any folder of the host; grant a folder in \"paths\" and bind that, or leave out the name for an anonymous volume", engine, flag, v, host)
}

// mountSource is the host's side of a -v/--volume or --mount value ("" for
// none: a tmpfs, or a volume the engine keeps).
func mountSource(flag, v string) string {
	if flag != "--mount" {
		host, _, bound := strings.Cut(v, ":")
		if !bound {
			return "" // -v /data: an anonymous volume
		}
		return host
	}
	for _, kv := range strings.Split(v, ",") {
		if k, val, _ := strings.Cut(kv, "="); k == "source" || k == "src" {
			return val
		}
	}
	return ""
}
