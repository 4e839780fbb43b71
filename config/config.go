// Package config reads toolshelf's configuration: the servers (the
// mcpServers JSON that Claude Desktop, Cursor and VS Code write, with
// toolshelf's own keys beside theirs), profiles, the identity provider,
// rules, the store, search settings, groups and registries.
//
// [Parse] reads the file one section at a time, each in a small function
// whose errors name the file, line and key. ${VAR} and ${file:PATH} are
// expanded as the file is read, and everything an expansion produced is
// remembered as a secret ([Config.Secrets], [ServerConfig.SecretValues])
// so that the rest of toolshelf can keep it out of what it prints and
// what servers see. A problem confined to one server (a variable not
// set) stops that server only ([ServerConfig.Err]); anything else is an
// error of the whole file. The package starts nothing and reaches no
// network.
package config

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/pin"
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

	// Err is a problem that stops this server but not the others, such as
	// an environment variable that is not set.
	Err error
	// Expanded are the values ${VAR} references expanded to: secrets,
	// for redaction; Vars are the names of those variables.
	Expanded []string
	Vars     []string
	// Files are the files ${file:PATH} read: no server sees them.
	Files []string
	// CwdDefault: Cwd is the configuration's folder because the
	// configuration names none. A contained server then runs there
	// without being given the folder (which holds the configuration,
	// and often token files, .env, old audit logs): only the program
	// files its arguments name.
	CwdDefault bool
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

// TransportName is the server's transport: its "type", else in-process
// for Dial, http for a url and stdio for a command.
func (c *ServerConfig) TransportName() string {
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

// StartTimeout is how long the server has to start and list its tools:
// its "timeout", else DefaultTimeout.
func (c *ServerConfig) StartTimeout() time.Duration {
	if c.Timeout > 0 {
		return c.Timeout
	}
	return DefaultTimeout
}

// Keeps reports whether the tool passes the server's Allow and Deny
// patterns.
func (c *ServerConfig) Keeps(tool string) bool {
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

// AlwaysLoads reports whether the configuration marks the tool alwaysLoad.
func (c *ServerConfig) AlwaysLoads(tool string) bool {
	return c.AlwaysLoadAll || slices.Contains(c.AlwaysLoad, tool)
}

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
	// Budgets are "budgets": limits on what people, profiles and groups
	// spend (package ledger).
	Budgets []ledger.Budget
	// Prices are "prices": models' prices over the built-in table.
	Prices ledger.Prices
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
