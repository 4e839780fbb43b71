package config

import (
	"bytes"
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

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/fuzzy"
	"github.com/toolshelf/toolshelf/pin"
)

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

// configKeys are the keys a configuration may have at its top.
var configKeys = []string{"mcpServers", "trust", "profiles", "learn", "store", "policies", "identity", "search", "groups", "registry", "budgets", "prices"}

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
	for _, section := range []func() error{p.trust, p.learn, p.store, p.search, p.policies, p.servers, p.profiles, p.identity, p.signins, p.groups, p.registries, p.budgets, p.prices} {
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

// line is the line of an offset in the file.
func (p *configParser) line(off int) int { return bytes.Count(p.data[:off], []byte("\n")) + 1 }

// decode reads the top-level section key into v; found is false when
// the configuration has none. An error says what the section must be
// (want), at its line.
func (p *configParser) decode(key string, v any, want string) (found bool, err error) {
	raw, ok := p.sections[key]
	if !ok {
		return false, nil
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return true, p.errAt(p.at(key), "%q must be %s", key, want)
	}
	return true, nil
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
	if k, first, second := duplicateKey(p.data); k != "" {
		// JSON keeps the last: a second "policies" would drop the rules
		// of the first without a word.
		return p.errAt(second, "%q is given twice, at lines %d and %d: JSON keeps only the last", k, p.line(first), p.line(second))
	}
	for k := range p.sections {
		if !slices.Contains(configKeys, k) {
			return p.errAt(p.at(k), "unknown key %q%s (a configuration has \"mcpServers\", \"trust\", \"profiles\", \"learn\", \"store\", \"policies\", \"identity\", \"search\", \"groups\", \"registry\", \"budgets\" and \"prices\")", k, didYouMean(k, configKeys))
		}
	}
	return nil
}

// trust reads "trust": how new tools are trusted (on first use by default).
func (p *configParser) trust() error {
	p.cfg.Trust = pin.TrustOnFirstUse
	var t string
	if found, err := p.decode("trust", &t, "a string"); !found || err != nil {
		return err
	}
	var err error
	if p.cfg.Trust, err = pin.ParseTrust(t); err != nil {
		return p.errAt(p.at("trust"), "%v", err)
	}
	return nil
}

// learn reads "learn": whether search learns from use.
func (p *configParser) learn() error {
	var learn bool
	if found, err := p.decode("learn", &learn, "true or false"); !found || err != nil {
		return err
	}
	p.cfg.NoLearn = !learn
	return nil
}

// store reads "store": the shared store's postgres:// URL, expanded.
func (p *configParser) store() error {
	var v string
	if found, err := p.decode("store", &v, "a string: a postgres:// URL"); !found || err != nil {
		return err
	}
	at := p.at("store")
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
	var paths []string
	if found, err := p.decode("policies", &paths, "a list of files or folders of rules (*.cedar)"); !found || err != nil {
		return err
	}
	at := p.at("policies")
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
		return p.errAt(base+second, "server %q is defined twice, at lines %d and %d: JSON keeps only the last", name, p.line(base+first), p.line(base+second))
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
	if k, _, _ := duplicateKey(raw); k != "" {
		// A second "paths" or "contain" would undo the first unseen.
		return ServerConfig{}, p.errAt(catalog.KeyOffset(p.data, max(at, 0), k), "server %q: %q is given twice: JSON keeps only the last", name, k)
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
