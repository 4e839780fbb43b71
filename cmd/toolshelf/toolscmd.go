package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/fuzzy"
	"github.com/toolshelf/toolshelf/pin"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/upstream"
)

var toolsCommand = &command{
	name:    "tools",
	summary: "review tools whose definitions changed, and approve or deny them",
	usage:   "diff [SERVER] | approve SERVER[/TOOL] | deny SERVER[/TOOL] | export-lock | import-lock  [--config FILE] [--store URL]",
	help: `
Every tool's definition (name, title, description, input and output schema,
annotations, and the _meta keys toolshelf or clients act on, such as
anthropic/alwaysLoad) is pinned in toolshelf.lock, beside the configuration file, by
a SHA-256 of its canonical JSON; the file holds the definitions too, so that
a change reads well in a pull request. A tool whose definition changed since
it was pinned (a "rug pull"), a new or changed tool that the tool-poisoning
check flags as high risk, a new tool when the configuration (or the
server's own entry, as toolshelf add writes it) says
"trust": "approve" (or, under "server-first-use", a tool a server adds after
its first pin), and a denied tool are quarantined: not listed, not
searchable, and a call to one is refused with a message that names the
change. The server's other tools keep working.

  diff [SERVER]         what is quarantined and why, and the tools trusted
                        on first use after their server's first pin that
                        no one has approved; for a changed tool, field by
                        field: texts as a word diff ([-removed-]
                        {+added+}), schemas as the JSON paths that changed;
                        and what doctor --findability finds of each (what
                        a search will miss of it among the served tools)
  approve SERVER        pin the current definitions of the server's
                        quarantined and unreviewed tools, letting them in
  approve SERVER/TOOL   the same for one tool (also lifts a denial)
  deny SERVER[/TOOL]    keep the server's quarantined tools (or one tool,
                        quarantined or not) out until approved

  export-lock           copy the pins of the shared store ($TOOLSHELF_STORE
                        or the configuration's "store") into toolshelf.lock
  import-lock           copy toolshelf.lock's pins into the shared store

The commands connect to the servers to read their current definitions. A
running 'toolshelf serve' reads toolshelf.lock (or the shared store) again
within seconds of a change. With a shared store, diff, approve and deny act
on its pins instead of the file's.

` + configHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		config := fs.String("config", "", "servers configuration `FILE` (mcpServers JSON)")
		storeURL := storeFlag(fs)
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) == 0 {
				return usagef("tools needs diff, approve or deny")
			}
			verb, rest := args[0], args[1:]
			switch {
			case (verb == "export-lock" || verb == "import-lock") && len(rest) == 0:
				return moveLock(e, *config, *storeURL, verb == "import-lock")
			case verb == "diff" && len(rest) <= 1:
			case (verb == "approve" || verb == "deny") && len(rest) == 1:
			case verb == "approve" || verb == "deny":
				return usagef("tools %s needs SERVER or SERVER/TOOL", verb)
			case verb == "diff":
				return usagef("tools diff takes at most one SERVER")
			default:
				return usagef("unknown tools command %q%s", verb, didYouMeanWord(verb, []string{"diff", "approve", "deny", "export-lock", "import-lock"}))
			}
			var server, tool string
			if len(rest) == 1 {
				server, tool, _ = strings.Cut(rest[0], "/")
			}
			return runTools(ctx, e, *config, *storeURL, verb, server, tool)
		}
	},
}

