package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/internal/folders"
	"github.com/toolshelf/toolshelf/pin"
	"github.com/toolshelf/toolshelf/rules"
	"github.com/toolshelf/toolshelf/signin"
	"github.com/toolshelf/toolshelf/store"
	"github.com/toolshelf/toolshelf/telemetry"
	"github.com/toolshelf/toolshelf/upstream"
)

// The configuration file is found in this order: --config, the
// TOOLSHELF_CONFIG variable, then toolshelf/servers.json in the user's
// configuration folder. Without one, commands use the built-in catalog.
const envConfig = "TOOLSHELF_CONFIG"

const configHelp = `Servers come from --config FILE, else the file named by $TOOLSHELF_CONFIG,
else toolshelf/servers.json in the user's configuration folder (see
'toolshelf import' to make one from a client's settings). With none of
these, the built-in catalog is used: the tools of twenty real npm MCP
servers.`

// configPath resolves the configuration file; "" means none.
func configPath(e *env, flagValue string) string {
	if flagValue != "" {
		return flagValue
	}
	if p := e.getenv(envConfig); p != "" {
		return p
	}
	if p := defaultConfigPath(e); p != "" {
		if _, err := os.Stat(p); err == nil {
			return p
		}
	}
	return ""
}

// defaultConfigPath is servers.json in toolshelf's configuration folder,
// "" when the environment places none.
func defaultConfigPath(e *env) string {
	if dir := folders.Config(e.getenv); dir != "" {
		return filepath.Join(dir, "servers.json")
	}
	return ""
}

// optionalConfig reads the configuration that --config (flag) or the
// defaults name, if any: nil and "" when there is none.
func optionalConfig(e *env, flag string) (*config.Config, string, error) {
	path := configPath(e, flag)
	if path == "" {
		return nil, "", nil
	}
	cfg, err := loadConfig(e, path)
	return cfg, path, err
}

// loadConfig reads a whole configuration file; its problems are usage
// errors.
func loadConfig(e *env, path string) (*config.Config, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, usagef("config: %v", err)
	}
	return parseConfig(e, path, data)
}

// parseConfig parses a configuration file's data, as loadConfig.
func parseConfig(e *env, path string, data []byte) (*config.Config, error) {
	cfg, err := config.Parse(data, path, e.getenv)
	if err != nil {
		var ce *catalog.FileError
		if errors.As(err, &ce) {
			return nil, badInput(err)
		}
		return nil, usagef("config: %v", err)
	}
	return cfg, nil
}

// openPins opens the lock file beside a configuration file
// (toolshelf.lock): the tool definitions the user trusts.
func openPins(path string, cfg *config.Config, db *store.DB) (*pin.Lock, error) {
	if db != nil {
		return pin.OpenShared(db, cfg.Trust)
	}
	l, err := pin.Open(pin.Beside(path), cfg.Trust)
	if err != nil {
		return nil, badInput(err)
	}
	return l, nil
}

// storeFlag registers --store, which every command that reads or changes
// shared state (pins, sign-ins, learning, audit) takes.
func storeFlag(fs *flag.FlagSet) *string {
	return fs.String("store", "", "the PostgreSQL store replicas share, at `URL` (postgres://...; default $"+envStore+" or the configuration's \"store\")")
}

