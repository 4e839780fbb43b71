package registry

import (
	"fmt"
	"net/url"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// Runtimes says what this machine can run a package with.
type Runtimes struct {
	Node bool // npx: npm packages
	Uvx  bool // uvx: PyPI packages
	// Home is the user's home folder: a filepath input is never granted
	// it, nor a hidden file or folder in it (see grantRisk).
	Home string
}

// Asker gets a value of an input from the person: the name it goes by
// (an environment variable, a header, an argument), and the input as the
// entry describes it. A secret is asked for as a secret.
type Asker func(name string, in Input) (string, error)

// SecretStore keeps a secret value for a server's input in a file of its
// own and returns its path: the configuration names the file
// (${file:PATH}), never the value.
type SecretStore func(server, name, value string) (path string, err error)

// Plan is a server entry of toolshelf's configuration made from a
// registry entry.
type Plan struct {
	// Name is the server's name in the configuration.
	Name string
	// Server is its entry, ready to be written under "mcpServers".
	Server map[string]any
	// Chose says which package or remote runs, and why.
	Chose string
	// Warnings are what the person should know (a deprecated entry).
	Warnings []string
	// Package is the package chosen (registryType:identifier), empty for
	// a remote.
	Package Package
}

var notServerName = regexp.MustCompile(`[^a-z0-9_-]+`)

// LocalName is the name a registry entry's server gets in the
// configuration: its name's last part, in the letters server names use.
func LocalName(entryName string) string {
	n := entryName[strings.LastIndex(entryName, "/")+1:]
	n = strings.Trim(notServerName.ReplaceAllString(strings.ToLower(n), "-"), "-")
	if n == "" {
		n = "server"
	}
	return n
}

// exactVersion reports whether v names one version, not a range or a tag.
func exactVersion(v string) bool {
	if v == "" || v == "latest" || strings.ContainsAny(v, "^~<>=*| ") || strings.HasSuffix(v, ".x") {
		return false
	}
	return true
}

// NewPlan turns an entry into a server entry: a package this machine can
// run (npm where Node is, then PyPI where uvx is) at its exact version,
// or else a remote; its inputs asked for, secrets kept in files the entry
// names; held until a person approves its tools ("trust": "approve"); and
// where it came from recorded ("registry"). A deleted entry is refused; a
// deprecated one is planned with a warning.
func NewPlan(e *Entry, name string, rt Runtimes, ask Asker, keep SecretStore) (*Plan, error) {
	st := e.Meta.Official
	switch st.Status {
	case "deleted":
		return nil, fmt.Errorf("%s@%s is deleted from %s%s: it is not added", e.Server.Name, e.Server.Version, e.Registry, message(st.StatusMessage))
	case "", "active", "deprecated":
	default:
		return nil, fmt.Errorf("%s@%s has the status %q, which toolshelf does not know: it is not added", e.Server.Name, e.Server.Version, st.Status)
	}
	p := &Plan{Name: name}
	if st.Status == "deprecated" {
		p.Warnings = append(p.Warnings, fmt.Sprintf("%s@%s is deprecated%s", e.Server.Name, e.Server.Version, message(st.StatusMessage)))
	}
	in := inputs{plan: p, ask: ask, keep: keep, server: name, home: rt.Home}
	var why []string
	for _, pkg := range e.Server.Packages {
		server, err := in.pkg(pkg, rt)
		if err != nil {
			why = append(why, err.Error())
			continue
		}
		if server != nil {
			p.Server, p.Package = server, pkg
			p.Chose = fmt.Sprintf("the %s package %s@%s", pkg.RegistryType, pkg.Identifier, pkg.Version)
			if len(why) > 0 {
				p.Chose += " (" + strings.Join(why, "; ") + ")"
			}
			break
		}
	}
	if p.Server == nil {
		for _, r := range e.Server.Remotes {
			server, err := in.remote(r)
			if err != nil {
				why = append(why, err.Error())
				continue
			}
			p.Server = server
			p.Chose = "the remote " + r.URL
			if len(why) > 0 {
				p.Chose += " (" + strings.Join(why, "; ") + ")"
			}
			break
		}
	}
	if p.Server == nil {
		if len(why) == 0 {
			why = []string{"the entry lists no package and no remote"}
		}
		return nil, fmt.Errorf("%s@%s cannot run here: %s", e.Server.Name, e.Server.Version, strings.Join(why, "; "))
	}
	if in.err != nil {
		return nil, in.err
	}
	p.Server["trust"] = "approve"
	return p, nil
}

func message(m string) string {
	if m == "" {
		return ""
	}
	return ": " + m
}

// inputs fills a plan's inputs, asking the person.
type inputs struct {
	plan   *Plan
	ask    Asker
	keep   SecretStore
	server string
	home   string // the user's (Runtimes.Home)
	err    error
	writes []string // filepath inputs: folders the server is granted
}

// pkg is the server entry running a package, or an error saying why this
// package cannot run here.
func (in *inputs) pkg(pkg Package, rt Runtimes) (map[string]any, error) {
	if t := pkg.Transport.Type; t != "" && t != "stdio" {
		return nil, fmt.Errorf("the %s package %s serves %s, which toolshelf does not start", pkg.RegistryType, pkg.Identifier, t)
	}
	if !exactVersion(pkg.Version) {
		return nil, fmt.Errorf("the %s package %s names no exact version (%q)", pkg.RegistryType, pkg.Identifier, pkg.Version)
	}
	var command string
	var args []string
	switch pkg.RegistryType {
	case "npm":
		if !rt.Node {
			return nil, fmt.Errorf("the npm package %s needs Node.js (npx), which is not here", pkg.Identifier)
		}
		command, args = "npx", []string{"-y", pkg.Identifier + "@" + pkg.Version}
	case "pypi":
		if !rt.Uvx {
			return nil, fmt.Errorf("the PyPI package %s needs uvx, which is not here", pkg.Identifier)
		}
		command, args = "uvx", []string{pkg.Identifier + "==" + pkg.Version}
	default:
		return nil, fmt.Errorf("a %s package (%s) is not one toolshelf runs: npm and PyPI packages are", pkg.RegistryType, pkg.Identifier)
	}
	server := map[string]any{"command": command}
	for _, a := range pkg.PackageArguments {
		args = append(args, in.argument(a)...)
	}
	server["args"] = args
	env := map[string]string{}
	for _, v := range pkg.EnvironmentVariables {
		if val, ok := in.value(v.Name, v); ok {
			env[v.Name] = val
		}
	}
	if pkg.RegistryType == "npm" {
		in.npmRegistry(pkg.RegistryBaseURL, env, server)
	}
	if len(env) > 0 {
		server["env"] = env
	}
	if len(in.writes) > 0 {
		server["paths"] = map[string]any{"write": in.writes}
	}
	return server, nil
}

// defaultNPM is the npm registry npx reads unless told otherwise.
const defaultNPM = "https://registry.npmjs.org"

// npmRegistry points npx at the package registry an entry names, when it
// is not npm's own: a team's registry, or one on this machine, whose
// port on the loopback a contained server is then granted (the sandbox
// has a network of its own).
func (in *inputs) npmRegistry(base string, env map[string]string, server map[string]any) {
	base = strings.TrimSuffix(base, "/")
	if base == "" || base == defaultNPM {
		return
	}
	env["npm_config_registry"] = base
	u, err := url.Parse(base)
	if err != nil {
		return
	}
	if h := u.Hostname(); h == "127.0.0.1" || h == "localhost" || h == "::1" {
		if port, err := strconv.Atoi(u.Port()); err == nil && port >= 1024 {
			server["network"] = map[string]any{"hostPorts": []int{port}}
		}
	}
}

// remote is the server entry reaching a remote.
func (in *inputs) remote(r Remote) (map[string]any, error) {
	var typ string
	switch r.Type {
	case "streamable-http":
		typ = "http"
	case "sse":
		typ = "sse"
	default:
		return nil, fmt.Errorf("a remote of type %q is not one toolshelf reaches", r.Type)
	}
	if strings.Contains(r.URL, "{") {
		return nil, fmt.Errorf("the remote %s has variables in its URL, which toolshelf does not fill", r.URL)
	}
	server := map[string]any{"type": typ, "url": r.URL}
	headers := map[string]string{}
	for _, h := range r.Headers {
		if val, ok := in.value(h.Name, h); ok {
			headers[h.Name] = val
		}
	}
	if len(headers) > 0 {
		server["headers"] = headers
	}
	return server, nil
}

// argument is a package argument on the command line.
func (in *inputs) argument(a Argument) []string {
	label := a.Name
	if label == "" {
		label = a.ValueHint
	}
	val, ok := in.value(label, a.Input)
	if !ok {
		return nil
	}
	if a.Type == "named" {
		return []string{a.Name, val}
	}
	return []string{val}
}

// value is an input's value in the configuration: fixed by the entry, a
// secret as a ${file:...} reference, or what the person gives (the
// default when they give nothing). ok is false for an optional input
// left empty.
func (in *inputs) value(name string, i Input) (string, bool) {
	if in.err != nil {
		return "", false
	}
	if i.Value != "" && !strings.Contains(i.Value, "{") {
		return i.Value, true
	}
	v, err := in.ask(name, i)
	if err != nil {
		in.err = fmt.Errorf("%s: %w", name, err)
		return "", false
	}
	if v == "" {
		v = i.Default
	}
	if v == "" {
		if i.IsRequired {
			in.err = fmt.Errorf("%s is required: %s", name, i.Description)
		}
		return "", false
	}
	if len(i.Choices) > 0 && !contains(i.Choices, v) {
		in.err = fmt.Errorf("%s must be one of %s", name, strings.Join(i.Choices, ", "))
		return "", false
	}
	if strings.Contains(v, "${") {
		in.err = fmt.Errorf("%s: a value with ${ would be read as a reference", name)
		return "", false
	}
	if i.IsSecret {
		path, err := in.keep(in.server, name, v)
		if err != nil {
			in.err = fmt.Errorf("keeping %s: %w", name, err)
			return "", false
		}
		return "${file:" + path + "}", true
	}
	if i.Format == "filepath" {
		if why := grantRisk(v, in.home); why != "" {
			in.err = fmt.Errorf("%s: %s %s: a server added from a registry is not granted it; give a path of its own", name, v, why)
			return "", false
		}
		in.writes = append(in.writes, v)
	}
	return v, true
}

// systemFolders are folders of the system a server from a registry is
// never granted to write in.
var systemFolders = []string{"/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/boot", "/proc", "/sys", "/dev", "/var", "/run"}

// grantRisk says why a filepath input's value may not be granted for
// writing, or "": a registry writes the input (and its default), and
// the server starts, contained but with its grants, before a person has
// approved its tools. The whole file system, a system folder, the home
// folder, a hidden file or folder of it (keys, shell start-up files,
// other programs' settings) and a path out of the configuration's folder
// are refused.
func grantRisk(v, home string) string {
	if rest, ok := strings.CutPrefix(v, "~/"); ok && home != "" {
		v = filepath.Join(home, rest)
	}
	p := filepath.Clean(v)
	if !filepath.IsAbs(p) {
		if p == ".." || strings.HasPrefix(p, "../") || strings.HasPrefix(p, "~") {
			return "is not a path in the configuration's folder"
		}
		return ""
	}
	if p == "/" {
		return "is the whole file system"
	}
	for _, d := range systemFolders {
		if p == d || strings.HasPrefix(p, d+"/") {
			return "is in a folder of the system"
		}
	}
	if home = filepath.Clean(home); home != "." && home != "/" {
		if p == home {
			return "is the home folder"
		}
		if rest, ok := strings.CutPrefix(p, home+"/"); ok && strings.HasPrefix(rest, ".") {
			return "is a hidden file or folder of the home folder (keys and settings live there)"
		}
	}
	return ""
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
