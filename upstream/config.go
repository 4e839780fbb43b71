package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/pin"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/internal/fuzzy"
)

// DefaultTimeout is how long a server has to start, initialize and list
// its tools before it is given up on (and, if it is a process, killed).
const DefaultTimeout = 10 * time.Second

// ServerConfig configures one upstream MCP server.
type ServerConfig struct {
	// Name is the server's name: the key in "mcpServers". It becomes the
	// server part of the qualified names of its tools.
	Name string

	// Type is "stdio", "http" (streamable HTTP) or "sse" (the legacy
	// HTTP+SSE transport). If empty, "stdio" when Command is set and "http"
	// when URL is set.
	Type string

	// Command, Args, Env and Cwd start a stdio server. A relative Cwd is
	// relative to the configuration file's folder. The server's
	// environment is Env over a minimal one (PATH, HOME, USER, the locale,
	// TMPDIR and their Windows counterparts), not toolshelf's whole
	// environment, which holds other servers' credentials and toolshelf's
	// own tokens.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string
	// InheritEnv names further variables of toolshelf's environment the
	// server gets ("inheritEnv": ["AWS_PROFILE"]); InheritAllEnv
	// ("inheritEnv": true) passes them all. Either way, toolshelf's own
	// settings and tokens and the variables and values of other servers'
	// secrets are withheld.
	InheritEnv    []string
	InheritAllEnv bool

	// NoContain ("contain": false) runs a stdio server uncontained: it
	// can then read everything toolshelf's user can. By default a stdio
	// server is contained where the system allows (see Containment):
	// it sees its cwd and runtime read-only and ReadPaths and WritePaths
	// ("paths": {"read": [...], "write": [...]}, relative to its cwd).
	// NoNetwork ("network": false) takes its network away; by default
	// it has a network of its own, which reaches out but not the host's
	// loopback. HostNetwork ("network": "host") shares the host's, its
	// loopback too: for a server that must reach a local service (a
	// collector, a database), logged at start. HostPorts ("network":
	// {"hostPorts": [5432]}) are the ports of the host's loopback a
	// contained server may reach, at 127.0.0.1 in its own network (see
	// hostports.go), with or without the way out ("outbound": false is
	// NoNetwork but for them).
	NoContain   bool
	NoNetwork   bool
	HostNetwork bool
	HostPorts   []int
	ReadPaths   []string
	WritePaths  []string

	// URL and Headers reach a remote server.
	URL     string
	Headers map[string]string

	// Disabled servers are not started.
	Disabled bool
	// NoPrefix ("prefix": false) lists the server's tools under their own
	// names instead of mcp__<server>__<tool>. A name that another server's
	// tool already has is then an error: that tool is left out and the
	// error names both servers.
	NoPrefix bool
	// AlwaysLoad marks tools that are never deferred: all of the server's
	// tools when AlwaysLoadAll is set, else the tools named here.
	AlwaysLoadAll bool
	AlwaysLoad    []string
	// Timeout bounds start-up, initialize and tools/list. If zero,
	// DefaultTimeout.
	Timeout time.Duration
	// AutoApprove names tools the user approved ahead of time. When the
	// server cannot list its tools, these are listed as known but
	// unverified.
	AutoApprove []string
	// Allow and Deny filter the server's tools by name, with path.Match
	// patterns ("create_*"). A tool is kept when it matches some Allow
	// pattern (or Allow is empty) and no Deny pattern.
	Allow []string
	Deny  []string
	// Describe are the operator's own words for tools that are hard to
	// find ("describe"), by the tool's name: they replace its description
	// or add search words, and are pinned with the definition (a changed
	// override is a changed tool).
	Describe map[string]Describe

	// OAuth is how toolshelf identifies itself when a remote server asks
	// for sign-in ("oauth" in the configuration); nil registers
	// dynamically. Tokens come from Options.Tokens (toolshelf auth login).
	OAuth *OAuthConfig
	// Signin says whose credentials a remote server's calls carry
	// ("signin"): the gateway's own (SigninShared, the default), each
	// person's own sign-in to the server (SigninPerPerson), or a token
	// the gateway gets by exchanging the person's access token at the
	// team's identity provider for one meant for the server
	// (SigninExchange, RFC 8693). Tools are listed with the gateway's own.
	Signin string
	// Audience is the audience asked for in a token exchange ("audience";
	// the server's URL when empty).
	Audience string

	// Trust is the server's own "trust", overriding the configuration's
	// for its tools: toolshelf add writes "approve", so that a server
	// added from a registry is held until a person approves its tools.
	Trust pin.Trust
	// Registry is where the entry came from, for outdated and update.
	Registry *RegistryRef

	// Dial, when set, is used instead of Command or URL to reach the
	// server: for in-process servers. It is called for every connection
	// attempt, so a restart gets a fresh transport.
	Dial func(ctx context.Context) (mcp.Transport, error)

	// err is a problem that stops this server but not the others, such as
	// an environment variable that is not set.
	err error
	// expanded are the values ${VAR} references expanded to: secrets,
	// for redaction; vars are the names of those variables.
	expanded []string
	vars     []string
	// files are the files ${file:PATH} read: no server sees them.
	files []string
	// oauth sends the server's token (Options.Tokens), for remote servers.
	oauth auth.OAuthHandler
	// environ is a stdio server's environment (see serverEnv), set by
	// the pool.
	environ []string
	// hide are toolshelf's files, covered in the server's sandbox;
	// uncontained says why the pool runs it uncontained (Options.NoContain).
	hide        []string
	uncontained string
	// cwdDefault: Cwd is the configuration's folder because the
	// configuration names none. A contained server then runs there
	// without being given the folder (which holds the configuration,
	// and often token files, .env, old audit logs): only the program
	// files its arguments name.
	cwdDefault bool
	// cacheDir is the folder of the server's own package caches (npx's,
	// uvx's), set by the pool.
	cacheDir string
}

