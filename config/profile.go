package config

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"regexp"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
)

// DefaultProfile is the profile of a client that names none: every tool
// of every server.
const DefaultProfile = "everything"

// Profile is a set of tools for some clients ("profiles" in the
// configuration): a team's read-only set, a CI agent's few tools. A
// session of a profile sees, searches and calls only the profile's tools.
type Profile struct {
	Name string
	// Servers are the servers whose tools the profile may use.
	Servers []string
	// Allow and Deny filter tools by qualified name with path.Match
	// patterns ("mcp__github__get_*"): a tool is kept when it matches
	// some Allow pattern (or Allow is empty) and no Deny pattern.
	Allow []string
	Deny  []string
	// Load names tools (qualified names) listed directly in tools/list,
	// next to the meta tools, as alwaysLoad tools are.
	Load []string
	// Tokens are the bearer tokens that open the profile over HTTP (at
	// /mcp/<name>); each token opens one profile only.
	Tokens []string
	// Claims say which people open the profile with their own access
	// token ("identity"): for every claim named, one of the values
	// listed ({"groups": ["sre"]}).
	Claims map[string][]string
	// UpstreamKey is the model API key 'toolshelf proxy' sends upstream
	// for the profile's callers ("upstreamKey", a secret: give it as
	// ${file:PATH} or ${VAR}); "" sends the proxy's own.
	UpstreamKey string
	// tokenVars are the variables the tokens (and the upstream key) were
	// read from.
	tokenVars []string
	// tokenFiles are the files ${file:PATH} read them from.
	tokenFiles []string
}

