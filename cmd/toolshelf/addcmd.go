package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/internal/folders"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/pin"
	"github.com/toolshelf/toolshelf/registry"
	"github.com/toolshelf/toolshelf/rules"
)

// envRegistry names the registries add and search-registry read (their
// URLs, comma-separated), before the configuration's "registry".
const envRegistry = "TOOLSHELF_REGISTRY"

// envNPMRegistry names the npm registry servers added install from
// (add's --npm-registry, and propose_server's): the person's choice, so
// one on this machine may be named.
const envNPMRegistry = "TOOLSHELF_NPM_REGISTRY"

var addCommand = &command{
	name:    "add",
	summary: "add a server from an MCP Registry, pinned, contained and held until approved",
	usage:   "NAME[@VERSION] [--registry URL] [--name LOCAL] [--npm-registry URL] [--yes] [--config FILE]",
	help: `
Looks the server up in an MCP Registry (NAME is the registry's, such as
io.github.modelcontextprotocol/server-memory; VERSION an exact version,
else the latest) and adds it to the configuration:

  - a package this machine runs, at its exact version (npm where Node.js
    is, else PyPI where uvx is; another is named with why it was not
    chosen), or else the entry's remote as an HTTP server;
  - contained, as every stdio server is, granted write access to the
    folders its "filepath" inputs name (a file's folder for a file; "~"
    is your home). A path is never granted when it is, holds or leads
    through a link to the system's folders, the home folder, a hidden
    folder of it, or toolshelf's own; and the registry's default for one
    (what you get by pressing Enter) must lie in the configuration's
    folder;
  - its inputs asked for on the terminal; secret ones (tokens, keys) kept
    each in a file of its own in the state folder (mode 600), which the
    configuration names as ${file:PATH}: the value is never written into
    the configuration;
  - held until a person approves it ("trust": "approve"): its tools are
    served only after 'toolshelf tools approve NAME' (see what they are,
    and what the poisoning check says of them, with 'toolshelf tools diff
    NAME' first);
  - its origin recorded ("registry": the registry, entry and version, and
    the npm integrity of the package where the npm registry gives one).

Before anything is written, the plan is shown (the command, every
argument and variable, the registry's fixed values marked, the grants,
the network and ports) and you are asked to confirm it; --yes confirms
for a script, and refuses all the same what a registry may not choose:
a variable that steers how programs load or where packages come from
(LD_PRELOAD, NODE_OPTIONS, npm_config_*), a package registry on this
machine or its network (name it yourself with --npm-registry URL, which
also grants its port on the loopback), a path outside what it may have.
A server of the same name is replaced only once you say so.

A deleted entry is refused; a deprecated one is added with its message as
a warning. Rules see the install (Action::"install" on Server::"NAME",
with context.args.registry, .version and .status): a forbid refuses it,
as does a rule that would ask (there is nobody to ask). For instance, to
take servers only from the team's own registry:

  forbid (principal, action == Action::"install", resource)
    unless { context.args.registry == "https://registry.team.example" };

The npm registry: --npm-registry URL, else $TOOLSHELF_NPM_REGISTRY, else
the entry's own when it is on the internet, else npm's.

Registries: --registry URL (repeatable), else $TOOLSHELF_REGISTRY
(comma-separated), else the configuration's "registry" (a URL or a list),
else the official registry, https://registry.modelcontextprotocol.io. The
first that has the server answers. The configuration is --config FILE,
$TOOLSHELF_CONFIG, or toolshelf/servers.json in the user's configuration
folder, made if there is none.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var regs multiFlag
		fs.Var(&regs, "registry", "read the MCP Registry at `URL` (repeatable; the first that has the server answers)")
		local := fs.String("name", "", "the server's `NAME` in the configuration (default: the last part of the registry's name)")
		npmRegistry := fs.String("npm-registry", "", "install npm packages from the registry at `URL` (one on this machine is granted its port)")
		yes := fs.Bool("yes", false, "add without asking to confirm the plan (for scripts; what a registry may not choose is refused all the same)")
		config := fs.String("config", "", "the configuration `FILE` to add to")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("name one server of the registry, such as io.github.modelcontextprotocol/server-memory (NAME@VERSION for a version)")
			}
			return runAdd(ctx, e, args[0], regs, addChoices{local: *local, npmRegistry: *npmRegistry, yes: *yes, replace: *yes}, *config)
		}
	},
}

var searchRegistryCommand = &command{
	name:    "search-registry",
	summary: "find servers in MCP Registries",
	usage:   "WORDS... [--registry URL] [--limit N]",
	help: `
Lists the servers whose names or descriptions match the words, in every
registry read (see 'toolshelf help add'), each with its latest version and
its status (active, deprecated with its message); add one with 'toolshelf
add NAME'.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var regs multiFlag
		fs.Var(&regs, "registry", "read the MCP Registry at `URL` (repeatable)")
		limit := fs.Int("limit", 20, "at most `N` servers of each registry")
		config := fs.String("config", "", "the configuration `FILE` whose \"registry\" to read")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) == 0 {
				return usagef("say what the server is for, such as: toolshelf search-registry github issues")
			}
			c, err := registryClient(e, regs, *config)
			if err != nil {
				return err
			}
			found, err := c.Search(ctx, strings.Join(args, " "), *limit)
			if err != nil {
				return err
			}
			if len(found) == 0 {
				fmt.Fprintln(e.stdout, "no server matches")
				return nil
			}
			for _, en := range found {
				status := en.Meta.Official.Status
				if status == "" {
					status = "active"
				}
				if m := en.Meta.Official.StatusMessage; m != "" {
					status += ": " + m
				}
				fmt.Fprintf(e.stdout, "%s@%s  (%s)\n    %s\n", en.Server.Name, en.Server.Version, status, en.Server.Description)
			}
			return nil
		}
	},
}

