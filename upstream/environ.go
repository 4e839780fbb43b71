package upstream

import (
	"log/slog"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/launcher"
)

// ownPrefix marks toolshelf's own settings, which no server gets.
const ownPrefix = "TOOLSHELF_"

// withheld is what no server may inherit unless the value is its own: the
// variables and values of toolshelf's secrets and of every server's
// configured secrets, by the server they belong to ("" for toolshelf's).
type withheld struct {
	vars   map[string][]string // variable → the servers that use it
	values map[string][]string // secret value → the servers it belongs to
}

func newWithheld(own config.Secrets, configs []config.ServerConfig) *withheld {
	w := &withheld{vars: map[string][]string{}, values: map[string][]string{}}
	for _, v := range own.Vars {
		w.vars[v] = append(w.vars[v], "")
	}
	for _, v := range own.Values {
		if len(v) >= minSecret {
			w.values[v] = append(w.values[v], "")
		}
	}
	for i := range configs {
		c := &configs[i]
		for _, v := range c.Vars {
			w.vars[v] = append(w.vars[v], c.Name)
		}
		for _, v := range c.SecretValues() {
			if len(v) >= minSecret {
				w.values[v] = append(w.values[v], c.Name)
			}
		}
	}
	return w
}

// others reports whether the list names anyone but server.
func others(owners []string, server string) bool {
	return slices.ContainsFunc(owners, func(o string) bool { return o != server })
}

// reason says why a variable of toolshelf's environment is not passed to
// server, or "" when it may be.
func (w *withheld) reason(server, name, value string) string {
	if strings.HasPrefix(strings.ToUpper(name), ownPrefix) {
		return "it is a toolshelf setting"
	}
	if owners := w.vars[name]; others(owners, server) {
		return "it holds a secret of " + ownerName(owners, server)
	}
	for secret, owners := range w.values {
		if others(owners, server) && strings.Contains(value, secret) {
			return "its value holds a secret of " + ownerName(owners, server)
		}
	}
	return ""
}

// ownerName names the first owner other than server.
func ownerName(owners []string, server string) string {
	for _, o := range owners {
		if o == "" {
			return "toolshelf"
		}
	}
	for _, o := range owners {
		if o != server {
			return "server " + o
		}
	}
	return "toolshelf"
}

// serverEnv builds a stdio server's environment from toolshelf's
// (environ, as os.Environ gives it): the basic variables; those the server
// asks for by name ("inheritEnv"), or all when it asks for all, without
// what w withholds from it; then the server's own "env". Variables it
// named and did not get are logged by name.
func serverEnv(cfg *config.ServerConfig, environ []string, w *withheld, logger *slog.Logger) []string {
	env := make([]string, 0, 32+len(cfg.InheritEnv)+len(cfg.Env))
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if !ok || name == "" {
			continue
		}
		if _, own := cfg.Env[name]; own {
			continue // the server's own value follows
		}
		if launcher.IsBasic(name) {
			// Passed whatever other servers expand: ${TMPDIR} in one
			// server's configuration must not take it from the rest.
			env = append(env, kv)
			continue
		}
		named := slices.Contains(cfg.InheritEnv, name)
		if !named && !cfg.InheritAllEnv {
			continue
		}
		if why := w.reason(cfg.Name, name, value); why != "" {
			if named && logger != nil {
				logger.Warn("not passing "+name+" to the server: "+why, "variable", name)
			}
			continue
		}
		env = append(env, kv)
	}
	for _, k := range sortedKeys(cfg.Env) {
		env = append(env, k+"="+cfg.Env[k])
	}
	return env
}
