package main

import (
	"context"
	"flag"
	"fmt"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/upstream"
)

var catalogCommand = &command{
	name:    "catalog",
	summary: "write the servers' tools as a catalog file",
	usage:   "export [--config FILE] > catalog.json",
	help: `
'catalog export' connects to every configured server and writes their tools
to stdout as a catalog file: each server with its protocol version,
instructions, and its tools exactly as tools/list returned them. 'search
--catalog' and 'serve --catalog' read this format, so a catalog can be
searched or served without starting the servers.

Only live tool lists are written: the disk cache is not used. A server that
fails is left out and makes the exit status 1.

` + configHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		config := fs.String("config", "", "servers configuration `FILE` (mcpServers JSON)")
		return func(ctx context.Context, e *env, args []string) error {
			switch {
			case len(args) == 0:
				return usagef("catalog needs a command: 'toolshelf catalog export [--config FILE] > catalog.json' writes the tools as a catalog file")
			case len(args) != 1 || args[0] != "export":
				return usagef("unknown catalog command %q: want 'toolshelf catalog export' (the only one)", args[0])
			}
			path := configPath(e, *config)
			if path == "" {
				// As the other commands do: the built-in catalog.
				fmt.Fprintf(e.stderr, "toolshelf: no configuration; exporting the built-in catalog (%d tools of %d servers)\n",
					builtin.Catalog().Len(), len(builtin.Catalog().ServerNames()))
				return builtin.Catalog().Encode(e.stdout)
			}
			cfg, err := loadConfig(e, path)
			if err != nil {
				return err
			}
			p, err := connect(ctx, e, cfg.Servers, connectOptions{secrets: cfg.Secrets()})
			if err != nil {
				return err
			}
			defer p.stop()
			cat, failed := liveCatalog(p.Pool)
			if err := cat.Encode(e.stdout); err != nil {
				return err
			}
			if len(failed) > 0 {
				return fmt.Errorf("left out %d servers that failed: %v", len(failed), failed)
			}
			return nil
		}
	},
}

// liveCatalog is the pool's catalog without the servers that are not
// ready, whose tools (if any) came from fallbacks.
func liveCatalog(p *upstream.Pool) (*catalog.Catalog, []string) {
	ready := make(map[string]bool)
	var failed []string
	for _, st := range p.Status() {
		if st.State == upstream.StateReady {
			ready[st.Name] = true
		} else if st.State != upstream.StateDisabled {
			failed = append(failed, st.Name+" ("+st.Error+")")
		}
	}
	c := p.Catalog()
	var entries []catalog.Entry
	for e := range c.All() {
		if ready[e.Server] {
			entries = append(entries, *e)
		}
	}
	var servers []catalog.Server
	for _, s := range c.Servers() {
		if ready[s.Name] {
			servers = append(servers, s)
		}
	}
	return catalog.New(entries, servers), failed
}
