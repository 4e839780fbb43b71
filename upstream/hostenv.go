package upstream

import (
	"slices"
	"strings"
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
		if isBasic(name) || slices.ContainsFunc(engineVars, func(p string) bool { return strings.HasPrefix(name, p) }) {
			env = append(env, kv)
		}
	}
	return env
}

// loaderVars are the variables the C library and its loader read in any
// program they start (glibc's list of those it drops for a setuid
// program): a library to load, a path to load from, a file to read as
// configuration. They are set for the server's own command only, never
// for what runs before it in the sandbox (setpriv runs as root there).
var loaderVars = []string{
	"GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
	"MALLOC_TRACE", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
}

// IsLoaderVar reports whether a variable steers how programs are loaded
// or run rather than what they do: the C library's loader (LD_*, and the
// variables of loaderVars), macOS's (DYLD_*), and the hooks of the
// interpreters MCP servers run on (node, Python, Perl, Ruby, Java, the
// shells). A registry may not set one; a person may, for the server's
// own command.
func IsLoaderVar(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range []string{"LD_", "DYLD_", "MALLOC_", "GLIBC_"} {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	return slices.Contains(loaderVars, up) || slices.Contains(hookVars, up)
}

// hookVars are interpreters' own "run this first" variables.
var hookVars = []string{
	"NODE_OPTIONS", "NODE_PATH", "NODE_EXTRA_CA_CERTS", "NODE_REPL_EXTERNAL_MODULE",
	"PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONBREAKPOINT",
	"PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
	"BASH_ENV", "ENV", "ZDOTDIR", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "IFS",
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
		if isLoaderOnly(name) {
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

// isLoaderOnly reports whether a variable is read by the C library of
// any program, so must reach the server's command and nothing before it.
func isLoaderOnly(name string) bool {
	for _, p := range []string{"LD_", "MALLOC_", "GLIBC_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return slices.Contains(loaderVars, name)
}

// envProgram is the program that sets the loader's variables for the
// server's command alone, inside the sandbox.
const envProgram = "/usr/bin/env"