// OAuthConfig is a client registered with a server's authorization server
// ahead of time, or a Client ID Metadata Document to use as the client id.
type OAuthConfig struct {
	ClientID          string `json:"clientId"`
	ClientSecret      string `json:"clientSecret"`
	ClientMetadataURL string `json:"clientMetadataUrl"`
	// Grant is "authorization_code" (the default: a user signs in with
	// toolshelf auth login) or "client_credentials" (machine to machine:
	// toolshelf gets tokens itself with ClientID and ClientSecret).
	Grant string `json:"grant"`
}

// Whose credentials a server's calls carry (ServerConfig.Signin).
const (
	SigninShared    = "shared"
	SigninPerPerson = "per-person"
	SigninExchange  = "exchange"
)

// The grants an OAuthConfig may name.
const (
	GrantAuthorizationCode = "authorization_code"
	GrantClientCredentials = "client_credentials"
)

// transport returns the effective transport type.
func (c *ServerConfig) transport() string {
	switch {
	case c.Type != "":
		return c.Type
	case c.Dial != nil:
		return "in-process"
	case c.URL != "":
		return "http"
	}
	return "stdio"
}

// StartTimeout is how long the server has to start and list its tools.
func (c *ServerConfig) StartTimeout() time.Duration { return c.timeout() }

// timeout returns the effective per-server deadline.
func (c *ServerConfig) timeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// keeps reports whether the tool passes the server's Allow and Deny
// patterns.
func (c *ServerConfig) keeps(tool string) bool {
	match := func(patterns []string) bool {
		for _, p := range patterns {
			if ok, _ := path.Match(p, tool); ok {
				return true
			}
		}
		return false
	}
	return (len(c.Allow) == 0 || match(c.Allow)) && !match(c.Deny)
}

// alwaysLoads reports whether the configuration marks the tool alwaysLoad.
func (c *ServerConfig) alwaysLoads(tool string) bool {
	return c.AlwaysLoadAll || slices.Contains(c.AlwaysLoad, tool)
}

// serverJSON is one entry of "mcpServers", as users write it.
type serverJSON struct {
	Type        string            `json:"type"`
	Command     string            `json:"command"`
	Args        []string          `json:"args"`
	Env         map[string]string `json:"env"`
	Cwd         string            `json:"cwd"`
	URL         string            `json:"url"`
	Headers     map[string]string `json:"headers"`
	Disabled    bool              `json:"disabled"`
	Prefix      *bool             `json:"prefix"`
	OAuth       *OAuthConfig      `json:"oauth"`
	AlwaysLoad  json.RawMessage   `json:"alwaysLoad"`
	Timeout     json.RawMessage   `json:"timeout"`
	AutoApprove []string          `json:"autoApprove"`
	InheritEnv  json.RawMessage   `json:"inheritEnv"`
	Contain     *bool             `json:"contain"`
	Network     json.RawMessage   `json:"network"`
	Paths       *struct {
		Read  []string `json:"read"`
		Write []string `json:"write"`
	} `json:"paths"`
	Signin   string `json:"signin"`
	Audience string `json:"audience"`
	Tools    *struct {
		Allow []string `json:"allow"`
		Deny  []string `json:"deny"`
	} `json:"tools"`
	Describe map[string]Describe `json:"describe"`
	Trust    string              `json:"trust"`
	Registry *RegistryRef        `json:"registry"`
}

// serverKeys are the keys a server entry may have.
var serverKeys = []string{"type", "command", "args", "env", "cwd", "url", "headers", "disabled", "prefix", "oauth", "alwaysLoad", "timeout", "autoApprove", "tools", "inheritEnv", "contain", "network", "paths", "signin", "audience", "describe", "trust", "registry"}

// RegistryRef is where a server entry came from ("registry", written by
// toolshelf add): an MCP Registry's entry and version, and the package
// that version runs, for toolshelf outdated and update.
type RegistryRef struct {
	// URL is the registry's base URL; Name and Version the entry's.
	URL     string `json:"url"`
	Name    string `json:"name"`
	Version string `json:"version"`
	// Package is the package the entry chose (registryType:identifier),
	// and Integrity the package registry's integrity for its version,
	// when it gave one.
	Package   string `json:"package,omitempty"`
	Integrity string `json:"integrity,omitempty"`
}

