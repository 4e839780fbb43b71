package config

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/internal/hostpath"
	"github.com/toolshelf/toolshelf/pin"
)

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
	kind, err := j.transport(&sc)
	if err != nil {
		return sc, err
	}
	for _, step := range []func(*ServerConfig) error{j.origin, j.alwaysLoad, j.inheritEnv, j.timeout, j.describe, j.toolFilter} {
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
	for _, step := range []func(*ServerConfig) error{j.signin, j.containment} {
		if err := step(&sc); err != nil {
			return sc, err
		}
	}
	if err := j.paths(&sc, x, getenv); err != nil {
		return sc, err
	}
	j.headers(&sc, x)
	sc.Err, sc.Expanded, sc.Vars, sc.Files = x.err, x.values, x.vars, x.files
	workdir(&sc, dir)
	if !sc.NoContain {
		if err := checkEngine(&sc); err != nil {
			return sc, err
		}
		if err := checkGrants(&sc, dir, getenv); err != nil {
			return sc, err
		}
	}
	return sc, nil
}

// origin reads "trust" and "registry": how far the server's tools are
// trusted, and where the entry came from.
func (j *serverJSON) origin(sc *ServerConfig) error {
	if j.Trust != "" {
		t, err := pin.ParseTrust(j.Trust)
		if err != nil {
			return err
		}
		sc.Trust = t
	}
	if r := j.Registry; r != nil && (r.URL == "" || r.Name == "" || r.Version == "") {
		return errors.New(`"registry" needs "url", "name" and "version": where the entry came from`)
	}
	return nil
}

// headers expands "headers", for remote servers.
func (j *serverJSON) headers(sc *ServerConfig, x *expander) {
	if j.Headers == nil {
		return
	}
	sc.Headers = make(map[string]string, len(j.Headers))
	for _, k := range slices.Sorted(maps.Keys(j.Headers)) {
		sc.Headers[k] = x.expand(j.Headers[k], "headers."+k)
	}
}

// workdir anchors a stdio server's "cwd" at the configuration's folder
// (dir), which is its folder when it names none.
func workdir(sc *ServerConfig, dir string) {
	if sc.Command != "" && sc.Cwd != "" && !filepath.IsAbs(sc.Cwd) {
		sc.Cwd = filepath.Join(dir, sc.Cwd)
	}
	if sc.Command != "" && (sc.Cwd == "" || filepath.Clean(sc.Cwd) == filepath.Clean(dir)) {
		// The configuration's folder is never given whole, named or
		// not: it holds the configuration, and often token files.
		sc.Cwd, sc.CwdDefault = dir, true
	}
}

// transport reads "type", "command" and "url": which transport the server
// is reached by.
func (j *serverJSON) transport(sc *ServerConfig) (Transport, error) {
	switch j.Type {
	case "":
	case "streamable-http", "streamableHttp":
		sc.Type = "http"
	default:
		if t, ok := transportNamed(j.Type); !ok || t.Name == "in-process" {
			return Transport{}, fmt.Errorf("unknown type %q (want stdio, http or sse)", j.Type)
		}
	}
	kind, _ := transportNamed(sc.Type)
	switch {
	case j.Command == "" && j.URL == "":
		return kind, errors.New(`needs "command" (a stdio server) or "url" (a remote server)`)
	case j.Command != "" && j.URL != "":
		return kind, errors.New(`has both "command" and "url"; a server is one or the other`)
	case j.Command != "" && kind.Remote:
		return kind, fmt.Errorf(`type %q needs "url", not "command"`, sc.Type)
	case j.URL != "" && sc.Type != "" && !kind.Remote:
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
func (j *serverJSON) oauth(sc *ServerConfig, kind Transport, x *expander) error {
	if j.OAuth == nil {
		return nil
	}
	if !kind.Remote && j.URL == "" {
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
	home := getenv("HOME")
	for i, r := range j.Paths.Read {
		sc.ReadPaths = append(sc.ReadPaths, hostpath.Expand(px.expand(r, fmt.Sprintf("paths.read[%d]", i)), home))
	}
	for i, w := range j.Paths.Write {
		sc.WritePaths = append(sc.WritePaths, hostpath.Expand(px.expand(w, fmt.Sprintf("paths.write[%d]", i)), home))
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
