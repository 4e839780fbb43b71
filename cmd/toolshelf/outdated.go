package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/registry"
)

var outdatedCommand = &command{
	name:    "outdated",
	summary: "check the servers added from a registry for newer versions and changed status",
	usage:   "[--config FILE]",
	help: `
For every server 'toolshelf add' wrote (its "registry" record), asks the
registry it came from for the server's latest version and for the status
of the version it runs, and prints those that have a newer version or
became deprecated or deleted (with the registry's message). A registry
checked before is first asked what changed since (updated_since); a
server it does not name keeps what the last check found. What it finds
is kept in the state folder (registry-status.json), and 'toolshelf list'
flags those servers until the next check. 'toolshelf update' moves them to
the latest version. Exit status is 1 when a server runs a deleted
version.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		config := fs.String("config", "", "the configuration `FILE`")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments: %v", args)
			}
			cfg, path, err := requiredConfig(e, *config)
			if err != nil {
				return err
			}
			state := loadRegistryStatus(e)
			found, err := checkRegistries(ctx, cfg, state)
			state.Servers = found
			if err := saveRegistryStatus(e, state); err != nil {
				fmt.Fprintf(e.stderr, "toolshelf: the status was not kept: %v\n", err)
			}
			deleted := false
			for _, s := range found {
				if line := s.line(); line != "" {
					fmt.Fprintln(e.stdout, line)
				}
				deleted = deleted || s.Status == "deleted"
			}
			if len(found) == 0 {
				fmt.Fprintf(e.stdout, "no server of %s came from a registry (toolshelf add)\n", path)
			}
			if err != nil {
				return err
			}
			if deleted {
				return errors.New("a server runs a version its registry deleted: remove it, or update it")
			}
			return nil
		}
	},
}

var updateCommand = &command{
	name:    "update",
	summary: "move servers added from a registry to their latest version, held until approved",
	usage:   "[NAME...] [--config FILE]",
	help: `
Moves each named server (every server 'toolshelf add' wrote, when none is
named) to its registry's latest version: the package's version in its
arguments and its "registry" record; its inputs stay as they are. A
latest version that is deleted is not taken, a deprecated one is with a
warning, and one that asks for a required input the entry does not have
is left for 'toolshelf add --name' to set up. The server's tools whose
definitions changed are held until approved (toolshelf tools diff NAME
shows each change; toolshelf tools approve NAME lets them in).`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		config := fs.String("config", "", "the configuration `FILE`")
		return func(ctx context.Context, e *env, args []string) error {
			cfg, path, err := requiredConfig(e, *config)
			if err != nil {
				return err
			}
			return runUpdate(ctx, e, cfg, path, args)
		}
	},
}

// requiredConfig reads the configuration the flag or the defaults name,
// which must be there.
func requiredConfig(e *env, flag string) (*config.Config, string, error) {
	cfg, path, err := optionalConfig(e, flag)
	if err == nil && cfg == nil {
		err = usagef("no configuration: give --config FILE")
	}
	return cfg, path, err
}

// registryStatus is what a registry says now of a server added from it.
type registryStatus struct {
	Server        string    `json:"server"`
	Name          string    `json:"name"`
	Version       string    `json:"version"`
	Latest        string    `json:"latest,omitempty"`
	Status        string    `json:"status,omitempty"`
	StatusMessage string    `json:"statusMessage,omitempty"`
	Checked       time.Time `json:"checked"`
	Error         string    `json:"error,omitempty"`
}

// line is what outdated says of a server, "" when nothing is to say.
func (s registryStatus) line() string {
	var parts []string
	if s.Error != "" {
		parts = append(parts, "not checked: "+s.Error)
	}
	if s.Latest != "" && s.Latest != s.Version {
		parts = append(parts, fmt.Sprintf("%s → %s", s.Version, s.Latest))
	}
	if s.Status == "deprecated" || s.Status == "deleted" {
		st := s.Status
		if s.StatusMessage != "" {
			st += ": " + s.StatusMessage
		}
		parts = append(parts, fmt.Sprintf("%s is %s", s.Version, st))
	}
	if len(parts) == 0 {
		return ""
	}
	return fmt.Sprintf("%s (%s): %s", s.Server, s.Name, strings.Join(parts, "; "))
}

// checkRegistries asks each added server's registry for its latest
// version and the status of the version it runs. A registry checked
// before is asked first what changed since (updated_since): a server it
// does not name keeps what the last check found.
func checkRegistries(ctx context.Context, cfg *config.Config, last *registryState) ([]registryStatus, error) {
	var out []registryStatus
	var errs []error
	changed := map[string]map[string]bool{} // registry → names changed since its last check
	now := time.Now().UTC()
	for _, sc := range cfg.Servers {
		r := sc.Registry
		if r == nil {
			continue
		}
		c := &registry.Client{Registries: []string{r.URL}, HTTP: &http.Client{Timeout: 30 * time.Second}}
		if _, asked := changed[r.URL]; !asked {
			changed[r.URL] = nil // every server asked by name
			if since, ok := last.Checked[r.URL]; ok {
				if entries, err := c.UpdatedSince(ctx, r.URL, since); err == nil {
					names := map[string]bool{}
					for _, en := range entries {
						names[en.Server.Name] = true
					}
					changed[r.URL] = names
				}
			}
		}
		if names := changed[r.URL]; names != nil && !names[r.Name] {
			if prev, ok := last.server(sc.Name, r.Name, r.Version); ok {
				prev.Checked = now
				out = append(out, prev)
				continue
			}
		}
		st := registryStatus{Server: sc.Name, Name: r.Name, Version: r.Version, Checked: now}
		if cur, err := c.Get(ctx, r.Name, r.Version); err == nil {
			st.Status, st.StatusMessage = cur.Meta.Official.Status, cur.Meta.Official.StatusMessage
		} else {
			st.Error = err.Error()
			errs = append(errs, fmt.Errorf("%s: %w", sc.Name, err))
		}
		if latest, err := c.Get(ctx, r.Name, "latest"); err == nil && latest.Meta.Official.Status != "deleted" {
			st.Latest = latest.Server.Version
		}
		out = append(out, st)
	}
	for url := range changed {
		last.Checked[url] = now
	}
	return out, errors.Join(errs...)
}

// registryState is what outdated keeps: when each registry was checked,
// and what it said of each added server.
type registryState struct {
	Checked map[string]time.Time `json:"checked"`
	Servers []registryStatus     `json:"servers"`
}

// server is what the last check found of a server running name@version.
func (s *registryState) server(local, name, version string) (registryStatus, bool) {
	for _, st := range s.Servers {
		if st.Server == local && st.Name == name && st.Version == version && st.Error == "" {
			return st, true
		}
	}
	return registryStatus{}, false
}

// registryStatusPath is where outdated keeps what it found.
func registryStatusPath(e *env) string {
	p := learn.DefaultPath(e.getenv)
	if p == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(p), "registry-status.json")
}

func saveRegistryStatus(e *env, st *registryState) error {
	path := registryStatusPath(e)
	if path == "" {
		return errors.New("no state folder")
	}
	b, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o600)
}

// loadRegistryStatus reads what the last outdated kept; empty when there
// is nothing (or it cannot be read: the next check asks everything).
func loadRegistryStatus(e *env) *registryState {
	st := &registryState{Checked: map[string]time.Time{}}
	path := registryStatusPath(e)
	if path == "" {
		return st
	}
	b, err := os.ReadFile(path)
	if err != nil || json.Unmarshal(b, st) != nil {
		return &registryState{Checked: map[string]time.Time{}}
	}
	if st.Checked == nil {
		st.Checked = map[string]time.Time{}
	}
	return st
}

// registryNotes are what the last outdated found of servers that became
// deprecated or deleted, by server: list, doctor and the console flag
// them.
func registryNotes(e *env) map[string]string {
	notes := map[string]string{}
	for _, s := range loadRegistryStatus(e).Servers {
		if s.Status == "deprecated" || s.Status == "deleted" {
			note := fmt.Sprintf("%s@%s is %s in its registry", s.Name, s.Version, s.Status)
			if s.StatusMessage != "" {
				note += ": " + s.StatusMessage
			}
			notes[s.Server] = note + " (checked " + s.Checked.Format("2006-01-02") + ")"
		}
	}
	return notes
}

func runUpdate(ctx context.Context, e *env, cfg *config.Config, path string, names []string) error {
	doc, servers, err := readConfigDoc(path)
	if err != nil {
		return err
	}
	for _, n := range names {
		if _, ok := servers[n]; !ok {
			return usagef("%s has no server %q", path, n)
		}
	}
	updated := 0
	var errs []error
	for _, sc := range cfg.Servers {
		r := sc.Registry
		if r == nil || len(names) > 0 && !slices.Contains(names, sc.Name) {
			continue
		}
		c := &registry.Client{Registries: []string{r.URL}, HTTP: &http.Client{Timeout: 30 * time.Second}}
		latest, err := c.Get(ctx, r.Name, "latest")
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sc.Name, err))
			continue
		}
		if latest.Server.Version == r.Version {
			continue
		}
		raw, err := updatedEntry(ctx, servers[sc.Name], r, latest)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", sc.Name, err))
			continue
		}
		if st := latest.Meta.Official; st.Status == "deprecated" {
			fmt.Fprintf(e.stderr, "toolshelf: warning: %s@%s is deprecated%s\n", r.Name, latest.Server.Version, statusNote(st.StatusMessage))
		}
		servers[sc.Name] = raw
		updated++
		fmt.Fprintf(e.stdout, "updated %s: %s %s → %s; its changed tools are held: toolshelf tools diff %s\n", sc.Name, r.Name, r.Version, latest.Server.Version, sc.Name)
	}
	if updated > 0 {
		if err := writeConfigDoc(path, doc, servers); err != nil {
			return err
		}
		if _, err := loadConfig(e, path); err != nil {
			return fmt.Errorf("the configuration written to %s does not read back: %w", path, err)
		}
		fmt.Fprintln(e.stdout, tookChange(ctx, e, path))
	} else if len(errs) == 0 {
		fmt.Fprintln(e.stdout, "every server added from a registry runs its latest version")
	}
	return errors.Join(errs...)
}

func statusNote(m string) string {
	if m == "" {
		return ""
	}
	return ": " + m
}

// updatedEntry is a server entry moved to a newer registry entry: the
// package's version in its arguments and the record; its inputs kept.
func updatedEntry(ctx context.Context, raw json.RawMessage, r *config.RegistryRef, latest *registry.Entry) (json.RawMessage, error) {
	st := latest.Meta.Official
	if st.Status == "deleted" {
		return nil, fmt.Errorf("the latest version, %s, is deleted%s: not taken", latest.Server.Version, statusNote(st.StatusMessage))
	}
	var entry map[string]any
	if err := json.Unmarshal(raw, &entry); err != nil {
		return nil, err
	}
	kind, rest, _ := strings.Cut(r.Package, ":")
	ident := rest[:max(strings.LastIndex(rest, "@"), 0)]
	if kind == "" || ident == "" {
		return nil, errors.New("its \"registry\" record names no package: add it again to take another version")
	}
	var pkg *registry.Package
	for i := range latest.Server.Packages {
		if p := &latest.Server.Packages[i]; p.RegistryType == kind && p.Identifier == ident {
			pkg = p
		}
	}
	if pkg == nil {
		return nil, fmt.Errorf("the latest version, %s, has no %s package %s any more: add it again to choose another", latest.Server.Version, kind, ident)
	}
	env, _ := entry["env"].(map[string]any)
	for _, v := range pkg.EnvironmentVariables {
		if _, ok := env[v.Name]; !ok && v.IsRequired && v.Value == "" && v.Default == "" {
			return nil, fmt.Errorf("the latest version asks for %s, which the entry does not set: add it again (toolshelf add %s --name ...)", v.Name, r.Name)
		}
	}
	old, next := ident+"@"+r.Version, ident+"@"+pkg.Version
	if kind == "pypi" {
		old, next = ident+"=="+r.Version, ident+"=="+pkg.Version
	}
	args, _ := entry["args"].([]any)
	replaced := false
	for i, a := range args {
		if a == old {
			args[i], replaced = next, true
		}
	}
	if !replaced {
		return nil, fmt.Errorf("its arguments do not run %s (edited by hand?): add it again to take another version", old)
	}
	ref := map[string]any{"url": r.URL, "name": r.Name, "version": latest.Server.Version, "package": kind + ":" + next}
	// Asked of the registry the server installs from (what its entry's
	// env says), never of one the new version's entry names.
	base, _ := env["npm_config_registry"].(string)
	if integ, err := packageIntegrity(ctx, *pkg, base); err == nil && integ != "" {
		ref["integrity"] = integ
	}
	entry["registry"] = ref
	return json.Marshal(entry)
}