// Describe is an operator's override of a tool's words: a description
// that replaces the server's, and search words added to its search hint
// (_meta["anthropic/searchHint"]). A string in the configuration is a
// description.
type Describe struct {
	Description string `json:"description"`
	SearchWords string `json:"searchWords"`
}

// UnmarshalJSON reads an object, or a string for its description.
func (d *Describe) UnmarshalJSON(b []byte) error {
	var s string
	if json.Unmarshal(b, &s) == nil {
		*d = Describe{Description: s}
		return nil
	}
	type plain Describe
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	var p plain
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf(`want a description, or {"description": ..., "searchWords": ...}: %v`, err)
	}
	*d = Describe(p)
	return nil
}

// LoadConfig reads a configuration file in the "mcpServers" shape that
// Claude Desktop, Claude Code (.mcp.json) and Cursor use:
//
//	{"mcpServers": {"github": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-github"],
//	                           "env": {"GITHUB_PERSONAL_ACCESS_TOKEN": "${GITHUB_TOKEN}"}},
//	                "remote": {"type": "http", "url": "https://example.com/mcp",
//	                           "headers": {"Authorization": "Bearer ${TOKEN}"}}}}
//
// Strings may use ${VAR} and ${VAR:-default}, expanded from getenv (or the
// process environment when getenv is nil). Servers are returned sorted by
// name, disabled ones included.
func LoadConfig(file string, getenv func(string) string) ([]ServerConfig, error) {
	c, err := Load(file, getenv)
	if err != nil {
		return nil, err
	}
	return c.Servers, nil
}

// ParseConfig parses configuration data; file names it in errors and
// anchors relative paths (the current folder when empty).
func ParseConfig(data []byte, file string, getenv func(string) string) ([]ServerConfig, error) {
	c, err := Parse(data, file, getenv)
	if err != nil {
		return nil, err
	}
	return c.Servers, nil
}

// Config is a whole configuration file: the servers, and what toolshelf
// does with them.
type Config struct {
	// Servers are "mcpServers", sorted by name, disabled ones included.
	Servers []ServerConfig
	// Trust is "trust": what happens to a tool seen for the first time
	// (pinned on first use, or quarantined for approval). See package pin.
	Trust pin.Trust
	// Profiles are "profiles", sorted by name.
	Profiles []Profile
	// NoLearn is "learn": false: searches do not learn from use.
	NoLearn bool
	// Store is "store": the postgres:// URL of the state that replicas
	// share, ${VAR} expanded (see package store); "" keeps state in files.
	Store string
	// storeVars are the variables Store came from.
	storeVars []string
	// files are the files ${file:PATH} read for the store and the
	// profiles' tokens.
	files []string
	// Policies are "policies": files and folders of rules in Cedar (see
	// package rules), made absolute against the configuration's folder.
	Policies []string
	// Identity is "identity": the team's identity provider, nil when
	// people do not sign in.
	Identity *Identity
	// Search is "search": how search answers are made.
	Search SearchConfig
	// Groups are "groups": sets of tools and skills the gateway serves as
	// groups (the draft groups extension), sorted by name.
	Groups []GroupConfig
	// Registries are "registry": the MCP Registries toolshelf add reads,
	// in order (a team's own first); none means the official one.
	Registries []string
}

// GroupConfig is one of "groups": a set of tools (qualified names or
// patterns, as a profile's "tools") and skills (by name or served
// skill:// URI) that a client of the groups extension loads together.
type GroupConfig struct {
	Name        string   `json:"-"`
	Description string   `json:"description"`
	Tools       []string `json:"tools"`
	Skills      []string `json:"skills"`
}

// HasTool reports whether the group holds the tool of a qualified name.
func (g *GroupConfig) HasTool(name string) bool { return matchAny(g.Tools, name) }

// HasSkill reports whether the group holds a skill, named by its name or
// its served URI.
func (g *GroupConfig) HasSkill(name, uri string) bool {
	return slices.Contains(g.Skills, name) || slices.Contains(g.Skills, uri)
}

// SearchConfig is "search": {"results": "compact"|"full", "budget": N}.
type SearchConfig struct {
	// Results is what each match of a ranked search carries: "compact"
	// (a purpose and a signature; the default, "") or "full" (the whole
	// definition).
	Results string `json:"results"`
	// Budget bounds the tokens of a ranked answer's compact matches; 0
	// is toolshelf's default.
	Budget int `json:"budget"`
}

// Profile returns the profile with the given name.
func (c *Config) Profile(name string) (*Profile, bool) {
	for i := range c.Profiles {
		if c.Profiles[i].Name == name {
			return &c.Profiles[i], true
		}
	}
	return nil, false
}

// configKeys are the keys a configuration may have at its top.
var configKeys = []string{"mcpServers", "trust", "profiles", "learn", "store", "policies", "identity", "search", "groups", "registry"}

// Load reads a whole configuration file (see LoadConfig).
func Load(file string, getenv func(string) string) (*Config, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	return Parse(data, file, getenv)
}

