package launcher

import (
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/internal/hookenv"
)

// What runs on the host side of a sandbox (bwrap, slirp4netns, a
// container engine's CLI) is toolshelf's, not the server's: it never gets
// the server's environment, where a value a registry wrote (LD_PRELOAD of
// a library the server left in its own cache, DOCKER_HOST) would be
// loaded or obeyed on the host, as toolshelf's user. The server's
// environment is set inside only: bwrap is told it through a pipe
// (--clearenv, then --setenv for each variable, read from its fd 3, so
// that no value shows in the host's process list), and a container's
// variables go to the engine in a file only it reads.

// hostPath is the PATH of a host-side helper: they are run by full path,
// and what they run themselves is the system's.
const hostPath = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// sandboxEnv is the environment of bwrap and slirp4netns: nothing of
// toolshelf's own environment nor of the server's.
func sandboxEnv() []string { return []string{hostPath, "LC_ALL=C"} }

// engineVars are the prefixes of toolshelf's own variables a container
// engine's CLI reads to find its daemon, its configuration and its
// credentials: the person's, so taken from toolshelf's environment, never
// from a server's.
var engineVars = []string{"DOCKER_", "CONTAINER_", "CONTAINERS_", "PODMAN_", "BUILDAH_", "NERDCTL_", "CONTAINERD_", "REGISTRY_AUTH_FILE"}

// engineEnv is the environment of a container engine's CLI: the basic
// variables and the engine's own, from toolshelf's environment.
func engineEnv(environ []string) []string {
	var env []string
	for _, kv := range environ {
		name, _, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if IsBasic(name) || slices.ContainsFunc(engineVars, func(p string) bool { return strings.HasPrefix(name, p) }) {
			env = append(env, kv)
		}
	}
	return env
}

// sandboxSetenv splits a server's environment into what bwrap sets for
// everything it starts in the sandbox (the NUL-separated --setenv
// arguments it reads from its fd) and the loader's variables, set by env
// for the server's command alone.
func sandboxSetenv(env []string) (setenv []byte, loader []string) {
	for _, kv := range env {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if hookenv.ReadByLoader(name) {
			loader = append(loader, kv)
			continue
		}
		setenv = append(setenv, "--setenv\x00"...)
		setenv = append(setenv, name...)
		setenv = append(setenv, 0)
		setenv = append(setenv, value...)
		setenv = append(setenv, 0)
	}
	return setenv, loader
}

// envProgram is the program that sets the loader's variables for the
// server's command alone, inside the sandbox.
const envProgram = "/usr/bin/env"

// basicEnv are the variables a stdio server gets from toolshelf's
// environment without asking: what a process needs to run (the
// TypeScript SDK's stdio transport passes the same core set), the locale,
// and where temporary and per-user files go. None of them is where
// credentials live.
var basicEnv = []string{
	// POSIX
	"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "TMPDIR", "TZ",
	"LANG", "LANGUAGE", "XDG_CACHE_HOME", "XDG_CONFIG_HOME", "XDG_DATA_HOME",
	"XDG_STATE_HOME", "XDG_RUNTIME_DIR",
	// Windows
	"APPDATA", "COMSPEC", "HOMEDRIVE", "HOMEPATH", "LOCALAPPDATA", "PATHEXT",
	"PROCESSOR_ARCHITECTURE", "PROGRAMFILES", "SYSTEMDRIVE", "SYSTEMROOT",
	"TEMP", "TMP", "USERNAME", "USERPROFILE", "WINDIR",
}

// IsBasic reports whether a variable is one every server gets.
func IsBasic(name string) bool {
	// Windows spells variables in any case.
	up := strings.ToUpper(name)
	return slices.Contains(basicEnv, up) || strings.HasPrefix(up, "LC_")
}

// basicEnviron is the environment of a server started without a pool's
// plan of it: the basic variables of environ, then its own.
func basicEnviron(environ []string, own map[string]string) []string {
	var env []string
	for _, kv := range environ {
		if name, _, ok := strings.Cut(kv, "="); ok && IsBasic(name) {
			if _, mine := own[name]; !mine {
				env = append(env, kv)
			}
		}
	}
	for _, k := range sortedKeys(own) {
		env = append(env, k+"="+own[k])
	}
	return env
}