// multiFlag is a flag given any number of times.
type multiFlag []string

func (m *multiFlag) String() string     { return strings.Join(*m, ",") }
func (m *multiFlag) Set(v string) error { *m = append(*m, v); return nil }

// registryClient reads the registries the flags, $TOOLSHELF_REGISTRY,
// the configuration or the default name.
func registryClient(e *env, flags []string, configFlag string) (*registry.Client, error) {
	regs := flags
	if len(regs) == 0 {
		for _, r := range strings.Split(e.getenv(envRegistry), ",") {
			if r = strings.TrimSpace(r); r != "" {
				regs = append(regs, r)
			}
		}
	}
	if len(regs) == 0 {
		cfg, _, err := optionalConfig(e, configFlag)
		if err != nil {
			return nil, err
		}
		if cfg != nil {
			regs = cfg.Registries
		}
	}
	if len(regs) == 0 {
		regs = []string{registry.Official}
	}
	for _, r := range regs {
		if u, err := url.Parse(r); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, usagef("registry %q is not an http(s) URL", r)
		}
	}
	return &registry.Client{Registries: regs, HTTP: &http.Client{Timeout: 30 * time.Second}}, nil
}

// addChoices are what the person chose on add's command line.
type addChoices struct {
	local       string // the server's name in the configuration
	npmRegistry string // --npm-registry
	yes         bool   // --yes: the plan is confirmed
	replace     bool   // a server of the same name is replaced (--yes)
}

func runAdd(ctx context.Context, e *env, arg string, regs []string, ch addChoices, configFlag string) error {
	name, version, _ := strings.Cut(arg, "@")
	if name == "" || strings.Count(name, "/") != 1 {
		return usagef("%q is not a registry name such as io.github.modelcontextprotocol/server-memory", arg)
	}
	c, err := registryClient(e, regs, configFlag)
	if err != nil {
		return err
	}
	path := configPath(e, configFlag)
	if path == "" {
		if path = defaultConfigPath(e); path == "" {
			return usagef("no configuration folder: give --config FILE")
		}
	}
	if ch.npmRegistry == "" {
		ch.npmRegistry = e.getenv(envNPMRegistry)
	}
	if ch.npmRegistry != "" {
		if u, err := url.Parse(ch.npmRegistry); err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return usagef("--npm-registry %q is not an http(s) URL", ch.npmRegistry)
		}
	}
	in := bufio.NewReader(e.stdin)
	said, err := installServer(ctx, e, c, path, name, version, ch, func(input string, i registry.Input) (string, error) {
		return askInput(e, in, input, i)
	}, func(question string) (bool, error) {
		return askYes(e, in, question)
	})
	if err != nil {
		return err
	}
	fmt.Fprintln(e.stdout, said)
	fmt.Fprintln(e.stdout, tookChange(ctx, e, path))
	return nil
}