// Parse parses a whole configuration; file names it in errors and anchors
// relative paths (the current folder when empty). Each top-level section
// is read by a function of its own, which words its errors at its line.
func Parse(data []byte, file string, getenv func(string) string) (*Config, error) {
	if getenv == nil {
		getenv = os.Getenv
	}
	// Editors on Windows save JSON with a byte order mark; it is no error.
	p := &configParser{data: bytes.TrimPrefix(data, []byte("\xEF\xBB\xBF")), file: file, getenv: getenv, cfg: &Config{}}
	if err := p.top(); err != nil {
		return nil, err
	}
	// Relative folders are resolved now, against the file's folder, so
	// that a server is the same server (and cache key) however the file
	// was named.
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return nil, p.errAt(-1, "%v", err)
	}
	p.dir = dir
	for _, section := range []func() error{p.trust, p.learn, p.store, p.search, p.policies, p.servers, p.profiles, p.identity, p.signins, p.groups, p.registries} {
		if err := section(); err != nil {
			return nil, err
		}
	}
	return p.cfg, nil
}

// configParser is a configuration being parsed: its text, where it is,
// its top-level sections, and what was read of them so far.
type configParser struct {
	data      []byte
	file, dir string
	getenv    func(string) string
	sections  map[string]json.RawMessage
	cfg       *Config
}

// errAt is an error at offset in the file (its line and column; -1 for
// the file alone).
func (p *configParser) errAt(offset int, format string, args ...any) error {
	return catalog.ErrorAt(p.file, p.data, offset, fmt.Errorf(format, args...))
}

// at is the offset of a top-level key.
func (p *configParser) at(key string) int { return catalog.KeyOffset(p.data, 0, key) }

// top reads the top level: an object with "mcpServers" and known keys.
func (p *configParser) top() error {
	if err := json.Unmarshal(p.data, &p.sections); err != nil {
		var syn *json.SyntaxError
		if errors.As(err, &syn) {
			return p.errAt(int(syn.Offset), "invalid JSON: %v", err)
		}
		return p.errAt(-1, "invalid JSON: %v", err)
	}
	if _, ok := p.sections["mcpServers"]; !ok {
		hint := ""
		if _, ok := p.sections["servers"]; ok {
			hint = ` (a VS Code mcp.json? convert it with: toolshelf import vscode --from ` + p.file + `)`
		}
		return p.errAt(-1, `no "mcpServers" object%s`, hint)
	}
	for k := range p.sections {
		if !slices.Contains(configKeys, k) {
			return p.errAt(p.at(k), "unknown key %q%s (a configuration has \"mcpServers\", \"trust\", \"profiles\", \"learn\", \"store\", \"policies\", \"identity\", \"search\", \"groups\" and \"registry\")", k, didYouMean(k, configKeys))
		}
	}
	return nil
}

// trust reads "trust": how new tools are trusted (on first use by default).
func (p *configParser) trust() error {
	p.cfg.Trust = pin.TrustOnFirstUse
	raw, ok := p.sections["trust"]
	if !ok {
		return nil
	}
	var t string
	if err := json.Unmarshal(raw, &t); err != nil {
		return p.errAt(p.at("trust"), `"trust" must be a string`)
	}
	var err error
	if p.cfg.Trust, err = pin.ParseTrust(t); err != nil {
		return p.errAt(p.at("trust"), "%v", err)
	}
	return nil
}

// learn reads "learn": whether search learns from use.
func (p *configParser) learn() error {
	raw, ok := p.sections["learn"]
	if !ok {
		return nil
	}
	var learn bool
	if err := json.Unmarshal(raw, &learn); err != nil {
		return p.errAt(p.at("learn"), `"learn" must be true or false`)
	}
	p.cfg.NoLearn = !learn
	return nil
}

// store reads "store": the shared store's postgres:// URL, expanded.
func (p *configParser) store() error {
	raw, ok := p.sections["store"]
	if !ok {
		return nil
	}
	var v string
	at := p.at("store")
	if err := json.Unmarshal(raw, &v); err != nil {
		return p.errAt(at, `"store" must be a string: a postgres:// URL`)
	}
	x := expander{getenv: p.getenv, dir: p.dir}
	v = x.expand(v, "store")
	if x.err != nil {
		return p.errAt(at, "%v", x.err)
	}
	if !strings.HasPrefix(v, "postgres://") && !strings.HasPrefix(v, "postgresql://") {
		return p.errAt(at, `"store" must be a postgres:// URL, such as postgres://toolshelf:${PGPASSWORD}@db:5432/toolshelf`)
	}
	p.cfg.Store, p.cfg.storeVars, p.cfg.files = v, x.vars, x.files
	return nil
}

// search reads "search": what an answer's matches carry and its budget.
func (p *configParser) search() error {
	raw, ok := p.sections["search"]
	if !ok {
		return nil
	}
	at := p.at("search")
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p.cfg.Search); err != nil {
		return p.errAt(at, `"search" must be an object with "results" ("compact" or "full") and "budget" (tokens): %v`, err)
	}
	if r := p.cfg.Search.Results; r != "" && r != "compact" && r != "full" {
		return p.errAt(catalog.KeyOffset(p.data, max(at, 0), "results"), `"search": "results" is %q: want "compact" (a purpose and a signature per match) or "full" (whole definitions)`, r)
	}
	if p.cfg.Search.Budget < 0 {
		return p.errAt(catalog.KeyOffset(p.data, max(at, 0), "budget"), `"search": "budget" must be a number of tokens, 0 for the default`)
	}
	return nil
}

