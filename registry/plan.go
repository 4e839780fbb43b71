package registry

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/toolshelf/toolshelf/internal/hookenv"
	"github.com/toolshelf/toolshelf/internal/hostpath"
)

// Runtimes says what this machine can run a package with.
type Runtimes struct {
	Node bool // npx: npm packages
	Uvx  bool // uvx: PyPI packages
	// Home is the user's home folder: a filepath input is never granted
	// it, nor a hidden file or folder in it (see hostpath.Policy.Risk),
	// and "~" in an answer is expanded to it.
	Home string
	// ConfigDir is the configuration's folder: relative paths are
	// anchored there, and a filepath input's default (the registry's
	// choice) must lie in it.
	ConfigDir string
	// Own are toolshelf's own folders (state, cache): never granted.
	Own []string
	// NPMRegistry is the npm registry the person named on the command
	// line (add --npm-registry): the one package registry on this
	// machine or its network a server may be pointed at, its port on the
	// loopback granted. A registry entry alone never chooses one.
	NPMRegistry string
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
	// Fixed names the inputs whose values the entry fixed: not asked of
	// the person, and shown as the registry's.
	Fixed []string
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
	in := inputs{plan: p, ask: ask, keep: keep, server: name, rt: rt, grants: hostpath.Policy{Home: rt.Home, Own: rt.Own, ConfigDir: rt.ConfigDir}}
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
	p.Fixed = in.fixed
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
	rt     Runtimes
	grants hostpath.Policy
	err    error
	writes []string // filepath inputs: folders the server is granted
	// fixed are the values the entry sets, which the person did not
	// give: shown as the registry's when the plan is.
	fixed []string
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
		if hookenv.Steers(v.Name) {
			return nil, fmt.Errorf("the %s package %s sets %s, which steers how programs are loaded or run or where packages come from: a registry does not choose that (set it in the server's \"env\" yourself if you mean it)", pkg.RegistryType, pkg.Identifier, v.Name)
		}
		if val, ok := in.value(v.Name, v); ok {
			env[v.Name] = val
		}
	}
	if pkg.RegistryType == "npm" {
		if err := in.npmRegistry(pkg, env, server); err != nil {
			return nil, err
		}
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
// is not npm's own: a team's registry on the internet. One on this
// machine or its network (loopback, private, link-local) is the
// person's to choose, on the command line (Runtimes.NPMRegistry); its
// port on the loopback is then granted, since the sandbox has a network
// of its own.
func (in *inputs) npmRegistry(pkg Package, env map[string]string, server map[string]any) error {
	base := strings.TrimSuffix(pkg.RegistryBaseURL, "/")
	mine := strings.TrimSuffix(in.rt.NPMRegistry, "/")
	if base == "" || base == defaultNPM {
		base = mine
	}
	if base == "" || base == defaultNPM {
		return nil
	}
	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
		return fmt.Errorf("the npm package %s names the package registry %q, which is not an http(s) URL", pkg.Identifier, base)
	}
	local := NearHost(u.Hostname())
	if local && base != mine {
		return fmt.Errorf("the npm package %s names the package registry %s, on this machine or its network: a registry entry does not choose that; name it yourself with --npm-registry %s", pkg.Identifier, base, base)
	}
	env["npm_config_registry"] = base
	if h := u.Hostname(); local && (h == "localhost" || net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback()) {
		port, err := strconv.Atoi(u.Port())
		if err != nil || port < 1024 {
			return fmt.Errorf("the package registry %s: name its port, from 1024 (a contained server reaches the host's loopback only at a port it is granted)", base)
		}
		server["network"] = map[string]any{"hostPorts": []int{port}}
	}
	return nil
}

// NearHost reports whether a host name or address is this machine or on
// its own network: loopback, unspecified, private, link-local (the
// cloud's metadata service) or a name under localhost.
func NearHost(h string) bool {
	h = strings.TrimSuffix(strings.ToLower(h), ".")
	if h == "localhost" || strings.HasSuffix(h, ".localhost") || h == "" {
		return true
	}
	ip := net.ParseIP(strings.Trim(h, "[]"))
	return ip != nil && (ip.IsLoopback() || ip.IsUnspecified() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast())
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
		if i.Format == "filepath" {
			in.err = fmt.Errorf("%s: the entry fixes the path %s, which only a person chooses", name, i.Value)
			return "", false
		}
		in.fixed = append(in.fixed, name)
		return i.Value, true
	}
	v, err := in.ask(name, i)
	if err != nil {
		in.err = fmt.Errorf("%s: %w", name, err)
		return "", false
	}
	byPerson := v != ""
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
		return in.filepath(name, v, byPerson)
	}
	return v, true
}

// filepath is a filepath input's value, "~" expanded, and the folder it
// grants for writing: the folder itself, or a file's folder (a path that
// names a file, or, not made yet, has an extension). The grant is judged
// where its links lead (hostpath.Policy.Risk); the registry's default,
// taken when the person gives nothing, must lie in the configuration's
// folder: a registry does not choose what of the host a server gets.
func (in *inputs) filepath(name, v string, byPerson bool) (string, bool) {
	v = hostpath.Expand(v, in.rt.Home)
	if strings.HasPrefix(v, "~") {
		in.err = fmt.Errorf("%s: %s: a path of another user's home is not granted", name, v)
		return "", false
	}
	dir := in.rt.ConfigDir
	if dir == "" {
		dir, _ = os.Getwd()
	}
	grant := v
	if st, err := os.Stat(hostpath.Resolve(v, dir)); err == nil && !st.IsDir() || err != nil && filepath.Ext(v) != "" {
		grant = filepath.Dir(v)
	}
	real := hostpath.Resolve(grant, dir)
	if !filepath.IsAbs(v) && !hostpath.InConfig(real, dir) {
		in.err = fmt.Errorf("%s: %s is not a path in the configuration's folder (%s leads to %s)", name, v, grant, real)
		return "", false
	}
	if why := in.grants.Risk(real, true); why != "" {
		in.err = fmt.Errorf("%s: %s: %s %s: a server added from a registry is not granted it; give a path in a folder of its own", name, v, real, why)
		return "", false
	}
	if !byPerson && !hostpath.InConfig(real, dir) {
		in.err = fmt.Errorf("%s: the registry's default %s is outside the configuration's folder (%s): a registry does not choose what of the host a server gets; give a path yourself", name, v, dir)
		return "", false
	}
	in.writes = append(in.writes, grant)
	return v, true
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
