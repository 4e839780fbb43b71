package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/folders"
	"github.com/toolshelf/toolshelf/internal/hostpath"
)

var importCommand = &command{
	name:    "import",
	summary: "convert a client's MCP settings into a toolshelf configuration",
	usage:   "claude-desktop|claude-code|cursor|vscode [--from FILE] > servers.json",
	help: `
Reads the MCP servers a client is configured with and prints them as a
toolshelf configuration ({"mcpServers": ...}) on stdout. Without --from, the
client's usual file is read:

  claude-desktop  <config dir>/Claude/claude_desktop_config.json
  claude-code     ./.mcp.json, else ~/.claude.json, or $CLAUDE_CONFIG_DIR/.claude.json
                  when that is set (top level and this folder's project)
  cursor          ./.cursor/mcp.json, else ~/.cursor/mcp.json
  vscode          ./.vscode/mcp.json, else <config dir>/Code/User/mcp.json

Variables are rewritten to toolshelf's ${VAR} form: ${env:VAR} becomes
${VAR}, VS Code's ${input:id} becomes ${ID} (set it in the environment), and
${workspaceFolder} becomes the current folder. Keys toolshelf does not use
are dropped and named on stderr, and so is the entry that runs toolshelf
itself (a gateway that would start itself). The folders a server names in
its arguments are granted for writing ("paths"), since the client ran it
with them, and said on stderr; one no server is granted (the home, a
system folder, a hidden folder of the home) is not.

Save the output as toolshelf/servers.json in your configuration folder, or
pass it with --config.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		from := fs.String("from", "", "read the client's settings from `FILE`")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) != 1 {
				return usagef("name one client: claude-desktop, claude-code, cursor or vscode")
			}
			return runImport(e, args[0], *from)
		}
	},
}

var clients = []string{"claude-desktop", "claude-code", "cursor", "vscode"}

func runImport(e *env, client, from string) error {
	if !slices.Contains(clients, client) {
		return usagef("unknown client %q (want one of %s)%s", client, strings.Join(clients, ", "), didYouMean(client, clients))
	}
	path := from
	if path == "" {
		var err error
		if path, err = defaultClientPath(e, client); err != nil {
			return err
		}
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return usagef("%v", err)
	}
	servers, err := clientServers(client, data)
	if err != nil {
		return badInput(fmt.Errorf("%s: %v", path, err))
	}
	cwd, _ := os.Getwd()
	out := make(map[string]map[string]any, len(servers))
	for _, name := range slices.Sorted(maps.Keys(servers)) {
		var entry map[string]any
		if err := json.Unmarshal(servers[name], &entry); err != nil {
			return badInput(fmt.Errorf("%s: server %q is not an object", path, name))
		}
		if isToolshelf(entry) {
			fmt.Fprintf(e.stderr, "toolshelf import: skipped %q: it is toolshelf itself, which would start itself\n", name)
			continue
		}
		conv := make(map[string]any)
		for _, k := range slices.Sorted(maps.Keys(entry)) {
			if !slices.Contains(importKeys, k) {
				fmt.Fprintf(e.stderr, "toolshelf import: %s: dropped %q (not used by toolshelf)\n", name, k)
				continue
			}
			conv[k] = rewriteVars(entry[k], cwd)
		}
		if t, _ := conv["type"].(string); t == "streamable-http" || t == "streamableHttp" {
			conv["type"] = "http"
		}
		if grants := argGrants(e, name, conv); len(grants) > 0 {
			conv["paths"] = map[string]any{"write": grants}
		}
		out[name] = conv
	}
	result := map[string]any{"mcpServers": out}
	b, err := json.MarshalIndent(result, "", "  ")
	if err != nil {
		return err
	}
	// What is written must load; variables are not checked here.
	if _, err := config.ParseConfig(b, "", func(string) string { return "set" }); err != nil {
		return fmt.Errorf("the converted configuration does not load: %v", err)
	}
	fmt.Fprintf(e.stdout, "%s\n", b)
	fmt.Fprintf(e.stderr, "toolshelf import: %d servers from %s\n", len(out), path)
	return nil
}

// importKeys are the server keys a toolshelf configuration takes.
var importKeys = []string{"type", "command", "args", "env", "cwd", "url", "headers", "disabled", "alwaysLoad", "timeout", "autoApprove", "tools"}

// isToolshelf reports whether a client's server entry runs toolshelf (the
// client's entry for the gateway itself): its command, or the first
// argument of a launcher such as npx, is toolshelf.
func isToolshelf(entry map[string]any) bool {
	named := func(v any) bool {
		s, _ := v.(string)
		base := strings.TrimSuffix(filepath.Base(s), ".exe")
		return base == "toolshelf" || strings.HasPrefix(base, "toolshelf@")
	}
	if named(entry["command"]) {
		return true
	}
	args, _ := entry["args"].([]any)
	for _, a := range args {
		if s, _ := a.(string); strings.HasPrefix(s, "-") {
			continue // a launcher's flag, such as npx -y
		}
		return named(a)
	}
	return false
}

// defaultClientPath is where a client keeps its MCP settings. Claude Code
// keeps its user settings in $CLAUDE_CONFIG_DIR when that is set.
func defaultClientPath(e *env, client string) (string, error) {
	home, _ := os.UserHomeDir()
	claudeDir := home
	if d := e.getenv("CLAUDE_CONFIG_DIR"); d != "" {
		claudeDir = d
	}
	cfgDir, _ := os.UserConfigDir()
	var candidates []string
	switch client {
	case "claude-desktop":
		candidates = []string{filepath.Join(cfgDir, "Claude", "claude_desktop_config.json")}
	case "claude-code":
		candidates = []string{".mcp.json", filepath.Join(claudeDir, ".claude.json")}
	case "cursor":
		candidates = []string{filepath.Join(".cursor", "mcp.json"), filepath.Join(home, ".cursor", "mcp.json")}
	case "vscode":
		candidates = []string{filepath.Join(".vscode", "mcp.json"), filepath.Join(cfgDir, "Code", "User", "mcp.json")}
	}
	for _, c := range candidates {
		if _, err := os.Stat(c); err == nil {
			return c, nil
		}
	}
	return "", usagef("no %s settings found (looked in %s); pass --from FILE", client, strings.Join(candidates, ", "))
}

// clientServers extracts the servers by name from a client's settings.
func clientServers(client string, data []byte) (map[string]json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("invalid JSON: %v", err)
	}
	servers := map[string]json.RawMessage{}
	merge := func(raw json.RawMessage) error {
		if len(raw) == 0 {
			return nil
		}
		var m map[string]json.RawMessage
		if err := json.Unmarshal(raw, &m); err != nil {
			return errors.New("the servers are not an object of servers by name")
		}
		maps.Copy(servers, m)
		return nil
	}
	switch client {
	case "vscode":
		raw := top["servers"]
		if mcp, ok := top["mcp"]; ok && raw == nil { // settings.json: {"mcp": {"servers": ...}}
			var inner map[string]json.RawMessage
			_ = json.Unmarshal(mcp, &inner)
			raw = inner["servers"]
		}
		if raw == nil {
			return nil, errors.New(`no "servers" object (a VS Code mcp.json has one)`)
		}
		if err := merge(raw); err != nil {
			return nil, err
		}
	case "claude-code":
		if err := merge(top["mcpServers"]); err != nil {
			return nil, err
		}
		// ~/.claude.json keeps per-project servers under projects[path].
		if cwd, err := os.Getwd(); err == nil && top["projects"] != nil {
			var projects map[string]struct {
				MCPServers json.RawMessage `json:"mcpServers"`
			}
			_ = json.Unmarshal(top["projects"], &projects)
			if err := merge(projects[cwd].MCPServers); err != nil {
				return nil, err
			}
		}
	default:
		if top["mcpServers"] == nil {
			return nil, errors.New(`no "mcpServers" object`)
		}
		if err := merge(top["mcpServers"]); err != nil {
			return nil, err
		}
	}
	return servers, nil
}

var (
	envVar   = regexp.MustCompile(`\$\{env:([A-Za-z_][A-Za-z0-9_]*)\}`)
	inputVar = regexp.MustCompile(`\$\{input:([^}]+)\}`)
	nonIdent = regexp.MustCompile(`[^A-Za-z0-9_]+`)
)

// rewriteVars rewrites the variable forms of VS Code and Cursor into
// toolshelf's ${VAR}, in every string of v.
func rewriteVars(v any, cwd string) any {
	switch x := v.(type) {
	case string:
		x = envVar.ReplaceAllString(x, "$${$1}")
		x = inputVar.ReplaceAllStringFunc(x, func(m string) string {
			id := inputVar.FindStringSubmatch(m)[1]
			return "${" + strings.ToUpper(strings.Trim(nonIdent.ReplaceAllString(id, "_"), "_")) + "}"
		})
		return strings.ReplaceAll(x, "${workspaceFolder}", cwd)
	case []any:
		for i := range x {
			x[i] = rewriteVars(x[i], cwd)
		}
	case map[string]any:
		for k := range x {
			x[k] = rewriteVars(x[k], cwd)
		}
	}
	return v
}

// argGrants are the existing folders a client's stdio server names in its
// arguments (npx -y …/server-filesystem /home/me/projects): the client ran
// it uncontained, with the folder; contained, it gets only what it is
// granted, so import grants each one, and says so on stderr. A folder no
// server is granted (the home, a system folder, a hidden folder of the
// home) is not, and said.
func argGrants(e *env, name string, conv map[string]any) []string {
	if _, ok := conv["command"].(string); !ok {
		return nil
	}
	args, _ := conv["args"].([]any)
	home := e.getenv("HOME")
	pol := hostpath.Policy{Home: home, Own: folders.Kept(e.getenv)}
	var grants []string
	for _, a := range args {
		arg, ok := a.(string)
		if !ok {
			continue
		}
		p := hostpath.Expand(arg, home)
		if !filepath.IsAbs(p) {
			continue
		}
		st, err := os.Stat(p)
		if err != nil || !st.IsDir() {
			continue // not a folder of this machine (a program, a file)
		}
		dir := p
		if why := pol.Risk(hostpath.Resolve(dir, "/"), true); why != "" {
			fmt.Fprintf(e.stderr, "toolshelf import: %s: not granted %s, named in its arguments: it %s; grant a folder of its own in \"paths\"\n", name, dir, why)
			continue
		}
		if !slices.Contains(grants, dir) {
			grants = append(grants, dir)
			fmt.Fprintf(e.stderr, "toolshelf import: %s: granted %s (named in its arguments) for writing, as the client ran it\n", name, dir)
		}
	}
	return grants
}
