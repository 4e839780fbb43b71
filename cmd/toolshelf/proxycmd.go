package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/identity"
	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/learn"

	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/proxy"
	"github.com/toolshelf/toolshelf/telemetry"
)

const envProxyToken = "TOOLSHELF_PROXY_TOKEN"

var proxyCommand = &command{
	name:    "proxy",
	summary: "tool search for any client: a proxy in front of the model API",
	usage:   "[--listen ADDR] [--upstream URL] [--mode search|all|auto[:N]] [--native auto|always|never] [--tool-additions auto|always|never] [--max-rounds N] [--max-tools N] [--token TOKEN] [--config FILE --api-key-file FILE] [flags]",
	help: `
Serves the Anthropic Messages API (POST /v1/messages and
/v1/messages/count_tokens) and passes every other request to --upstream
unchanged. Point a client's base URL at it:

    toolshelf proxy &
    ANTHROPIC_BASE_URL=http://127.0.0.1:8787 claude

Each request's tools go through the deferral decision of 'toolshelf serve'
(--mode, default auto: defer when the deferrable tools cost over 10% of the
model's context window). A request below it, or whose client defers tools
itself (Claude Code's ToolSearch, server-side tool search, defer_loading),
passes untouched. Above it, the MCP tools (mcp__server__tool) leave the
request for one search tool, and the system prompt names them and their
servers. When the model calls the search tool, the proxy answers it, adds
the tools found to the request and asks again, at most --max-rounds times;
the client gets one answer, as if the model had called its own tool at
once, with the usage of every round added up. A streaming client gets the
last round as it streams (one content block held back at a time, to see
whether the model searches). Tools the model called earlier in the
conversation stay loaded. POST /v1/chat/completions does the same for
OpenAI-style clients (--upstream their base URL, without /v1).

In front of Anthropic's own API (--native auto, the default), for models
that take it, the proxy uses the API's tool search instead of answering
searches itself: the deferred tools go with defer_loading, the API's
tool_search_tool_bm25 is added with its beta, and the answer streams
straight through. Gateways and bridges often lack it; there the proxy
searches.

Where the proxy searches, for models that take tools added in the middle
of a conversation (--tool-additions auto, the default: Claude Opus 4.8),
a found tool is not added to the request's tools: it comes as a system
message of tool_addition blocks after the search's results (beta
inline-tools-2026-09-15), so the request's tools, its system prompt and
every earlier message stay byte for byte the same in every round and
turn, and the prompt cache holds. A tool called in an earlier turn is
added again before the message that called it. OpenAI's chat completions
have no such thing: there the found tools join the tools.

API keys go from the client to the upstream as they came; the proxy keeps
and logs none. It logs one line per request: tools in, tools deferred,
rounds, tokens saved (a passed request with the upstream's status, and its
error when the upstream failed). GET /healthz is the proxy's own health.
Beyond loopback it needs --token (or $TOOLSHELF_PROXY_TOKEN, or
$TOOLSHELF_PROXY_TOKEN_FILE naming a file that holds it: a flag is
readable by every local user, and is warned about), which clients send in
X-Toolshelf-Token.

Every model request is counted in the ledger ('toolshelf help usage'):
its tokens by kind and their cost, under the caller, with the proxy's own
search rounds marked; an answer whose usage cannot be read is counted at
the most it could have cost. With --config, the proxy knows who calls:
the configuration's "profiles" tokens and its "identity" people's access
tokens are what clients send as their API key (x-api-key, or
Authorization: Bearer), and a person counts under the first profile whose
claims they carry. The proxy then sends its own key upstream
(--api-key-file, or $TOOLSHELF_UPSTREAM_API_KEY; a profile's
"upstreamKey" for its callers), never the caller's token. The configuration's "budgets" refuse a request past one before it
is sent: 429 in the API's own error shape, naming the budget, what was
spent and when it frees, with retry-after; past 80% of a budget answers
carry a Toolshelf-Budget-Warning header. Its "store" keeps the ledger in
PostgreSQL, where budgets hold across replicas.

With OTEL_EXPORTER_OTLP_ENDPOINT set (see 'toolshelf help serve'), each
request is a trace: the request's span (its parent the client's
traceparent header), one "chat MODEL" span per round with its token
counts (the hidden search rounds marked), whose context goes upstream in
a traceparent header, and one span per search the proxy answered.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		listen := fs.String("listen", "127.0.0.1:8787", "listen on `ADDR`")
		upstream := fs.String("upstream", "https://api.anthropic.com", "the model API's base `URL`")
		mode := fs.String("mode", "auto", "when to defer (`MODE`): search (always), all (never), auto or auto:N")
		window := fs.Int("context-window", 0, "context window in `TOKENS` for --mode auto (default: the model's)")
		rounds := fs.Int("max-rounds", proxy.DefaultMaxRounds, "search rounds answered per request (`N`)")
		maxTools := fs.Int("max-tools", proxy.DefaultMaxTools, "refuse requests with more than `N` tools (413)")
		native := fs.String("native", proxy.NativeAuto, "use the API's own tool search (`WHEN`): auto (in front of api.anthropic.com, for models that take it), always or never")
		additions := fs.String("tool-additions", proxy.ToolAdditionsAuto, "add found tools mid-conversation, keeping the cached prefix (`WHEN`): auto (for models that take it), always or never")
		token := fs.String("token", "", "require this `TOKEN` in X-Toolshelf-Token (default $"+envProxyToken+")")
		configFlag := fs.String("config", "", "configuration `FILE` whose \"identity\", \"profiles\", \"budgets\", \"prices\" and \"store\" the proxy reads")
		apiKeyFile := fs.String("api-key-file", "", "with --config: the `FILE` holding the upstream's API key (default $"+envUpstreamKey+")")
		var engine engineFlags
		engine.register(fs)
		logLevel := fs.String("log-level", "info", "log `LEVEL`: debug, info, warn, error")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments: %v", args)
			}
			settings, err := policy.ParseMode(*mode)
			if err != nil {
				return usagef("--mode %v", err)
			}
			if err := checkPositive(fs, "max-rounds", *rounds); err != nil {
				return err
			}
			if err := checkPositive(fs, "max-tools", *maxTools); err != nil {
				return err
			}
			if *window < 0 {
				return usagef("--context-window must be positive")
			}
			if err := engine.check(e); err != nil {
				return err
			}
			var level slog.Level
			if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
				return usagef("--log-level %q: want debug, info, warn or error", *logLevel)
			}
			onCommandLine := *token != ""
			if *token == "" {
				*token = e.getenv(envProxyToken)
			}
			if err := checkListenAddr("--listen", *listen, *token, "$"+envProxyToken+"_FILE"); err != nil {
				return err
			}
			logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
			if onCommandLine {
				logger.Warn("a secret was given on the command line, which every local user can read (ps, /proc/PID/cmdline); give it in a file: $"+envProxyToken+"_FILE", "flags", "--token")
			}
			tel, err := telemetry.New(ctx, &telemetry.Options{Getenv: e.getenv, Version: version(), Logger: logger.With("component", "telemetry")})
			if err != nil {
				return badInput(err)
			}
			defer shutdownTelemetry(tel, logger)
			opts := &proxy.Options{
				Upstream: *upstream, Logger: logger, Settings: settings, ContextWindow: *window,
				MaxRounds: *rounds, MaxTools: *maxTools, Engine: engine.kind, Token: *token, Native: *native, ToolAdditions: *additions, Telemetry: tel,
			}
			closeLedger, err := proxyCallers(e, *configFlag, *apiKeyFile, opts, logger)
			if err != nil {
				return err
			}
			defer closeLedger()
			p, err := proxy.New(opts)
			if err != nil {
				return usagef("%v", err)
			}
			return serveProxy(ctx, p, *listen, logger)
		}
	},
}

// envUpstreamKey holds the upstream's API key for a proxy whose callers
// send tokens of their own.
const envUpstreamKey = "TOOLSHELF_UPSTREAM_API_KEY"

// proxyCallers sets up the proxy's ledger and, with a configuration, who
// may call it (its profiles' tokens and its people) and the upstream key
// it sends instead of theirs.
func proxyCallers(e *env, configFlag, keyFile string, opts *proxy.Options, logger *slog.Logger) (closeLedger func(), err error) {
	var cfg *config.Config
	if configFlag != "" {
		if cfg, err = loadConfig(e, configFlag); err != nil {
			return nil, err
		}
	}
	db, err := openStore(e, "", cfg)
	if err != nil {
		return nil, err
	}
	var j *journal.Journal
	if db != nil {
		// What the store is to keep waits here while it is away: the
		// proxy's own journal, beside serve's.
		dir := filepath.Join(filepath.Dir(learn.DefaultPath(e.getenv)), "proxy-journal")
		if j, err = journal.Open(dir, logger.With("component", "journal")); err != nil {
			db.Close()
			return nil, fmt.Errorf("the proxy's journal: %w", err)
		}
	}
	l, err := ledgerFor(e, db, j, cfg, logger)
	if err != nil {
		return nil, err
	}
	opts.Ledger = l
	closeLedger = func() {
		if l != nil {
			l.Close()
		}
		if j != nil {
			j.Close()
		}
		if db != nil {
			db.Close()
		}
	}
	if cfg == nil || (cfg.Identity == nil && !slices.ContainsFunc(cfg.Profiles, func(p config.Profile) bool { return len(p.Tokens) > 0 })) {
		return closeLedger, nil
	}
	c := &proxy.Callers{}
	if cfg.Identity != nil {
		if c.People, err = identity.New(cfg.Identity.Config, nil); err != nil {
			closeLedger()
			return nil, fmt.Errorf("identity: %w", err)
		}
	}
	for _, p := range cfg.Profiles {
		c.Profiles = append(c.Profiles, proxy.CallerProfile{Name: p.Name, Tokens: p.Tokens, Claims: p.Claims, APIKey: p.UpstreamKey})
	}
	if cfg.Identity != nil {
		// The default profile last: a person counts under the narrowest
		// profile they open.
		c.Profiles = append(c.Profiles, proxy.CallerProfile{Name: config.DefaultProfile, Claims: cfg.Identity.Claims})
	}
	opts.Callers = c
	opts.APIKey = e.getenv(envUpstreamKey)
	if keyFile != "" {
		b, err := os.ReadFile(keyFile)
		if err != nil {
			closeLedger()
			return nil, usagef("--api-key-file: %v", err)
		}
		opts.APIKey = strings.TrimSpace(string(b))
	}
	if opts.APIKey == "" && !allKeyed(c.Profiles) {
		closeLedger()
		return nil, usagef("--config %s lets callers in with tokens of their own: the proxy needs its own API key for the upstream (--api-key-file, or $%s)", configFlag, envUpstreamKey)
	}
	return closeLedger, nil
}

// allKeyed reports whether every profile has an upstream key of its own.
func allKeyed(ps []proxy.CallerProfile) bool {
	return len(ps) > 0 && !slices.ContainsFunc(ps, func(p proxy.CallerProfile) bool { return p.APIKey == "" })
}

// serveProxy serves p until ctx is done.
func serveProxy(ctx context.Context, p *proxy.Server, addr string, logger *slog.Logger) error {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("listen: %v", err)
	}
	logger.Info("serving the model API proxy", "url", "http://"+l.Addr().String())
	// Answers with several search rounds take minutes.
	return runHTTP(ctx, newHTTPServer(p, 2*httpTimeouts.write, logger), l)
}