// registries reads "registry": a registry's URL, or a list of them.
func (p *configParser) registries() error {
	raw, ok := p.sections["registry"]
	if !ok {
		return nil
	}
	at := p.at("registry")
	var one string
	if json.Unmarshal(raw, &one) == nil {
		p.cfg.Registries = []string{one}
	} else if err := json.Unmarshal(raw, &p.cfg.Registries); err != nil {
		return p.errAt(at, `"registry" must be an MCP Registry's URL, or a list of them (the first that has a server answers)`)
	}
	for _, u := range p.cfg.Registries {
		if !strings.HasPrefix(u, "https://") && !strings.HasPrefix(u, "http://") {
			return p.errAt(at, `"registry": %q is not an http(s) URL`, u)
		}
	}
	return nil
}

// groupName is a group's name as the groups extension allows it: 1 to 64
// lowercase letters, digits and single hyphens inside.
var groupName = regexp.MustCompile(`^[a-z0-9]+(-[a-z0-9]+)*$`)

// groups reads "groups": each a description, tool patterns and skills.
func (p *configParser) groups() error {
	raw, ok := p.sections["groups"]
	if !ok {
		return nil
	}
	at := p.at("groups")
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || entries == nil {
		return p.errAt(at, `"groups" must be an object of groups by name, each {"description": ..., "tools": [...], "skills": [...]}`)
	}
	if name, _, second := duplicateKey(raw); name != "" {
		return p.errAt(max(at, 0)+second, "group %q is defined twice", name)
	}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		where := catalog.KeyOffset(p.data, max(at, 0), name)
		if len(name) > 64 || !groupName.MatchString(name) {
			return p.errAt(where, "group %q: a name is 1 to 64 lowercase letters, digits and hyphens, without a hyphen first, last or twice", name)
		}
		g := GroupConfig{Name: name}
		dec := json.NewDecoder(bytes.NewReader(entries[name]))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&g); err != nil {
			return p.errAt(where, `group %q must be {"description": ..., "tools": [...], "skills": [...]}: %v`, name, err)
		}
		if strings.TrimSpace(g.Description) == "" {
			return p.errAt(where, "group %q has no description: a model chooses between groups by it", name)
		}
		if len(g.Tools) == 0 && len(g.Skills) == 0 {
			return p.errAt(where, "group %q names no tools and no skills", name)
		}
		for _, pat := range g.Tools {
			if _, err := path.Match(pat, ""); err != nil || pat == "" {
				return p.errAt(where, "group %q: tool pattern %q is not a pattern", name, pat)
			}
		}
		p.cfg.Groups = append(p.cfg.Groups, g)
	}
	return nil
}

// policies reads "policies": files or folders of rules, anchored at the
// configuration's folder.
func (p *configParser) policies() error {
	raw, ok := p.sections["policies"]
	if !ok {
		return nil
	}
	at := p.at("policies")
	var paths []string
	if err := json.Unmarshal(raw, &paths); err != nil {
		return p.errAt(at, `"policies" must be a list of files or folders of rules (*.cedar)`)
	}
	for _, path := range paths {
		if path == "" {
			return p.errAt(at, `"policies": an empty path`)
		}
		if !filepath.IsAbs(path) {
			path = filepath.Join(p.dir, path)
		}
		p.cfg.Policies = append(p.cfg.Policies, path)
	}
	return nil
}

// servers reads "mcpServers": each server, by name, once.
func (p *configParser) servers() error {
	servers := p.sections["mcpServers"]
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(servers, &entries); err != nil || entries == nil {
		return p.errAt(p.at("mcpServers"), `"mcpServers" must be an object of servers by name`)
	}
	if name, first, second := duplicateKey(servers); name != "" {
		base := bytes.Index(p.data, servers)
		line := func(off int) int { return bytes.Count(p.data[:base+off], []byte("\n")) + 1 }
		return p.errAt(base+second, "server %q is defined twice, at lines %d and %d: JSON keeps only the last", name, line(first), line(second))
	}
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		sc, err := p.server(name, entries[name])
		if err != nil {
			return err
		}
		p.cfg.Servers = append(p.cfg.Servers, sc)
	}
	return nil
}

// server reads one server's entry: its keys known, their types right,
// then what they say (serverJSON.config).
func (p *configParser) server(name string, raw json.RawMessage) (ServerConfig, error) {
	at := p.at(name)
	var keys map[string]json.RawMessage
	if err := json.Unmarshal(raw, &keys); err != nil {
		return ServerConfig{}, p.errAt(at, "server %q must be an object", name)
	}
	for k := range keys {
		if !slices.Contains(serverKeys, k) {
			return ServerConfig{}, p.errAt(catalog.KeyOffset(p.data, max(at, 0), k), "server %q: unknown key %q%s", name, k, didYouMean(k, serverKeys))
		}
	}
	var j serverJSON
	if err := json.Unmarshal(raw, &j); err != nil {
		var typ *json.UnmarshalTypeError
		if errors.As(err, &typ) {
			return ServerConfig{}, p.errAt(catalog.KeyOffset(p.data, max(at, 0), strings.Split(typ.Field, ".")[0]), "server %q: %q has the wrong type: want %v, got a JSON %s", name, typ.Field, typ.Type, typ.Value)
		}
		return ServerConfig{}, p.errAt(at, "server %q: %v", name, err)
	}
	sc, err := j.config(name, p.dir, p.getenv)
	if err != nil {
		return sc, p.errAt(at, "server %q: %v", name, err)
	}
	return sc, nil
}