// openStore opens the shared store a command is pointed at: url (--store),
// else $TOOLSHELF_STORE, else the configuration's "store"; nil when none.
func openStore(e *env, url string, cfg *config.Config) (*store.DB, error) {
	if url == "" {
		url = e.getenv(envStore)
	}
	if url == "" && cfg != nil {
		url = cfg.Store
	}
	if url == "" {
		return nil, nil
	}
	if !store.IsStoreURL(url) {
		return nil, usagef("--store %s: want a postgres:// URL", store.Redact(url))
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return store.Open(ctx, url)
}

// openStoreOf is openStore for a command that needs no configuration of
// its own: the configuration (--config, $TOOLSHELF_CONFIG or the default
// file) is read only for its "store", when neither --store nor
// $TOOLSHELF_STORE names one.
func openStoreOf(e *env, url, configFlag string) (*store.DB, error) {
	var cfg *config.Config
	if url == "" && e.getenv(envStore) == "" {
		if path := configPath(e, configFlag); path != "" {
			var err error
			if cfg, err = loadConfig(e, path); err != nil {
				return nil, err
			}
		}
	}
	return openStore(e, url, cfg)
}

// connectOptions shape how a command connects to servers.
type connectOptions struct {
	useCache bool // seed from and write to the disk cache
	// only, when set, is the one server started: the others are
	// disabled (doctor NAME), their secrets still kept from it.
	only   string
	logger *slog.Logger
	pins   *pin.Lock // hold back tools whose definitions are not pinned
	// secrets are toolshelf's own (the profiles' tokens, serve's
	// --auth-token), kept from the servers.
	secrets config.Secrets
	// telemetry traces the requests sent to servers (serve); nil
	// records nothing.
	telemetry *telemetry.Telemetry
	// tokens keeps the sign-ins (openTokens); nil is the token file.
	tokens *signin.Store
	// storeURL is the command's --store; the shared store's pins replace
	// the lock file.
	storeURL string
	// policies are the configuration's rules; hide are toolshelf's own
	// files (the configuration, its lock file, the rules), which no
	// contained server sees.
	policies *rules.Live
	hide     []string
	// identity is the configuration's identity provider, and flows the
	// people's sign-ins through the gateway: for servers marked
	// "signin": "per-person" or "exchange".
	identity *identity.Verifier
	flows    *signin.Flows
}

// newPool makes a pool of the configured servers; nothing starts yet.
func newPool(e *env, cfgs []config.ServerConfig, o connectOptions) *upstream.Pool {
	tokens := o.tokens
	if tokens == nil {
		tokens = signin.Open(tokenFile(e))
	}
	opts := &upstream.Options{Logger: o.logger, Tokens: tokens, Pins: o.pins, Secrets: o.secrets, Version: version(), Telemetry: o.telemetry,
		Policies: o.policies, Hide: slices.Concat(o.hide, e.held.list()), Identity: o.identity, Flows: o.flows, Getenv: e.getenv}
	if o.useCache {
		opts.CacheDir = upstream.DefaultCacheDir(e.getenv)
	}
	return upstream.NewPool(cfgs, opts)
}

// toolSource is where a command's tools come from: a catalog file, the
// configured servers, or the built-in catalog; the one place that
// chooses, for serve and every other command.
type toolSource struct {
	pool    *upstream.Pool // upstream.Fixed for a catalog file or the built-in catalog
	name    string         // for messages: a file name, or "the built-in catalog"
	config  *config.Config
	pins    *pin.Lock
	builtin bool
	// db is the shared store the pins are in, or nil (the lock file).
	db *store.DB
	// tokens keeps the sign-ins to remote servers.
	tokens *signin.Store
	// policies are the configuration's rules on calls, or nil.
	policies *rules.Live
	// identity and flows are the configuration's identity provider and
	// the people's sign-ins (connectOptions), or nil.
	identity *identity.Verifier
	flows    *signin.Flows
}

// openSource chooses the tools a command works on: a catalog file if one
// is named, else the configuration's servers (not started: the pool has
// not run), else the built-in catalog. o.secrets gets the configuration's.
func openSource(e *env, catalogFile, configFlag string, o connectOptions) (*toolSource, error) {
	path := configPath(e, configFlag)
	if catalogFile != "" || path == "" {
		src := &toolSource{pool: upstream.Fixed(builtin.Catalog(), "the built-in catalog"), name: "the built-in catalog", builtin: true}
		if catalogFile != "" {
			c, err := loadCatalogFile(catalogFile)
			if err != nil {
				return nil, err
			}
			src = &toolSource{pool: upstream.Fixed(c, "the catalog file "+catalogFile), name: catalogFile}
		}
		// No pins or sign-ins without servers, but a store named is
		// used (serve's learning, audit and fleet), not ignored.
		if o.storeURL != "" {
			db, err := openStore(e, o.storeURL, nil)
			if err != nil {
				return nil, err
			}
			src.db = db
		}
		return src, nil
	}
	cfg, err := loadConfig(e, path)
	if err != nil {
		return nil, err
	}
	db, err := openStore(e, o.storeURL, cfg)
	if err != nil {
		return nil, err
	}
	pins, err := openPins(path, cfg, db)
	if err != nil {
		return nil, err
	}
	o.pins = pins
	if o.tokens, err = openTokens(e, db); err != nil {
		return nil, err
	}
	own := cfg.Secrets()
	o.secrets.Values = append(o.secrets.Values, own.Values...)
	o.secrets.Vars = append(o.secrets.Vars, own.Vars...)
	o.secrets.Files = append(o.secrets.Files, own.Files...)
	o.hide = append(o.hide, path, pin.Beside(path))
	if len(cfg.Policies) > 0 {
		if o.policies, err = rules.Open(cfg.Policies...); err != nil {
			return nil, badInput(err)
		}
		o.hide = append(o.hide, cfg.Policies...)
	}
	if cfg.Identity != nil {
		if o.identity, err = identity.New(cfg.Identity.Config, nil); err != nil {
			return nil, badInput(err)
		}
		o.flows = signin.NewFlows(o.tokens, nil)
	}
	servers := cfg.Servers
	if o.only != "" {
		servers = slices.Clone(servers)
		for i := range servers {
			servers[i].Disabled = servers[i].Disabled || servers[i].Name != o.only
		}
	}
	return &toolSource{pool: newPool(e, servers, o), name: path, config: cfg, pins: pins, db: db, tokens: o.tokens, policies: o.policies,
		identity: o.identity, flows: o.flows}, nil
}

// runningPool is a pool that a command runs in the background.
type runningPool struct {
	*upstream.Pool
	cancel context.CancelFunc
	done   chan struct{}
}

// stop ends the pool's Run and returns once every server it started has
// exited.
func (p *runningPool) stop() {
	p.cancel()
	<-p.done
}

// connect runs a pool of the configured servers and waits until every
// server has connected or failed once, showing progress on stderr when it
// is a terminal. The caller stops the pool.
func connect(ctx context.Context, e *env, cfgs []config.ServerConfig, o connectOptions) (*runningPool, error) {
	return start(ctx, e, newPool(e, cfgs, o))
}

// start runs a pool and waits until every server has connected or failed
// once, showing progress on stderr when it is a terminal. The caller
// stops the pool.
func start(ctx context.Context, e *env, pool *upstream.Pool) (*runningPool, error) {
	return startUntil(ctx, e, pool, nil)
}

// startUntil is start that also returns once enough says the servers'
// states are enough to go on with (nil: wait for every first attempt).
func startUntil(ctx context.Context, e *env, pool *upstream.Pool, enough func([]upstream.Status) bool) (*runningPool, error) {
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	p := &runningPool{Pool: pool, cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(p.done)
		p.Run(rctx)
	}()
	done := make(chan error, 1)
	go func() { done <- p.Wait(ctx) }()
	progress := isTerminal(e.stderr)
	tick := time.NewTicker(150 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case err := <-done:
			if progress {
				fmt.Fprint(e.stderr, "\r\033[K")
			}
			if err != nil {
				p.stop()
				return nil, err
			}
			return p, nil
		case <-tick.C:
			sts := p.Status()
			if enough != nil && enough(sts) {
				if progress {
					fmt.Fprint(e.stderr, "\r\033[K")
				}
				return p, nil
			}
			if progress {
				fmt.Fprintf(e.stderr, "\r\033[K%s", progressLine(sts))
			}
		}
	}
}