// moveLock copies pins between the configuration's lock file and the
// shared store: into the store (import) or out of it (export).
func moveLock(e *env, configFlag, storeURL string, toStore bool) error {
	path := configPath(e, configFlag)
	if path == "" {
		return usagef("tools export-lock and import-lock need a configuration (--config FILE or $%s): the lock file is beside it", envConfig)
	}
	cfg, err := loadConfig(e, path)
	if err != nil {
		return err
	}
	db, err := openStore(e, storeURL, cfg)
	if err != nil {
		return err
	}
	if db == nil {
		return usagef("no shared store: give --store, set $%s or the configuration's \"store\"", envStore)
	}
	defer db.Close()
	file, err := openPins(path, cfg, nil)
	if err != nil {
		return err
	}
	shared, err := openPins(path, cfg, db)
	if err != nil {
		return err
	}
	dst, src := file, shared
	if toStore {
		dst, src = shared, file
	}
	n, err := pin.Copy(dst, src)
	if err != nil {
		return err
	}
	fmt.Fprintf(e.stdout, "copied %d pins from %s to %s\n", n, src.Path(), dst.Path())
	return nil
}

// didYouMeanWord suggests the closest of some words.
func didYouMeanWord(w string, words []string) string {
	if c := fuzzy.Closest(w, words, 1, 3); len(c) > 0 {
		return fmt.Sprintf(" (did you mean %q?)", c[0])
	}
	return ""
}

func runTools(ctx context.Context, e *env, configFlag, storeURL, verb, server, tool string) error {
	path := configPath(e, configFlag)
	if path == "" {
		return usagef("tools needs a configuration: pinned definitions live in %s beside it; give one with --config FILE or $%s, or make one with 'toolshelf import'", pin.FileName, envConfig)
	}
	cfg, err := loadConfig(e, path)
	if err != nil {
		return err
	}
	cfgs := cfg.Servers
	if server != "" {
		var names []string
		for _, c := range cfg.Servers {
			names = append(names, c.Name)
		}
		i := slices.IndexFunc(cfg.Servers, func(c config.ServerConfig) bool { return c.Name == server })
		if i < 0 {
			return usagef("%s has no server %q%s", path, server, didYouMeanWord(server, names))
		}
		cfgs = cfg.Servers[i : i+1]
	}
	db, err := openStore(e, storeURL, cfg)
	if err != nil {
		return err
	}
	if db != nil {
		defer db.Close()
	}
	pins, err := openPins(path, cfg, db)
	if err != nil {
		return err
	}
	p, err := connect(ctx, e, cfgs, connectOptions{pins: pins, secrets: cfg.Secrets()})
	if err != nil {
		return err
	}
	defer p.stop()
	for _, st := range p.Status() {
		if st.State != upstream.StateReady && st.State != upstream.StateDisabled {
			fmt.Fprintf(e.stderr, "toolshelf tools: server %s is %s: its current tools are not known (%s)\n", st.Name, st.State, st.Error)
		}
	}
	held := p.Quarantined()
	if tool != "" {
		held = slices.DeleteFunc(held, func(h upstream.Quarantined) bool { return h.Tool != tool })
	}
	// Tools trusted on first use after their server's first pin: shown
	// as new until a person approves them.
	var later []upstream.Quarantined
	for _, sc := range cfgs {
		for _, name := range pins.Later(sc.Name) {
			if tool != "" && name != tool {
				continue
			}
			if en, ok := findTool(p, sc.Name, name); ok {
				if def, err := pin.Canonical(en.Raw); err == nil {
					later = append(later, upstream.Quarantined{Server: sc.Name, Tool: name, Status: pin.New, Current: def,
						Why: "appeared after the server's tools were pinned; trusted on first use, not reviewed"})
				}
			}
		}
	}
	switch verb {
	case "diff":
		if len(held) == 0 && len(later) == 0 {
			fmt.Fprintf(e.stdout, "no tool is quarantined (%s)\n", pins.Path())
			return nil
		}
		hard := heldFindability(p.Catalog(), slices.Concat(held, later))
		for _, h := range slices.Concat(held, later) {
			fmt.Fprintf(e.stdout, "%s/%s: %s: %s\n", h.Server, h.Tool, h.Status, h.Why)
			for _, line := range pin.Diff(h.Pinned, h.Current) {
				fmt.Fprintf(e.stdout, "    %s\n", line)
			}
			for _, f := range hard[h.Server+"\x00"+h.Tool] {
				fmt.Fprintf(e.stdout, "    findability: %s: %s (%s)\n", f.Problem, f.Detail, f.Suggestion)
			}
		}
		fmt.Fprintf(e.stdout, "%d quarantined, %d new and not reviewed; approve with: toolshelf tools approve SERVER[/TOOL]\n", len(held), len(later))
		return nil
	case "approve":
		held = append(held, later...) // approving marks them reviewed
		if len(held) == 0 {
			if tool != "" {
				if _, ok := findTool(p, server, tool); ok {
					fmt.Fprintf(e.stdout, "%s/%s is not quarantined\n", server, tool)
					return nil
				}
				return usagef("server %s has no tool %q", server, tool)
			}
			fmt.Fprintf(e.stdout, "no tool of %s is quarantined\n", server)
			return nil
		}
		for _, h := range held {
			pins.Approve(h.Server, h.Tool, h.Current)
		}
	case "deny":
		if len(held) == 0 && tool != "" {
			// A tool that works today can be denied too.
			en, ok := findTool(p, server, tool)
			if !ok {
				return usagef("server %s has no tool %q", server, tool)
			}
			def, err := pin.Canonical(en.Raw)
			if err != nil {
				return err
			}
			held = []upstream.Quarantined{{Server: server, Tool: tool, Current: def}}
		}
		if len(held) == 0 {
			fmt.Fprintf(e.stdout, "no tool of %s is quarantined; name one to deny it: toolshelf tools deny %s/TOOL\n", server, server)
			return nil
		}
		for _, h := range held {
			pins.Deny(h.Server, h.Tool, h.Current)
		}
	}
	if err := pins.Save(); err != nil {
		return err
	}
	var names []string
	for _, h := range held {
		names = append(names, h.Server+"/"+h.Tool)
	}
	past := map[string]string{"approve": "approved", "deny": "denied"}[verb]
	fmt.Fprintf(e.stdout, "%s %d in %s: %s\n", past, len(held), pins.Path(), strings.Join(names, ", "))
	for _, n := range runningServes(e, path) {
		// The pool reads the pins again every pinReload (upstream).
		fmt.Fprintf(e.stdout, "the gateway running as pid %d reads the pins again within seconds: the tools %s are %s then\n",
			n.PID, past, map[string]string{"approve": "served", "deny": "kept out"}[verb])
	}
	return nil
}