// sectionErr words an error of a top-level section at its line: the
// line of the key a keyedError names inside it, else the section's.
func (p *configParser) sectionErr(name string, err error) error {
	var at *keyedError
	off := p.at(name)
	if errors.As(err, &at) && at.key != "" {
		off = catalog.KeyOffset(p.data, max(off, 0), at.key)
	}
	return p.errAt(off, "%v", err)
}

// profiles reads "profiles" (see parseProfiles).
func (p *configParser) profiles() error {
	raw, ok := p.sections["profiles"]
	if !ok {
		return nil
	}
	var err error
	if p.cfg.Profiles, err = parseProfiles(raw, p.cfg.Servers, p.getenv, p.dir); err != nil {
		return p.sectionErr("profiles", err)
	}
	return nil
}

// identity reads "identity" (see parseIdentity).
func (p *configParser) identity() error {
	raw, ok := p.sections["identity"]
	if !ok {
		return nil
	}
	var err error
	if p.cfg.Identity, err = parseIdentity(raw, p.getenv, p.dir); err != nil {
		return p.sectionErr("identity", err)
	}
	return nil
}

// signins checks what servers and identity say together: a person's
// sign-in link is checked, at the provider, to be opened by that person
// (gateway's consent); without the gateway's client there it could not
// be, and would not be safe.
func (p *configParser) signins() error {
	for _, sc := range p.cfg.Servers {
		if sc.Signin == SigninPerPerson && (p.cfg.Identity == nil || p.cfg.Identity.ClientID == "") {
			return p.errAt(catalog.KeyOffset(p.data, p.at("mcpServers"), sc.Name),
				`server %s: "signin": "per-person" needs "identity" with the gateway's "clientId" (and "clientSecret") at the provider: whoever opens a person's sign-in link must sign in there as that person`, sc.Name)
		}
	}
	return nil
}

// config validates an entry and builds its ServerConfig, section by
// section: each step reads its keys and says what is wrong with them.
func (j *serverJSON) config(name, dir string, getenv func(string) string) (ServerConfig, error) {
	if name == "" {
		return ServerConfig{}, errors.New("a server needs a name")
	}
	sc := ServerConfig{
		Name: name, Type: j.Type, Disabled: j.Disabled, AutoApprove: j.AutoApprove,
		NoPrefix: j.Prefix != nil && !*j.Prefix, Registry: j.Registry,
	}
	if j.Trust != "" {
		t, err := pin.ParseTrust(j.Trust)
		if err != nil {
			return sc, err
		}
		sc.Trust = t
	}
	if r := j.Registry; r != nil && (r.URL == "" || r.Name == "" || r.Version == "") {
		return sc, errors.New(`"registry" needs "url", "name" and "version": where the entry came from`)
	}
	kind, err := j.transport(&sc)
	if err != nil {
		return sc, err
	}
	for _, step := range []func(*ServerConfig) error{j.alwaysLoad, j.inheritEnv, j.timeout, j.describe, j.toolFilter} {
		if err := step(&sc); err != nil {
			return sc, err
		}
	}
	// Expand ${VAR} everywhere. A variable that is not set stops this
	// server only, with a message that names the variable and where it
	// is used, never its value.
	x := &expander{getenv: getenv, dir: dir}
	j.expandLaunch(&sc, x)
	if err := j.oauth(&sc, kind, x); err != nil {
		return sc, err
	}
	if err := j.signin(&sc); err != nil {
		return sc, err
	}
	if err := j.containment(&sc); err != nil {
		return sc, err
	}
	if err := j.paths(&sc, x, getenv); err != nil {
		return sc, err
	}
	if j.Headers != nil {
		sc.Headers = make(map[string]string, len(j.Headers))
		for _, k := range slices.Sorted(maps.Keys(j.Headers)) {
			sc.Headers[k] = x.expand(j.Headers[k], "headers."+k)
		}
	}
	sc.err, sc.expanded, sc.vars, sc.files = x.err, x.values, x.vars, x.files
	if sc.Command != "" && sc.Cwd != "" && !filepath.IsAbs(sc.Cwd) {
		sc.Cwd = filepath.Join(dir, sc.Cwd)
	}
	if sc.Command != "" && (sc.Cwd == "" || filepath.Clean(sc.Cwd) == filepath.Clean(dir)) {
		// The configuration's folder is never given whole, named or
		// not: it holds the configuration, and often token files.
		sc.Cwd, sc.cwdDefault = dir, true
	}
	if !sc.NoContain {
		if err := checkEngine(&sc); err != nil {
			return sc, err
		}
	}
	return sc, nil
}

