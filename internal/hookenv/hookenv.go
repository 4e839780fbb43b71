// Package hookenv knows the environment variables that steer how a
// program is loaded or run rather than what it does: a library to load
// first, a file to run first, a path to load from. A server's such
// variable is for the server's own command alone: never chosen by a
// registry, never given to what toolshelf runs on the host.
package hookenv

import (
	"slices"
	"strings"
)

// LoaderVars are the variables the C library and its loader read in any
// program they start, beside LD_* and MALLOC_* (glibc's list of those it
// drops for a setuid program).
var LoaderVars = []string{
	"GCONV_PATH", "GETCONF_DIR", "GLIBC_TUNABLES", "HOSTALIASES", "LOCALDOMAIN", "LOCPATH",
	"MALLOC_TRACE", "NIS_PATH", "NLSPATH", "RESOLV_HOST_CONF", "RES_OPTIONS", "TZDIR",
}

// ReadByLoader reports whether the C library reads a variable in every
// program it starts (as spelled: the loader does not fold case).
func ReadByLoader(name string) bool {
	for _, p := range []string{"LD_", "MALLOC_", "GLIBC_"} {
		if strings.HasPrefix(name, p) {
			return true
		}
	}
	return slices.Contains(LoaderVars, name)
}

// Steers reports whether a variable steers how programs are loaded or
// run, or where their packages come from, rather than what they do: the
// C library's loader (LD_*, LoaderVars), macOS's (DYLD_*), the hooks of
// the interpreters MCP servers run on (node, Python, Perl, Ruby, Java,
// the shells) and their package managers' settings (npm_config_*, uv's
// and pip's indexes). A registry may not set one; a person may, for the
// server's own command.
func Steers(name string) bool {
	up := strings.ToUpper(name)
	for _, p := range []string{"LD_", "DYLD_", "MALLOC_", "GLIBC_", "NPM_CONFIG_", "UV_", "PIP_"} {
		if strings.HasPrefix(up, p) {
			return true
		}
	}
	return slices.Contains(LoaderVars, up) || slices.Contains(hookVars, up)
}

// hookVars are interpreters' own "run this first" variables.
var hookVars = []string{
	"NODE_OPTIONS", "NODE_PATH", "NODE_EXTRA_CA_CERTS", "NODE_REPL_EXTERNAL_MODULE",
	"PYTHONSTARTUP", "PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONINSPECT", "PYTHONBREAKPOINT",
	"PYTHONWARNINGS", "PYTHONPLATLIBDIR", "PYTHONEXECUTABLE", "PYTHONPYCACHEPREFIX",
	"PERL5OPT", "PERL5LIB", "PERLLIB", "RUBYOPT", "RUBYLIB", "JAVA_TOOL_OPTIONS", "_JAVA_OPTIONS", "JDK_JAVA_OPTIONS",
	"BASH_ENV", "ENV", "ZDOTDIR", "PROMPT_COMMAND", "SHELLOPTS", "BASHOPTS", "IFS",
}