// findTool finds a server's tool in the pool's catalog.
func findTool(p *runningPool, server, tool string) (*catalog.Entry, bool) {
	for e := range p.Catalog().All() {
		if e.Server == server && e.Tool == tool {
			return e, true
		}
	}
	return nil, false
}

// heldFindability is doctor --findability's check of the tools a person
// is asked to approve, among the tools already served (what a search must
// tell them from): its findings by server and tool.
func heldFindability(served *catalog.Catalog, held []upstream.Quarantined) map[string][]search.Hard {
	var entries []catalog.Entry
	byName := map[string]string{}
	for _, h := range held {
		e, err := catalog.ParseTool(h.Server, json.RawMessage(h.Current))
		if err != nil || strings.HasPrefix(h.Tool, "skill://") || strings.HasPrefix(h.Tool, "ui://") {
			continue // a skill's or an app's: no words of a tool's
		}
		entries = append(entries, e)
	}
	if len(entries) == 0 {
		return nil
	}
	cat := catalog.New(entries, nil)
	for e := range cat.All() {
		byName[e.Name] = e.Server + "\x00" + e.Tool
	}
	if served != nil {
		cat = catalog.Join(served, cat)
	}
	out := map[string][]search.Hard{}
	for _, f := range search.Findability(cat) {
		if key, ok := byName[f.Tool]; ok {
			out[key] = append(out[key], f)
		}
	}
	return out
}