// transport reads "type", "command" and "url": which transport the server
// is reached by.
func (j *serverJSON) transport(sc *ServerConfig) (transportKind, error) {
	switch j.Type {
	case "":
	case "streamable-http", "streamableHttp":
		sc.Type = "http"
	default:
		if t, ok := transportNamed(j.Type); !ok || t.name == "in-process" {
			return transportKind{}, fmt.Errorf("unknown type %q (want stdio, http or sse)", j.Type)
		}
	}
	kind, _ := transportNamed(sc.Type)
	switch {
	case j.Command == "" && j.URL == "":
		return kind, errors.New(`needs "command" (a stdio server) or "url" (a remote server)`)
	case j.Command != "" && j.URL != "":
		return kind, errors.New(`has both "command" and "url"; a server is one or the other`)
	case j.Command != "" && kind.remote:
		return kind, fmt.Errorf(`type %q needs "url", not "command"`, sc.Type)
	case j.URL != "" && sc.Type != "" && !kind.remote:
		return kind, fmt.Errorf(`type %q needs "command", not "url"`, sc.Type)
	}
	return kind, nil
}

// alwaysLoad reads "alwaysLoad": true, false or tool names.
func (j *serverJSON) alwaysLoad(sc *ServerConfig) error {
	if len(j.AlwaysLoad) == 0 {
		return nil
	}
	var all bool
	if json.Unmarshal(j.AlwaysLoad, &all) == nil {
		sc.AlwaysLoadAll = all
	} else if json.Unmarshal(j.AlwaysLoad, &sc.AlwaysLoad) != nil {
		return errors.New(`"alwaysLoad" must be true, false or a list of tool names`)
	}
	return nil
}

// inheritEnv reads "inheritEnv": true, false or variable names.
func (j *serverJSON) inheritEnv(sc *ServerConfig) error {
	if len(j.InheritEnv) == 0 {
		return nil
	}
	if j.Command == "" {
		return errors.New(`"inheritEnv" is for stdio servers ("command")`)
	}
	var all bool
	if json.Unmarshal(j.InheritEnv, &all) == nil {
		sc.InheritAllEnv = all
	} else if json.Unmarshal(j.InheritEnv, &sc.InheritEnv) != nil {
		return errors.New(`"inheritEnv" must be true, false or a list of variable names`)
	}
	for _, v := range sc.InheritEnv {
		if !validVarName(v) {
			return fmt.Errorf(`"inheritEnv": %q is not a variable name`, v)
		}
	}
	return nil
}

// timeout reads "timeout": seconds, or a duration.
func (j *serverJSON) timeout(sc *ServerConfig) error {
	if len(j.Timeout) == 0 {
		return nil
	}
	d, err := parseTimeout(j.Timeout)
	sc.Timeout = d
	return err
}

// describe reads "describe": a tool's own words, each saying something.
func (j *serverJSON) describe(sc *ServerConfig) error {
	for tool, d := range j.Describe {
		if strings.TrimSpace(d.Description) == "" && strings.TrimSpace(d.SearchWords) == "" {
			return fmt.Errorf(`"describe": %q says nothing: give a "description" or "searchWords"`, tool)
		}
	}
	sc.Describe = j.Describe
	return nil
}

// toolFilter reads "tools": allow and deny patterns, each well formed.
func (j *serverJSON) toolFilter(sc *ServerConfig) error {
	if j.Tools == nil {
		return nil
	}
	sc.Allow, sc.Deny = j.Tools.Allow, j.Tools.Deny
	for _, p := range append(slices.Clone(sc.Allow), sc.Deny...) {
		if _, err := path.Match(p, ""); err != nil {
			return fmt.Errorf("tools pattern %q is malformed", p)
		}
	}
	return nil
}

// expandLaunch expands what starts or reaches the server: its command,
// url, cwd, args and env.
func (j *serverJSON) expandLaunch(sc *ServerConfig, x *expander) {
	sc.Command = x.expand(j.Command, "command")
	sc.URL = x.expand(j.URL, "url")
	sc.Cwd = x.expand(j.Cwd, "cwd")
	for i, a := range j.Args {
		sc.Args = append(sc.Args, x.expand(a, fmt.Sprintf("args[%d]", i)))
	}
	if j.Env != nil {
		sc.Env = make(map[string]string, len(j.Env))
		for _, k := range slices.Sorted(maps.Keys(j.Env)) {
			sc.Env[k] = x.expand(j.Env[k], "env."+k)
		}
	}
}

// oauth reads "oauth": a remote server's client and grant.
func (j *serverJSON) oauth(sc *ServerConfig, kind transportKind, x *expander) error {
	if j.OAuth == nil {
		return nil
	}
	if !kind.remote && j.URL == "" {
		return errors.New(`"oauth" is for remote servers ("url")`)
	}
	sc.OAuth = &OAuthConfig{
		ClientID:          x.expand(j.OAuth.ClientID, "oauth.clientId"),
		ClientSecret:      x.expand(j.OAuth.ClientSecret, "oauth.clientSecret"),
		ClientMetadataURL: x.expand(j.OAuth.ClientMetadataURL, "oauth.clientMetadataUrl"),
		Grant:             j.OAuth.Grant,
	}
	switch j.OAuth.Grant {
	case "", GrantAuthorizationCode:
	case GrantClientCredentials:
		if j.OAuth.ClientID == "" || j.OAuth.ClientSecret == "" {
			return errors.New(`"oauth": the client_credentials grant needs "clientId" and "clientSecret"`)
		}
	default:
		return fmt.Errorf(`"oauth": unknown grant %q (want authorization_code or client_credentials)`, j.OAuth.Grant)
	}
	return nil
}