// cachedEnough is enough for a search: every server has answered once,
// or has its tools from the cache of an earlier run.
func cachedEnough(sts []upstream.Status) bool {
	for _, s := range sts {
		if (s.State == upstream.StateConnecting || s.State == upstream.StateRestarting) && !(s.Source == upstream.SourceCache && s.Tools > 0) {
			return false
		}
	}
	return true
}

// progressLine says how many servers are up and which are still coming.
func progressLine(sts []upstream.Status) string {
	ready, failed := 0, 0
	var waiting []string
	for _, s := range sts {
		switch s.State {
		case upstream.StateReady:
			ready++
		case upstream.StateFailed:
			failed++
		case upstream.StateConnecting, upstream.StateRestarting:
			waiting = append(waiting, s.Name)
		}
	}
	line := fmt.Sprintf("connecting: %d/%d ready", ready, len(sts))
	if failed > 0 {
		line += fmt.Sprintf(", %d failed", failed)
	}
	if len(waiting) > 0 {
		if len(waiting) > 4 {
			waiting = append(waiting[:4], "…")
		}
		line += "; waiting for " + strings.Join(waiting, ", ")
	}
	return line
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// catalogSource is where a command's tools come from.
type catalogSource struct {
	cat     *catalog.Catalog
	scope   *upstream.Scope // the pool (fixed, or running) as the profile sees it
	up      *upstream.Pool  // that pool, for another profile's scope (narrow)
	pool    *runningPool    // nil unless servers were started
	status  []upstream.Status
	name    string          // for messages: a file name, or "the built-in catalog"
	config  *config.Config  // nil without a configuration file
	profile *config.Profile // set by narrow
	pins    *pin.Lock       // nil without a configuration file
	// policies are the rules the pool judges calls by (nil without any):
	// what policy check reports on is what the pool read.
	policies *rules.Live
}

// unreviewed warns of the tools trusted on first use after their
// server's tools were pinned: no person has looked at them, and a
// renamed tool with a new description is how a rug pull gets past pins.
func (s *catalogSource) unreviewed() []catalog.Finding {
	var out []catalog.Finding
	if s.pins == nil || s.config == nil {
		return out
	}
	for _, sc := range s.config.Servers {
		if s.profile != nil && !s.profile.HasServer(sc.Name) {
			continue
		}
		for _, tool := range s.pins.Later(sc.Name) {
			out = append(out, catalog.Finding{Kind: catalog.FindingUnreviewed, Tool: tool, Server: sc.Name,
				Message: fmt.Sprintf("%s of %s appeared after the server's tools were pinned and was trusted on first use without review (a renamed tool can be a rug pull): toolshelf tools diff %s", tool, sc.Name, sc.Name)})
		}
	}
	return out
}

// narrow makes the source what a client of a profile sees.
func (s *catalogSource) narrow(profile string) error {
	if s.config == nil {
		return usagef("--profile needs a configuration with \"profiles\"")
	}
	p, ok := s.config.Profile(profile)
	if !ok {
		return usagef("--profile %q: %s has no such profile%s", profile, s.name, profileList(s.config))
	}
	s.scope = s.up.Scope(p)
	s.cat, s.status, s.profile = s.scope.Catalog(), s.scope.Status(), p
	return nil
}

// quarantined returns the tools the lock file keeps out, of the source's
// servers (of its profile's, with a profile).
func (s *catalogSource) quarantined() []upstream.Quarantined {
	if h := s.scope.Quarantined(); h != nil {
		return h
	}
	return []upstream.Quarantined{}
}

func (s *catalogSource) close() {
	if s.pool != nil {
		s.pool.stop()
	}
}

// openCatalog finds the tools a command works on: a catalog file if one
// is named, else the configured servers (connected now), else the
// built-in catalog, which is announced on stderr.
func openCatalog(ctx context.Context, e *env, catalogFile, configFlag, storeURL string) (*catalogSource, error) {
	return openCatalogUntil(ctx, e, catalogFile, configFlag, storeURL, nil)
}

// openCatalogUntil is openCatalog that goes on once enough says so (see
// startUntil).
func openCatalogUntil(ctx context.Context, e *env, catalogFile, configFlag, storeURL string, enough func([]upstream.Status) bool) (*catalogSource, error) {
	src, err := openSource(e, catalogFile, configFlag, connectOptions{useCache: true, storeURL: storeURL})
	if err != nil {
		return nil, err
	}
	if src.builtin {
		fmt.Fprintf(e.stderr, "toolshelf: no configuration; using the built-in catalog (%d tools of %d servers)\n",
			builtin.Catalog().Len(), len(builtin.Catalog().ServerNames()))
	}
	if src.config == nil {
		scope := src.pool.Scope(nil)
		return &catalogSource{cat: scope.Catalog(), scope: scope, up: src.pool, name: src.name}, nil
	}
	p, err := startUntil(ctx, e, src.pool, enough)
	if err != nil {
		return nil, err
	}
	scope := p.Scope(nil)
	return &catalogSource{cat: scope.Catalog(), scope: scope, up: src.pool, pool: p, status: scope.Status(), name: src.name, config: src.config, pins: src.pins, policies: src.policies}, nil
}