// profileName is what a profile may be called: it is a URL path segment.
var profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$`)

// Keeps reports whether the profile may use a tool.
func (p *Profile) Keeps(e *catalog.Entry) bool {
	if !slices.Contains(p.Servers, e.Server) {
		return false
	}
	return (len(p.Allow) == 0 || matchAny(p.Allow, e.Name)) && !matchAny(p.Deny, e.Name)
}

// Excludes says why the profile does not keep a tool: its servers, the
// Deny pattern it matches, or the Allow patterns it matches none of; ""
// for a tool it keeps.
func (p *Profile) Excludes(e *catalog.Entry) string {
	switch {
	case !slices.Contains(p.Servers, e.Server):
		return fmt.Sprintf("profile %s's servers (%s) do not include %s", p.Name, strings.Join(p.Servers, ", "), e.Server)
	case len(p.Allow) > 0 && !matchAny(p.Allow, e.Name):
		return fmt.Sprintf("%s matches none of profile %s's allow patterns (%s)", e.Name, p.Name, strings.Join(p.Allow, ", "))
	}
	for _, pat := range p.Deny {
		if ok, _ := path.Match(pat, e.Name); ok {
			return fmt.Sprintf("%s matches profile %s's deny pattern %q", e.Name, p.Name, pat)
		}
	}
	return ""
}

// Loads reports whether the profile lists a tool directly.
func (p *Profile) Loads(e *catalog.Entry) bool { return slices.Contains(p.Load, e.Name) }

// Narrow returns the part of a catalog the profile sees: its tools, under
// the names the whole catalog gives them (a tool has one name in every
// profile), with its Load tools marked alwaysLoad.
func (p *Profile) Narrow(c *catalog.Catalog) *catalog.Catalog {
	return c.Map(func(e catalog.Entry) (catalog.Entry, bool) {
		if !p.Keeps(&e) {
			return e, false
		}
		e.AlwaysLoad = e.AlwaysLoad || p.Loads(&e)
		return e, true
	})
}

// HasServer reports whether the profile may use a server.
func (p *Profile) HasServer(name string) bool { return slices.Contains(p.Servers, name) }

func matchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, name); ok {
			return true
		}
	}
	return false
}

// Unmatched returns, for a catalog, the profile's patterns and Load names
// that match none of its tools: likely typos, worth a warning.
func (p *Profile) Unmatched(c *catalog.Catalog) []string {
	var out []string
	hit := func(match func(*catalog.Entry) bool) bool {
		for e := range c.All() {
			if p.HasServer(e.Server) && match(e) {
				return true
			}
		}
		return false
	}
	for _, pat := range slices.Concat(p.Allow, p.Deny) {
		if !hit(func(e *catalog.Entry) bool { ok, _ := path.Match(pat, e.Name); return ok }) {
			out = append(out, fmt.Sprintf("pattern %q matches no tool", pat))
		}
	}
	for _, name := range p.Load {
		if !hit(func(e *catalog.Entry) bool { return e.Name == name && p.Keeps(e) }) {
			out = append(out, fmt.Sprintf("%q in \"load\" is not one of its tools", name))
		}
	}
	return out
}

// profileJSON is one entry of "profiles", as users write it.
type profileJSON struct {
	Servers []string `json:"servers"`
	Tools   *struct {
		Allow []string `json:"allow"`
		Deny  []string `json:"deny"`
	} `json:"tools"`
	Load        []string            `json:"load"`
	Tokens      []string            `json:"tokens"`
	Claims      map[string][]string `json:"claims"`
	UpstreamKey string              `json:"upstreamKey"`
}

var profileKeys = []string{"servers", "tools", "load", "tokens", "claims", "upstreamKey"}

// keyedError is an error about a key of the configuration, so that the
// caller can name its line.
type keyedError struct {
	key string
	msg string
}

func (e *keyedError) Error() string { return e.msg }

// parseProfiles reads "profiles": an object of profiles by name.
func parseProfiles(raw json.RawMessage, servers []ServerConfig, getenv func(string) string, dir string) ([]Profile, error) {
	var entries map[string]json.RawMessage
	if err := json.Unmarshal(raw, &entries); err != nil || entries == nil {
		return nil, errors.New(`"profiles" must be an object of profiles by name`)
	}
	if name, _, _ := duplicateKey(raw); name != "" {
		return nil, &keyedError{name, fmt.Sprintf("profile %q is defined twice: two profiles on one path (/mcp/%s)", name, name)}
	}
	known := make([]string, 0, len(servers))
	for _, s := range servers {
		known = append(known, s.Name)
	}
	tokenOwner := map[string]string{}
	var out []Profile
	for _, name := range slices.Sorted(maps.Keys(entries)) {
		perr := func(format string, args ...any) error {
			return &keyedError{name, fmt.Sprintf("profile %q: %s", name, fmt.Sprintf(format, args...))}
		}
		if name == DefaultProfile {
			return nil, perr("the name is taken by the default profile, which has every tool")
		}
		if !profileName.MatchString(name) {
			return nil, perr("a profile name is letters, digits, '_', '.' and '-' (it is a URL path: /mcp/<name>)")
		}
		var keys map[string]json.RawMessage
		if err := json.Unmarshal(entries[name], &keys); err != nil {
			return nil, perr("must be an object")
		}
		for k := range keys {
			if !slices.Contains(profileKeys, k) {
				return nil, perr("unknown key %q%s", k, didYouMean(k, profileKeys))
			}
		}
		var j profileJSON
		if err := json.Unmarshal(entries[name], &j); err != nil {
			var typ *json.UnmarshalTypeError
			if errors.As(err, &typ) {
				return nil, perr("%q has the wrong type: want %v, got a JSON %s", typ.Field, typ.Type, typ.Value)
			}
			return nil, perr("%v", err)
		}
		p := Profile{Name: name, Servers: j.Servers, Load: j.Load}
		if len(p.Servers) == 0 {
			return nil, perr(`needs "servers": the servers whose tools it may use`)
		}
		for _, s := range p.Servers {
			if !slices.Contains(known, s) {
				return nil, perr("unknown server %q%s", s, didYouMean(s, known))
			}
		}
		if j.Tools != nil {
			p.Allow, p.Deny = j.Tools.Allow, j.Tools.Deny
		}
		for _, pat := range slices.Concat(p.Allow, p.Deny) {
			if _, err := path.Match(pat, ""); err != nil {
				return nil, perr("tools pattern %q is malformed", pat)
			}
		}
		x := expander{getenv: getenv, dir: dir}
		for i, t := range j.Tokens {
			v := x.expand(t, fmt.Sprintf("tokens[%d]", i))
			if x.err != nil {
				// A token that is not set must not become an empty
				// token, which would open the profile to anyone.
				return nil, perr("%v", x.err)
			}
			if len(v) < 16 {
				return nil, perr("tokens[%d] is shorter than 16 characters; use a long random token (openssl rand -hex 32)", i)
			}
			if other, ok := tokenOwner[v]; ok && other != name {
				return nil, perr("tokens[%d] is also a token of profile %q: a token opens one profile", i, other)
			}
			tokenOwner[v] = name
			p.Tokens = append(p.Tokens, v)
		}
		if j.UpstreamKey != "" {
			p.UpstreamKey = x.expand(j.UpstreamKey, "upstreamKey")
			if x.err != nil || p.UpstreamKey == "" {
				return nil, perr("upstreamKey: %v", cmp.Or(x.err, errors.New("it is empty")))
			}
		}
		p.tokenVars, p.tokenFiles = x.vars, x.files
		var err error
		if p.Claims, err = checkClaims(j.Claims); err != nil {
			return nil, perr("%v", err)
		}
		out = append(out, p)
	}
	return out, nil
}