// signin reads "signin" and "audience": whose sign-in a remote server is
// called with.
func (j *serverJSON) signin(sc *ServerConfig) error {
	switch j.Signin {
	case "", SigninShared:
	case SigninPerPerson, SigninExchange:
		if j.URL == "" {
			return fmt.Errorf(`"signin": %q is for remote servers ("url")`, j.Signin)
		}
		sc.Signin = j.Signin
	default:
		return fmt.Errorf(`"signin": unknown %q (want shared, per-person or exchange)`, j.Signin)
	}
	if j.Audience != "" && sc.Signin != SigninExchange {
		return errors.New(`"audience" is the audience of a token exchange: it goes with "signin": "exchange"`)
	}
	sc.Audience = j.Audience
	return nil
}

// containment reads "contain" and "network": how a stdio server runs.
func (j *serverJSON) containment(sc *ServerConfig) error {
	if j.Contain == nil && j.Network == nil && j.Paths == nil {
		return nil
	}
	if j.Command == "" {
		return errors.New(`"contain", "network" and "paths" are for stdio servers ("command")`)
	}
	sc.NoContain = j.Contain != nil && !*j.Contain
	switch net := strings.TrimSpace(string(j.Network)); {
	case net == "" || net == "true" || net == "null":
	case net == "false":
		sc.NoNetwork = true
	case net == `"host"`:
		sc.HostNetwork = true
	case strings.HasPrefix(net, "{"):
		if err := parseNetwork(j.Network, sc); err != nil {
			return err
		}
	default:
		return fmt.Errorf(`"network": want true (a network of its own), false (none), "host" (the host's, its loopback too) or {"hostPorts": [PORT, ...]}, not %s`, truncate(string(j.Network), 40))
	}
	if sc.NoContain && (sc.NoNetwork || len(sc.HostPorts) > 0 || j.Paths != nil) {
		return errors.New(`"network" and "paths" shape a contained server; with "contain": false they would not hold`)
	}
	return nil
}

// paths reads "paths": what a contained server may read and write.
// Paths are no secrets: expanded apart, so that ${HOME} is not cut from
// every message as one would be; an unset variable still stops the
// server (x's error).
func (j *serverJSON) paths(sc *ServerConfig, x *expander, getenv func(string) string) error {
	if j.Paths == nil {
		return nil
	}
	px := expander{getenv: getenv}
	for i, r := range j.Paths.Read {
		sc.ReadPaths = append(sc.ReadPaths, px.expand(r, fmt.Sprintf("paths.read[%d]", i)))
	}
	for i, w := range j.Paths.Write {
		sc.WritePaths = append(sc.WritePaths, px.expand(w, fmt.Sprintf("paths.write[%d]", i)))
	}
	if px.err != nil {
		x.fail(px.err)
	}
	for _, p := range slices.Concat(sc.ReadPaths, sc.WritePaths) {
		if p == "" {
			return errors.New(`"paths": an empty path`)
		}
	}
	return nil
}

// parseTimeout accepts seconds as a number, or a Go duration string.
func parseTimeout(raw json.RawMessage) (time.Duration, error) {
	var secs float64
	if json.Unmarshal(raw, &secs) == nil {
		if secs <= 0 {
			return 0, fmt.Errorf(`"timeout" must be positive, got %v`, secs)
		}
		return time.Duration(secs * float64(time.Second)), nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			return 0, fmt.Errorf(`"timeout" %q is not a positive duration such as "30s"`, s)
		}
		return d, nil
	}
	return 0, errors.New(`"timeout" must be seconds (a number) or a duration such as "30s"`)
}

// duplicateKey returns a key that an object holds twice, and the offsets
// in obj of its first and second occurrences: encoding/json keeps the
// last silently, and a server defined twice is one lost.
func duplicateKey(obj []byte) (key string, first, second int) {
	dec := json.NewDecoder(bytes.NewReader(obj))
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return "", 0, 0
	}
	seen := map[string]int{}
	for dec.More() {
		off := int(dec.InputOffset())
		t, err := dec.Token()
		if err != nil {
			return "", 0, 0
		}
		k, _ := t.(string)
		// InputOffset is where the token began, before any whitespace
		// and the comma.
		off += bytes.IndexByte(obj[off:], '"')
		if at, ok := seen[k]; ok {
			return k, at, off
		}
		seen[k] = off
		var skip json.RawMessage
		if err := dec.Decode(&skip); err != nil {
			return "", 0, 0
		}
	}
	return "", 0, 0
}

// didYouMean suggests the closest of known to key.
func didYouMean(key string, known []string) string {
	if c := fuzzy.Closest(key, known, 1, 1+len(key)/3); len(c) > 0 {
		return fmt.Sprintf(" (did you mean %q?)", c[0])
	}
	return ""
}