// installServer adds a registry's server to the configuration at path,
// asking for its inputs with ask and to confirm the plan and a
// replacement with confirm (nil: nobody to ask) unless ch says them
// confirmed, and says what it did. It is add's, and
// propose_server's once the person has said yes.
func installServer(ctx context.Context, e *env, c *registry.Client, path, name, version string, ch addChoices, ask registry.Asker, confirm func(string) (bool, error)) (string, error) {
	doc, servers, err := readConfigDoc(path)
	if err != nil {
		return "", err
	}
	local := ch.local
	if local == "" {
		local = registry.LocalName(name)
	}
	if _, ok := servers[local]; ok && !ch.replace {
		if yes, err := askConfirm(confirm, fmt.Sprintf("%s already has a server named %q: replace it?", path, local)); err != nil || !yes {
			return "", usagef("%s already has a server named %q: give another with --name, or remove it first (toolshelf remove %s)", path, local, local)
		}
	}
	entry, err := c.Get(ctx, name, version)
	if err != nil {
		return "", err
	}
	if err := allowInstall(e, path, entry, local); err != nil {
		return "", err
	}
	secrets := filepath.Join(filepath.Dir(learn.DefaultPath(e.getenv)), "secrets")
	keep := func(server, input, value string) (string, error) {
		return keepSecret(secrets, server, input, value)
	}
	rt := runtimesHere(e)
	rt.ConfigDir = filepath.Dir(path)
	if ch.npmRegistry != "" {
		rt.NPMRegistry = ch.npmRegistry
	}
	p, err := registry.NewPlan(entry, local, rt, ask, keep)
	if err != nil {
		return "", err
	}
	fmt.Fprint(e.stderr, describePlan(p, local, path))
	if !ch.yes {
		if yes, err := askConfirm(confirm, "Add it?"); err != nil {
			return "", err
		} else if !yes {
			return "", errors.New("not added: the plan was not confirmed (--yes confirms it for a script)")
		}
	}
	ref := map[string]any{"url": entry.Registry, "name": entry.Server.Name, "version": entry.Server.Version}
	if p.Package.Identifier != "" {
		ref["package"] = p.Package.RegistryType + ":" + p.Package.Identifier + "@" + p.Package.Version
		env, _ := p.Server["env"].(map[string]string)
		if integ, err := packageIntegrity(ctx, p.Package, env["npm_config_registry"]); err == nil && integ != "" {
			ref["integrity"] = integ
		} else if err != nil {
			fmt.Fprintf(e.stderr, "toolshelf: no integrity recorded for %s: %v\n", ref["package"], err)
		}
		if p.Package.FileSHA256 != "" {
			ref["integrity"] = "sha256:" + p.Package.FileSHA256
		}
	}
	p.Server["registry"] = ref
	for _, w := range p.Warnings {
		fmt.Fprintln(e.stderr, "toolshelf: warning:", w)
	}
	raw, _ := json.Marshal(p.Server)
	servers[local] = raw
	if err := writeConfigDoc(path, doc, servers); err != nil {
		return "", err
	}
	// The file must still be a configuration toolshelf reads.
	cfg, err := loadConfig(e, path)
	if err != nil {
		return "", fmt.Errorf("the configuration written to %s does not read back: %w", path, err)
	}
	said := fmt.Sprintf("added %s to %s: %s@%s, running %s\nits tools are held until approved: toolshelf tools diff %s, then toolshelf tools approve %s",
		local, path, entry.Server.Name, entry.Server.Version, p.Chose, local, local)
	// Installed now, so that the next list or serve starts a ready
	// server; one that fails is installed again at its first start.
	if err := installNow(ctx, e, cfg, path, local); err != nil {
		said += "\nits package is not installed yet (" + err.Error() + "): its first start installs it"
	}
	return said, nil
}

// installNow installs a configured server's package (a contained npx
// server's), saying its progress on stderr.
func installNow(ctx context.Context, e *env, cfg *config.Config, path, name string) error {
	for _, sc := range cfg.Servers {
		if sc.Name != name {
			continue
		}
		logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: slog.LevelInfo}))
		pool := newPool(e, []config.ServerConfig{sc}, connectOptions{logger: logger, secrets: cfg.Secrets(), hide: []string{path, pin.Beside(path)}})
		return pool.Install(ctx, name)
	}
	return nil
}

// readConfigDoc reads a configuration file as its top-level keys and its
// servers, each as written; a file not there is an empty configuration.
func readConfigDoc(path string) (doc map[string]json.RawMessage, servers map[string]json.RawMessage, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return map[string]json.RawMessage{}, map[string]json.RawMessage{}, nil
	}
	if err != nil {
		return nil, nil, usagef("%v", err)
	}
	if err := json.Unmarshal(data, &doc); err != nil || doc == nil {
		return nil, nil, badInput(fmt.Errorf("%s: not a JSON object: %v", path, err))
	}
	servers = map[string]json.RawMessage{}
	if raw, ok := doc["mcpServers"]; ok {
		if err := json.Unmarshal(raw, &servers); err != nil || servers == nil {
			return nil, nil, badInput(fmt.Errorf("%s: \"mcpServers\" is not an object", path))
		}
	}
	return doc, servers, nil
}

// writeConfigDoc writes a configuration with its servers, replacing the
// file at once (a file beside it, renamed over it).
func writeConfigDoc(path string, doc, servers map[string]json.RawMessage) error {
	raw, err := json.Marshal(servers)
	if err != nil {
		return err
	}
	doc["mcpServers"] = raw
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm() // a file kept private stays so
	}
	return writeAtomic(path, append(out, '\n'), mode)
}

// allowInstall asks the configuration's rules about the install: a
// forbid refuses it, and so does a rule that would ask (nobody to ask).
// A rule sees the server as Server::"NAME" (resource.name the registry's
// name, resource.server the local one) and the registry, version and
// status as context.args.
func allowInstall(e *env, path string, entry *registry.Entry, local string) error {
	cfg, err := loadConfigIfThere(e, path)
	if err != nil || cfg == nil || len(cfg.Policies) == 0 {
		return err
	}
	live, err := rules.Open(cfg.Policies...)
	if err != nil {
		return badInput(err)
	}
	name := entry.Server.Name
	d := live.Current().Decide(&rules.Request{Action: "install", Kind: "Server", Server: local, Tool: name, Name: name, Time: time.Now(), Args: installArgs(entry)})
	switch d.Effect {
	case rules.Permit:
		return nil
	case rules.Ask:
		return fmt.Errorf("a rule asks a person before installing %s (%s), and add has nobody to ask: an operator installs it", name, strings.Join(d.Rules, ", "))
	}
	why := d.Message
	if why == "" {
		why = "forbidden by " + strings.Join(d.Rules, ", ")
	}
	return fmt.Errorf("the rules forbid installing %s: %s", name, why)
}

// installArgs is what rules read of an install (context.args): the
// registry it comes from, its version and its status.
func installArgs(entry *registry.Entry) json.RawMessage {
	status := entry.Meta.Official.Status
	if status == "" {
		status = "active"
	}
	b, _ := json.Marshal(map[string]string{"registry": entry.Registry, "version": entry.Server.Version, "status": status})
	return b
}

// loadConfigIfThere reads a configuration file that may not exist yet.
func loadConfigIfThere(e *env, path string) (*config.Config, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return loadConfig(e, path)
}

// askInput asks the person for an input on the terminal (stdin): its
// name, description and what it must be; a secret is asked for as one.
func askInput(e *env, in *bufio.Reader, name string, i registry.Input) (string, error) {
	what := name
	if i.Description != "" {
		what += " (" + i.Description + ")"
	}
	switch {
	case i.IsSecret:
		what += ", a secret: it is kept in a file of its own, never in the configuration"
	case i.Default != "":
		what += ", default " + i.Default
	case !i.IsRequired:
		what += ", optional"
	}
	fmt.Fprintf(e.stderr, "%s: ", what)
	line, err := in.ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return "", err
	}
	if errors.Is(err, io.EOF) && line == "" && i.IsRequired && i.Default == "" {
		return "", fmt.Errorf("no answer on stdin, and it is required")
	}
	return strings.TrimRight(line, "\r\n"), nil
}

// keepSecret writes a secret input to a file of its own (mode 600, in a
// folder of mode 700) and returns its path. What it cannot keep so it
// refuses: a server or input name that is not one plain file name (a
// registry writes the input's), a folder that is a link or cannot be made
// private, a file that is a link.
func keepSecret(dir, server, input, value string) (string, error) {
	if dir == "secrets" || dir == "" {
		return "", errors.New("no state folder to keep secrets in: set $XDG_STATE_HOME or $HOME")
	}
	input = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, input)
	for _, n := range []string{server, input} {
		if n == "" || n == "." || n == ".." || filepath.Base(n) != n {
			return "", fmt.Errorf("cannot keep a secret under the name %q: not one plain file name", n)
		}
	}
	folder := filepath.Join(dir, server)
	if err := os.MkdirAll(folder, 0o700); err != nil {
		return "", err
	}
	if fi, err := os.Lstat(folder); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("%s is not a folder of toolshelf's (a link?): no secret is written there", folder)
	}
	if err := os.Chmod(folder, 0o700); err != nil {
		return "", fmt.Errorf("%s cannot be made private: %w", folder, err)
	}
	path := filepath.Join(folder, input)
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|noFollow, 0o600)
	if err != nil {
		return "", err
	}
	// A file that was there keeps its mode through O_TRUNC: made private
	// before the secret is in it.
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return "", err
	}
	if _, err := f.WriteString(value); err != nil {
		f.Close()
		return "", err
	}
	return path, f.Close()
}

// runtimesHere says what this machine runs packages with, and whose home
// and which of toolshelf's folders no filepath input is granted.
func runtimesHere(e *env) registry.Runtimes {
	_, node := exec.LookPath("npx")
	_, uvx := exec.LookPath("uvx")
	return registry.Runtimes{Node: node == nil, Uvx: uvx == nil, Home: e.getenv("HOME"), Own: folders.Kept(e.getenv), NPMRegistry: e.getenv(envNPMRegistry)}
}

// packageIntegrity is the npm registry's integrity of an npm package's
// version ("" for other packages), asked of base, the registry the
// server installs from (npm's own for ""): never one an entry alone named
// (a plan refuses those on this machine).
func packageIntegrity(ctx context.Context, pkg registry.Package, base string) (string, error) {
	if pkg.RegistryType != "npm" {
		return "", nil
	}
	if base == "" {
		base = "https://registry.npmjs.org"
	}
	u := strings.TrimSuffix(base, "/") + "/" + strings.Replace(url.PathEscape(pkg.Identifier), "%40", "@", 1) + "/" + url.PathEscape(pkg.Version)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return "", err
	}
	resp, err := (&http.Client{Timeout: 30 * time.Second}).Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("%s: HTTP %d", u, resp.StatusCode)
	}
	var meta struct {
		Dist struct {
			Integrity string `json:"integrity"`
		} `json:"dist"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 8<<20)).Decode(&meta); err != nil {
		return "", fmt.Errorf("%s: %v", u, err)
	}
	return meta.Dist.Integrity, nil
}

// registryProposer is propose_server's (serve --propose-servers): the
// registries' candidates, installed as add installs them, without asking
// for inputs (a person answered yes to the server, not to its inputs):
// one that needs a value, or a secret, is left for toolshelf add.
type registryProposer struct {
	e      *env
	client *registry.Client
	config string
}

func (p *registryProposer) Candidates(ctx context.Context, need string) ([]gateway.Candidate, error) {
	found, err := p.client.Search(ctx, need, 10)
	if err != nil {
		return nil, err
	}
	var out []gateway.Candidate
	for _, en := range found {
		st := en.Meta.Official
		if st.Status == "deleted" {
			continue
		}
		status := st.Status
		if status == "" {
			status = "active"
		}
		if st.StatusMessage != "" {
			status += ": " + st.StatusMessage
		}
		rt := runtimesHere(p.e)
		rt.ConfigDir = filepath.Dir(p.config)
		plan, err := registry.NewPlan(&en, registry.LocalName(en.Server.Name), rt, noAnswers, func(string, string, string) (string, error) {
			return "", errors.New("a secret")
		})
		if err != nil {
			continue // it cannot run here without a person's inputs: not offered
		}
		out = append(out, gateway.Candidate{Name: en.Server.Name, Version: en.Server.Version, Description: en.Server.Description, Status: status, Runs: plan.Chose,
			Install: installArgs(&en)})
	}
	return out, nil
}

func (p *registryProposer) Install(ctx context.Context, name string) (string, error) {
	// The person said yes to this server in their client; a server of
	// the same name is not replaced.
	return installServer(ctx, p.e, p.client, p.config, name, "", addChoices{yes: true}, noAnswers, nil)
}

// noAnswers answers no input: the default applies; a required one stops
// the install.
func noAnswers(name string, in registry.Input) (string, error) {
	if in.IsSecret || in.IsRequired && in.Default == "" {
		return "", fmt.Errorf("it needs %s, which only a person gives: they run toolshelf add", name)
	}
	return "", nil
}
