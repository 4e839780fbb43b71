package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/audit"
	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/console"
	"github.com/toolshelf/toolshelf/fleet"
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/journal"
	"github.com/toolshelf/toolshelf/learn"
	"github.com/toolshelf/toolshelf/ledger"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/sandbox"
	"github.com/toolshelf/toolshelf/shelf"
	"github.com/toolshelf/toolshelf/signin"
	"github.com/toolshelf/toolshelf/telemetry"
)

const envAuthToken = "TOOLSHELF_AUTH_TOKEN"

var serveCommand = &command{
	name:    "serve",
	summary: "run the MCP gateway in front of the configured servers",
	usage:   "[--config FILE [--profile NAME] | --catalog FILE] [--http ADDR [--stateless]] [--mode search|all|auto[:N]] [--activate] [--code] [--audit FILE] [--engine ENGINE] [flags]",
	help: `
Runs toolshelf as an MCP server: the one server a client (Claude Desktop,
Claude Code, Cursor, VS Code, ...) is configured with, in front of all the
configured MCP servers. Over stdio by default; with --http, streamable HTTP
at /mcp, with /healthz (each server's state) and /metrics (Prometheus).

Modes:
  search    two tools, search_tools and call_tool, plus the tools marked
            alwaysLoad (default)
  all       every tool listed directly, as without a gateway
  auto[:N]  all when the tools' definitions cost under N% (default 10) of
            --context-window tokens, else search; the decision is logged

Besides tools, the servers' prompts, resources, resource templates and
completions are served, under their own names (a name two servers share is
given the server's: <server>__<prompt>, toolshelf://<server>/<uri>).
What a server asks of the client while it works on a request (sampling,
elicitation, roots) goes to the client that made the request, and so do its
progress notifications and log messages; a client's cancellation reaches
the server.

Over HTTP, each client of an MCP revision before 2026-07-28 has a session
(Mcp-Session-Id), so that servers can ask it things; at most
--max-sessions are open at once (a new one beyond is refused with 503), and
a session idle for 30 minutes ends. A client of 2026-07-28, which has no
sessions, is served on the same path without one: a server's requests
reach it as input-required results. --stateless serves every client
without sessions, for several gateways behind a load balancer: a server's
requests to a client of an earlier revision then fail. A 2026-07-28
client that takes tasks (its tasks extension) and makes a call not
finished within --task-after (2s) gets a task handle, polls it with
tasks/get, answers a question of the call with tasks/update; with a
shared store, any replica answers for a task. A server over HTTP that
runs tasks itself keeps its own: the gateway follows it.

--code adds run_code beside search_tools: the model writes a short
JavaScript program (the body of an async function) in which every tool of
the profile is await tools.<server>.<tool>(args), and gets back only what
the program prints or returns: the intermediate results of a many-step task
stay out of its context. search_tools then gives each match as a
TypeScript declaration. The program's calls go the way call_tool's do
(quarantine, the audit log with "via": "code", learning, metrics). Each
program runs in a child process with no file system, network, timers or
environment: 5 s of CPU, 60 s in all, 512 MiB of memory, 100 tool calls
and 16 KiB of output, 8 programs at once; a limit that is hit ends the
program with an error naming it.

--propose-servers lists propose_server beside the meta tools: the model
says what it needs a server for; the registries' candidates (see 'toolshelf
help add') that run here without a person's inputs, and that the rules let
be installed (Action::"install"), are shown to the person through their
client (elicitation), with their version, status and what would run, and
the one they choose is added to the configuration as toolshelf add adds
it: started at once while serve follows its configuration, its tools held
until approved.
Nothing is installed without their yes, or for a client that cannot ask.

--activate adds the tools search_tools finds to that session's tool list and
sends notifications/tools/list_changed, for clients on MCP revisions before
2026-07-28 that act on it. Sessions never see each other's tools.

Remote servers that ask for OAuth get the tokens of 'toolshelf auth login';
serve refreshes them and never opens a browser: a server without a usable
token is needs-auth, and calls to its tools say how to sign in.

The configuration's profiles are served over HTTP at /mcp/NAME, each
opened by its own tokens (or --auth-token; another profile's token gets
403); a session of a profile sees, searches and calls only its tools.
When profiles have tokens, /mcp (every tool) needs --auth-token, even on
loopback: without it /mcp is closed. Without any token, /mcp on loopback
is open only while no server shares the host's network (uncontained,
"network": "host", or no slirp4netns), which could call it: else it needs
the admin token, kept in the state folder's http-token (mode 600) for
clients to send. The start-up log says who may open
each path. --profile NAME serves one profile alone (over stdio, or at /mcp).

A search followed by a call of a tool it found teaches search to rank
that tool higher for queries in closely similar words (see 'toolshelf
learned'); --no-learn, or "learn": false in the configuration, turns it off.

With an "identity" section, people open profiles with access tokens of
the team's identity provider, beside the static tokens: each MCP path
serves its protected resource metadata (RFC 9728) so that clients find
the provider and sign the person in; a profile's "claims" say whose tokens
open it. Servers marked "signin": "per-person" are called with each
person's own sign-in (the browser comes back to /oauth/callback), and
"signin": "exchange" with a token exchanged for the person's (RFC 8693).
The audit log, spans and rules carry the person.

Every call of a tool, however it is reached, passes the same rules: the
profile, the server's tool filter, the lock file, then the configuration's
"policies" (rules in Cedar: forbid, ask the person through elicitation,
limit calls; read again when their files change). 'toolshelf policy check'
says what they decide of a call.

Tools whose definitions do not match toolshelf.lock (beside the
configuration) are quarantined: see 'toolshelf tools'. The lock file is
read again when it changes.

--audit FILE appends one JSON line per search and per tool call: time,
profile, client and version, tool, server, duration, outcome, request and response
sizes, and a SHA-256 of the arguments; their values only with
--audit-args, with the servers' secrets removed. It is written
by a goroutine of its own through a bounded queue (a record that finds it
full is dropped and the count written as a line of its own), rotated at
64 MiB keeping three files. 'toolshelf audit' reads it.

While it runs, serve follows its configuration file and the secret files
it names (--no-watch: it does not): a server added starts, one removed
stops once it has answered its calls under way (up to 30 s), one whose
plan changed restarts, and the others serve on. A change that does not
load changes nothing: it is logged at WARN with its file and line, and
/healthz and the console say it. Profiles (added, removed, their tools,
tokens and claims), groups, search settings and trust change in place,
and a token taken out ends its sessions' use at once; the identity
provider, the store, "learn" and the list of policy files follow a
restart (said at WARN). add, remove and update say whether a running
serve took their change.

Servers start in the background: the gateway answers at once, with cached
tool lists where it has them, and search_tools names the servers still
connecting. An --http address other than loopback requires --auth-token-file
(or --auth-token, $TOOLSHELF_AUTH_TOKEN, $TOOLSHELF_AUTH_TOKEN_FILE), checked
as a bearer token; requests from a browser page of another origin are
refused, and so is, on every route, a request whose Host is not the listen
address, localhost on loopback, or a name given with --allowed-host (DNS
rebinding). Request bodies are limited to 4 MiB; a connection has 10 s to
send its headers, a minute to send its body, ten minutes to take its
response, and is closed after two idle minutes. /healthz says up or
degraded and how many servers are ready to anyone; each server's state and
error, and /metrics, need the admin token: --auth-token, or without it a
token made for the run (shown only in --console's sign-in link), so they
are never open. Logs go to stderr; a line per tool call at debug level.

Secrets are best given as files: --auth-token-file, $TOOLSHELF_STORE_FILE,
$TOOLSHELF_STORE_KEY_FILE, and "${file:PATH}" in the configuration (profile
tokens, a server's env and headers). A secret on the command line is
readable by every local user, and serve warns about it. At start toolshelf
makes itself non-dumpable, so that no process of the same user reads its
environment or memory.

Stdio servers run contained where the system allows (Linux with
bubblewrap, Debian's package "bubblewrap"): each in namespaces of its own,
seeing the system's programs, its cwd and runtime (read-only), a package
runner's cache of its own (npx's ~/.npm), a private /tmp and home, and the
paths its configuration grants ("paths": {"read": [...], "write":
[...]}); never a file toolshelf holds (token and key files, however
given, the audit log, the journal). With slirp4netns (Debian's package) it
has a network of its own that does not reach the host's loopback;
"network": {"hostPorts": [5432]} grants it those ports of the host's
loopback (at 127.0.0.1 in its own network), "network": false takes its
network away, "network": "host" shares the host's, and "contain": false
runs it as before (each logged at start). A
"docker run" or "podman run" server is contained by its engine, its flags
checked. As root, a contained server runs as nobody. The start-up log,
list, doctor and the console say which servers run uncontained and why.

Traces: with OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_TRACES_EXPORTER=otlp)
set, each request a client sends is a span (its parent the traceparent in
the request's params._meta), each request to a server a child span whose
context goes to the server in _meta, and each search a span with its
engine, result count, weak flag and query length (the text too with
--trace-queries). OTEL_EXPORTER_OTLP_PROTOCOL chooses http/protobuf
(default) or grpc; OTEL_METRICS_EXPORTER=otlp also pushes the metrics.
/metrics serves them in the Prometheus format either way (README,
"Traces and metrics").

--console serves a web console at /console on the --http listener: the
servers and what their tools cost (a failed one with its next try and
Retry now), a search playground, the quarantined
tools with Approve and Deny, the audit log and what was learned. It asks
for the admin token (--auth-token); without one, serve makes one for the
run and prints a sign-in link once on stderr. Five failed sign-ins a
minute from one address block it for the rest of the minute; each failure
is logged.

--store postgres://... (or $TOOLSHELF_STORE, or "store" in the
configuration) keeps what several replicas share in PostgreSQL: pins,
approvals and denials instead of toolshelf.lock, what was learned, the
sessions, with $TOOLSHELF_STORE_KEY the sign-ins of 'toolshelf auth'
(sealed with that key), and with --audit store the audit records. The schema is migrated at start;
docs/deploy.md in the source shows a deployment. Over HTTP the replicas
act as one: a request of a session, or the answers to a parked call, that
reaches a replica other than the one holding it is sent on to that one
(at the --advertise URL it announced in the store), and the session of a
replica that is gone is taken over by the next replica it reaches, with
the client's own initialize request. Replicas prove who they are with the
fleet key (--fleet-key-file, or $TOOLSHELF_FLEET_KEY_FILE: 32 random bytes,
base64, the same file for every replica, not in the store): heartbeats and
forwarded requests are signed, a replica sends requests only to an
address whose signed heartbeat it checked, and a client's token stays
with the replica that checked it (the person it authenticated travels
sealed). Without the key a replica serves alone. With a store, an
answered call's audit record and learned pair wait in this replica's
journal (--journal DIR), flushed to disk before the answer leaves, until
the store has them; a replica started on the same folder lands what a
killed one left. --advertise defaults to the --http
address, or, when that listens on every interface, this machine's first
address that is not loopback.

` + engineHelp + `
With an endpoint, the gateway searches with bm25 until the catalog's
embeddings are ready, and again if the endpoint fails.

` + configHelp + `

Without servers, the built-in catalog is served: it can be searched, and
calls to it fail with a message saying why.

Once the servers have started (or the catalog file is read), the garbage
collector runs at GOGC=400 unless GOGC is set: the MCP SDK allocates about
400 KB per forwarded call. Unless GOMEMLIMIT is set, a soft memory limit
32 MiB above the live heap, set again every 30 s, makes it collect
earlier when large requests arrive.`,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		var o serveOptions
		fs.StringVar(&o.config, "config", "", "servers configuration `FILE` (mcpServers JSON)")
		fs.StringVar(&o.catalog, "catalog", "", "serve a catalog `FILE` for search only, without servers")
		fs.StringVar(&o.http, "http", "", "serve streamable HTTP on `ADDR` (such as 127.0.0.1:8080) instead of stdio")
		fs.StringVar(&o.tokenFile, "auth-token-file", "", "require the bearer token in `FILE` over HTTP (default $TOOLSHELF_AUTH_TOKEN_FILE); unlike --auth-token, it is not on the command line every local user can read")
		fs.StringVar(&o.token, "auth-token", "", "require this bearer `TOKEN` over HTTP (default $TOOLSHELF_AUTH_TOKEN); prefer --auth-token-file")
		fs.StringVar(&o.mode, "mode", "search", "how tools are shown (`MODE`): search, all, auto or auto:N")
		fs.IntVar(&o.window, "context-window", 200000, "context window in `TOKENS`, for --mode auto")
		fs.BoolVar(&o.activate, "activate", false, "add found tools to the session's tool list (list_changed)")
		fs.BoolVar(&o.code, "code", false, "code mode: run_code runs a JavaScript program that calls tools in a sandbox; searches give TypeScript declarations")
		fs.BoolVar(&o.proposeServers, "propose-servers", false, "list propose_server: the model asks the person (by elicitation) to install a server from the registries, held until approved")
		fs.IntVar(&o.maxSessions, "max-sessions", 500, "over HTTP, the most sessions served at once (`N`)")
		fs.BoolVar(&o.stateless, "stateless", false, "over HTTP, serve without sessions (servers cannot ask the client anything)")
		fs.DurationVar(&o.taskAfter, "task-after", gateway.DefaultTaskAfter, "answer a call not finished within `DURATION` with a task handle, for a client that takes tasks (MCP 2026-07-28's tasks extension)")
		fs.StringVar(&o.audit, "audit", "", "append one JSON line per search and tool call to `FILE` (see toolshelf audit), or to the shared store with 'store'")
		fs.BoolVar(&o.auditArgs, "audit-args", false, "with --audit, keep the arguments' values too (secrets removed)")
		fs.BoolVar(&o.noLearn, "no-learn", false, "do not learn from use (see toolshelf learned)")
		fs.BoolVar(&o.traceQueries, "trace-queries", false, "put each search's query text on its trace span (off: its length only)")
		fs.BoolVar(&o.console, "console", false, "with --http, serve the web console at /console (for the admin token)")
		fs.BoolVar(&o.noWatch, "no-watch", false, "do not follow changes of the configuration file while serving (its servers start, stop and restart as it changes)")
		fs.StringVar(&o.store, "store", "", "keep what replicas share in the PostgreSQL store at `URL` (postgres://...; default $"+envStore+" or the configuration's \"store\")")
		fs.StringVar(&o.advertise, "advertise", "", "with --store and --http, the `URL` other replicas reach this one at (such as http://10.1.2.3:8080)")
		fs.StringVar(&o.journal, "journal", "", "with a shared store, the `DIR` of this replica's journal, where audit records and learned pairs wait, fsynced, for the store (default toolshelf/journal in the state folder); on a volume that outlives the replica")
		fs.StringVar(&o.fleetKeyFile, "fleet-key-file", "", "with --store and --http, the `FILE` of the fleet key (32 random bytes, base64) every replica is given (default $TOOLSHELF_FLEET_KEY_FILE); without it the replica serves alone")
		fs.Func("allowed-host", "with --http, also serve requests whose Host is `NAME` (repeat or separate with commas); others get 403, so a web page whose name rebinds to this address reaches nothing", func(v string) error {
			for _, n := range strings.Split(v, ",") {
				if n = strings.TrimSpace(n); n != "" {
					o.allowedHosts = append(o.allowedHosts, n)
				}
			}
			return nil
		})
		fs.StringVar(&o.profile, "profile", "", "serve only the tools of the configuration's profile `NAME` (default: every tool, and each profile at /mcp/NAME over HTTP)")
		o.engine.register(fs)
		fs.StringVar(&o.logLevel, "log-level", "info", "log `LEVEL`: debug, info, warn, error")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected arguments: %v", args)
			}
			if err := checkPositive(fs, "context-window", o.window); err != nil {
				return err
			}
			if err := checkPositive(fs, "max-sessions", o.maxSessions); err != nil {
				return err
			}
			switch {
			case o.token != "" && o.tokenFile != "":
				return usagef("--auth-token and --auth-token-file: give one")
			case o.tokenFile != "":
				v, err := e.held.readSecretFile(o.tokenFile)
				if err != nil {
					return usagef("--auth-token-file: %v", err)
				}
				o.token = v
			case o.token != "":
				o.onCommandLine = append(o.onCommandLine, "--auth-token")
			default:
				o.token = e.getenv(envAuthToken)
			}
			o.fleetKey = e.getenv(envFleetKey)
			if o.fleetKeyFile != "" {
				v, err := e.held.readSecretFile(o.fleetKeyFile)
				if err != nil {
					return usagef("--fleet-key-file: %v", err)
				}
				o.fleetKey = v
			}
			if hasPassword(o.store) {
				o.onCommandLine = append(o.onCommandLine, "--store (its password)")
			}
			if o.store == "" {
				o.store = e.getenv(envStore)
			}
			if o.audit != auditStore {
				e.held.add(o.audit)
			}
			journalDir := o.journal
			if journalDir == "" {
				journalDir = filepath.Join(filepath.Dir(learn.DefaultPath(e.getenv)), "journal")
			}
			e.held.add(journalDir)
			o.stderr = e.stderr
			return runServe(ctx, e, o)
		}
	},
}

type serveOptions struct {
	config, catalog, http, token, mode, logLevel string
	tokenFile, fleetKeyFile, fleetKey, journal   string
	journalOpen                                  *journal.Journal // with a store
	ledger                                       *ledger.Ledger   // what calls cost, for the console
	allowedHosts                                 []string
	adminToken                                   string   // the admin token, given or made (see serveHTTP)
	madeToken                                    bool     // adminToken was made for this run
	onCommandLine                                []string // the secrets given as flags, for a warning
	stderr                                       io.Writer
	audit, profile, store, advertise             string
	fleet                                        *fleet.Member // with --store and --http
	engine                                       engineFlags
	window, maxSessions                          int
	activate, stateless, auditArgs, noLearn      bool
	taskAfter                                    time.Duration
	code                                         bool
	proposeServers                               bool
	traceQueries, console, noWatch               bool

	// tokenPath is where a made admin token is kept when /mcp needs it
	// (see closeLoopback); tokenKept is that file once it holds the
	// token in use.
	tokenPath, tokenKept string
}

func runServe(ctx context.Context, e *env, o serveOptions) error {
	logger, gopts, err := o.gatewayOptions(e)
	if err != nil {
		return err
	}
	if len(o.onCommandLine) > 0 {
		logger.Warn("a secret was given on the command line, which every local user can read (ps, /proc/PID/cmdline); give it in a file: --auth-token-file, $TOOLSHELF_STORE_FILE", "flags", strings.Join(o.onCommandLine, ", "))
	}
	tel, err := openTelemetry(ctx, e, logger)
	if err != nil {
		return err
	}
	defer shutdownTelemetry(tel, logger)
	gopts.Telemetry, gopts.TraceQueries = tel, o.traceQueries
	src, own, err := o.openSource(e, tel, logger)
	if err != nil {
		return err
	}
	if src.db != nil {
		defer src.db.Close()
	}
	hopts, err := o.hostOptions(e, src, gopts, own, logger)
	if err != nil {
		return err
	}
	if o.journalOpen != nil {
		// Closed after the host, whose audit log and learning land what
		// they can first.
		defer o.journalOpen.Close()
	}
	host, err := gateway.NewHost(src.pool, hopts)
	if err != nil {
		return badInput(err)
	}
	if cons := o.newConsole(e, host, src, hopts.Server.Learn, logger); cons != nil {
		host.Mount(console.Prefix, cons.Handler())
	}
	if path := configPath(e, o.config); path != "" && src.config != nil {
		if data, err := os.ReadFile(path); err == nil {
			notes := newNoteKeeper(e, path, !o.noWatch)
			defer notes.remove()
			f := &configFollower{path: path, logger: logger.With("component", "config"),
				parse: func(b []byte) (*config.Config, error) { return parseConfig(e, path, b) },
				apply: func(cfg *config.Config) []string { return applyConfig(host, src.config, cfg, logger) },
				report: func(st followed) {
					src.pool.ConfigRefused(st.Err)
					notes.keep(st, src.pool.ConfigProblem())
				},
			}
			if o.noWatch {
				notes.keep(followed{Applied: configPrint(data, config.FileRefs(data, path))}, "")
			} else {
				wctx, stop := context.WithCancel(ctx)
				defer stop()
				go f.run(wctx)
			}
		}
	}
	return serveHost(ctx, e, host, o, logger)
}

// openSource opens serve's tools (see the package's openSource), keeping
// toolshelf's own secrets from the servers: the tokens that open the
// gateway reach no server, whose output could hand them to a client of a
// smaller profile.
func (o *serveOptions) openSource(e *env, tel *telemetry.Telemetry, logger *slog.Logger) (*toolSource, *config.Secrets, error) {
	path := configPath(e, o.config)
	if o.profile != "" && (o.catalog != "" || path == "") {
		return nil, nil, usagef("--profile needs a configuration with \"profiles\"")
	}
	own := &config.Secrets{}
	own.Add(o.token, envAuthToken)
	own.Add(o.store, envStore)
	own.Add(e.getenv(envStoreKey), envStoreKey)
	o.adminToken = o.token
	if o.http != "" && o.adminToken == "" {
		// Every route fails closed: /metrics, /healthz's details and the
		// console need a token, this run's when none was given, or the
		// one an earlier run kept (see closeLoopback).
		o.tokenPath = httpTokenPath(e)
		kept, err := keptToken(o.tokenPath)
		if err != nil {
			return nil, nil, err
		}
		e.held.add(o.tokenPath)
		if kept != "" {
			o.adminToken, o.tokenKept = kept, o.tokenPath
		} else {
			o.adminToken = newToken()
		}
		o.madeToken = true
	}
	own.Add(o.adminToken, "")
	if o.fleetKey != "" {
		own.Add(o.fleetKey, envFleetKey)
	}
	src, err := openSource(e, o.catalog, o.config, connectOptions{useCache: true, logger: logger.With("component", "upstream"), secrets: *own, telemetry: tel, storeURL: o.store})
	if err != nil {
		return nil, nil, err
	}
	if src.db != nil {
		holds := "pins and approvals, what was learned from use, sessions"
		switch {
		case src.tokens == nil: // a catalog file: no servers to sign in to
		case src.tokens.Where() == src.db.Where():
			holds += ", sign-ins"
		default:
			holds += "; sign-ins stay in " + src.tokens.Where() + " (set $" + envStoreKey + " to seal them in the store)"
		}
		logger.Info("shared store", "url", src.db.Where(), "holds", holds)
	}
	return src, own, nil
}

// hostOptions are the host's: the gateways', the fleet it joins, the
// profiles and people, and the audit log and learning.
func (o *serveOptions) hostOptions(e *env, src *toolSource, gopts gateway.Options, own *config.Secrets, logger *slog.Logger) (*gateway.HostOptions, error) {
	hopts := &gateway.HostOptions{Logger: logger, Server: gopts, Only: o.profile, AuthToken: o.token, AdminToken: o.adminToken, Stateless: o.stateless}
	if src.db != nil {
		hopts.Changes = src.db
	}
	if err := o.joinFleet(src, hopts, logger); err != nil {
		return nil, err
	}
	if src.config != nil {
		hopts.Profiles = src.config.Profiles
		hopts.Server.Results, hopts.Server.Budget = shelf.Form(src.config.Search.Results), src.config.Search.Budget
		hopts.Server.Groups = src.config.Groups
	}
	if o.proposeServers {
		path := configPath(e, o.config)
		if src.config == nil || path == "" {
			return nil, usagef("--propose-servers installs into a configuration file: give --config FILE")
		}
		c, err := registryClient(e, nil, o.config)
		if err != nil {
			return nil, err
		}
		hopts.Server.Proposer = &registryProposer{e: e, client: c, config: path}
	}
	if src.config != nil {
		if _, ok := src.config.Profile(o.profile); o.profile != "" && !ok {
			return nil, usagef("--profile %q: %s has no such profile%s", o.profile, src.name, profileList(src.config))
		}
		if src.config.Identity != nil {
			if o.http == "" {
				logger.Warn(`"identity" applies to --http only: over stdio the person is whoever started toolshelf`)
			}
			hopts.People = people(src)
		}
	} else {
		logger.Info("no configuration; serving "+src.name+" for search only", "tools", src.pool.Catalog().Len())
	}
	if err := o.closeLoopback(src, hopts, logger); err != nil {
		return nil, err
	}
	if err := o.openStores(e, src, logger, &hopts.Server); err != nil {
		return nil, err
	}
	return hopts, nil
}

// joinFleet makes this replica a member of the fleet of its store, with
// --http and the fleet key: without the key it serves alone.
func (o *serveOptions) joinFleet(src *toolSource, hopts *gateway.HostOptions, logger *slog.Logger) error {
	switch {
	case (src.db == nil || o.http == "") && o.advertise != "":
		return usagef("--advertise needs --http and a shared store (--store)")
	case src.db == nil || o.http == "":
		return nil
	case o.fleetKey == "":
		logger.Warn("serving alone: replicas act as one only with the fleet key (--fleet-key-file or $TOOLSHELF_FLEET_KEY_FILE), with which they prove who they are to each other")
		return nil
	}
	key, err := signin.ParseKey(o.fleetKey) // the same form as the store key
	if err != nil {
		return usagef("the fleet key: %v", err)
	}
	member, err := fleet.New(src.db, key, &fleet.Options{Logger: logger.With("component", "fleet"), Keep: hopts.Server.SessionIdle})
	if err != nil {
		return err
	}
	o.fleet, hopts.Fleet = member, member
	if src.flows != nil {
		// A person's browser comes back to any replica.
		src.flows.SetNote(member.NoteFlow)
	}
	if src.policies != nil {
		// A limit is the fleet's: each replica counts its share.
		src.policies.SetShare(member.Replicas)
	}
	return nil
}

// newConsole is the web console of --console over host, or nil.
func (o *serveOptions) newConsole(e *env, host *gateway.Host, src *toolSource, learned *learn.Store, logger *slog.Logger) *console.Console {
	if !o.console {
		return nil
	}
	co := &console.Options{Host: host, AuthToken: o.adminToken, Pins: src.pins, Learn: learned, Logger: logger.With("component", "console"),
		RegistryNotes: func() map[string]string { return registryNotes(e) }, Ledger: o.ledger}
	if o.fleet != nil {
		// A sign-in holds on every replica, and guesses count for all.
		co.Key, co.Attempts = o.fleet.Key("console"), o.fleet
	} else if key, err := consoleKey(httpTokenPath(e)); err != nil {
		logger.Warn("the console's signing key is not kept: its sign-ins end when serve stops", "error", err)
	} else {
		co.Key = key
	}
	if src.config != nil && src.config.Identity != nil && len(src.config.Identity.ConsoleAct) > 0 {
		id := src.config.Identity
		co.People = &console.People{Verifier: src.identity, View: id.ConsoleView, Act: id.ConsoleAct}
	}
	if o.audit == auditStore {
		co.Audit = func(ctx context.Context, since time.Time) ([]audit.Record, error) {
			return audit.ReadShared(ctx, src.db, since)
		}
	} else {
		co.AuditFile = o.audit
	}
	return console.New(co)
}

// openTelemetry makes the process's telemetry from the OTEL_* variables.
func openTelemetry(ctx context.Context, e *env, logger *slog.Logger) (*telemetry.Telemetry, error) {
	tel, err := telemetry.New(ctx, &telemetry.Options{Getenv: e.getenv, Version: version(), Logger: logger.With("component", "telemetry")})
	if err != nil {
		return nil, badInput(err)
	}
	if tel.Tracing() {
		logger.Info("tracing: spans go to the OTLP endpoint that OTEL_* names")
	}
	return tel, nil
}

// shutdownTelemetry sends what spans and metrics are still queued, for a
// few seconds at most: a collector that is down must not hold up the exit.
func shutdownTelemetry(tel *telemetry.Telemetry, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := tel.Shutdown(ctx); err != nil {
		logger.Warn("telemetry not flushed", "error", err)
	}
}

// serveHost runs the host and serves it over stdio or HTTP until either
// ends, then stops the host and waits for everything it started.
func serveHost(ctx context.Context, e *env, host *gateway.Host, o serveOptions, logger *slog.Logger) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ran := make(chan error, 1)
	go func() { ran <- host.Run(ctx) }()
	limited := make(chan struct{})
	go func() {
		defer close(limited)
		followLiveHeap(ctx, e, host.Pool().Wait)
	}()
	defer func() { <-limited }()
	var err error
	if o.http == "" {
		logger.Info("serving MCP over stdio", "mode", host.Main().Mode(), "profile", host.Main().Profile())
		err = host.Main().ServeStdio(ctx, gateway.StdioTransport(e.stdin, e.stdout))
	} else {
		err = serveHTTP(ctx, host, o, logger)
	}
	cancel()
	return errors.Join(err, <-ran)
}

// gatewayOptions turns serve's flags into the logger and every gateway's
// options; a bad flag is a usage error.
func (o *serveOptions) gatewayOptions(e *env) (*slog.Logger, gateway.Options, error) {
	settings, err := policy.ParseMode(o.mode)
	if err != nil {
		return nil, gateway.Options{}, usagef("--mode %v", err)
	}
	if err := o.engine.check(e); err != nil {
		return nil, gateway.Options{}, err
	}
	var level slog.Level
	if err := level.UnmarshalText([]byte(o.logLevel)); err != nil {
		return nil, gateway.Options{}, usagef("--log-level %q: want debug, info, warn or error", o.logLevel)
	}
	if o.http != "" {
		if err := checkListenAddr("--http", o.http, o.token, "--auth-token-file FILE (or $"+envAuthToken+"_FILE)"); err != nil {
			return nil, gateway.Options{}, err
		}
	} else if o.console {
		return nil, gateway.Options{}, usagef("--console needs --http: the console is a web page on the same listener")
	}
	logger := slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	gopts := gateway.Options{
		Settings: settings, ContextWindow: o.window, Activate: o.activate, MaxSessions: o.maxSessions,
		Engine: o.engine.kind, Embedder: o.engine.embedder(e), Version: version(), AuditArgs: o.auditArgs,
		TaskAfter: o.taskAfter,
	}
	if o.code {
		r, err := sandbox.New(nil)
		if err != nil {
			return nil, gateway.Options{}, err
		}
		gopts.Code = r
	}
	return logger, gopts, nil
}

// openStores opens the audit log (--audit) and, unless learning is off,
// what was learned: in the shared store the source's pins are in, or in
// the state folder. The host runs them.
func (o *serveOptions) openStores(e *env, src *toolSource, logger *slog.Logger, gopts *gateway.Options) error {
	if src.db != nil {
		// What the store is to keep is on this machine's disk before an
		// answer promises it (see package journal).
		dir := o.journal
		if dir == "" {
			dir = filepath.Join(filepath.Dir(learn.DefaultPath(e.getenv)), "journal") // held (see serveCommand)
		}
		var key []byte
		if o.fleet != nil {
			// A fleet's journal is signed with a key of the fleet key's:
			// a line written into the folder by anyone else is refused.
			key = []byte(o.fleet.MAC("journal"))
		}
		j, err := journal.OpenSigned(dir, key, logger.With("component", "journal"))
		if err != nil {
			return fmt.Errorf("--journal: %w", err)
		}
		o.journalOpen = j
		gopts.Sync, gopts.Ready = j.Sync, j.Ready
		if o.fleet != nil {
			// Any replica answers for a task (MCP's tasks extension),
			// from the store, sealed with the fleet key. A replica that
			// serves alone keeps its tasks in memory: in the store
			// without a key, anyone who can write there could rewrite
			// one.
			gopts.Tasks = o.fleet.SealTasks(src.db)
		}
	}
	l, err := ledgerFor(e, src.db, o.journalOpen, src.config, logger)
	if err != nil {
		return err
	}
	gopts.Ledger, o.ledger = l, l
	switch {
	case o.audit == auditStore && src.db == nil:
		return usagef("--audit %s needs a shared store (--store, $%s or the configuration's \"store\")", auditStore, envStore)
	case o.audit == auditStore:
		gopts.Audit = audit.OpenShared(src.db, &audit.Options{Logger: logger, Journal: o.journalOpen})
	case o.audit != "":
		l, err := audit.Open(o.audit, &audit.Options{Logger: logger})
		if err != nil {
			return badInput(err)
		}
		gopts.Audit = l
	}
	if o.noLearn || (src.config != nil && src.config.NoLearn) {
		return nil
	}
	if src.db != nil {
		gopts.Learn = learn.OpenShared(src.db, logger.With("component", "learn"), o.journalOpen)
		if o.fleet != nil {
			// A fleet trusts only the pairs its replicas signed: a store
			// writer without the key cannot steer search.
			gopts.Learn.SignPairs(o.fleet.MAC)
		}
	} else if path := learnedPath(e); path != "" {
		gopts.Learn = learn.Open(path, logger.With("component", "learn"))
	}
	return nil
}

// profileOrDefault names the profile served.
func profileOrDefault(name string) string {
	if name == "" {
		return config.DefaultProfile
	}
	return name
}

// profileList says which profiles a configuration has, for an error.
func profileList(cfg *config.Config) string {
	if len(cfg.Profiles) == 0 {
		return ` (it has no "profiles")`
	}
	var names []string
	for _, p := range cfg.Profiles {
		names = append(names, p.Name)
	}
	return " (it has " + strings.Join(names, ", ") + ")"
}

// httpTimeouts bound what one HTTP connection may hold: a client that
// sends its headers or body slowly, or leaves a connection idle, gives it
// up. Writing gets ten minutes: a response streams while a tool runs, and
// a session's event stream is reopened by the client when it ends.
var httpTimeouts = struct{ header, read, write, idle time.Duration }{
	header: 10 * time.Second,
	read:   time.Minute,
	write:  10 * time.Minute,
	idle:   2 * time.Minute,
}

// checkListenAddr refuses to serve a non-loopback address without a
// token: the gateway can call every tool of every server, and the proxy
// spends its clients' API keys. flag and tokenHint name the flags, for the
// error.
func checkListenAddr(flag, addr, token, tokenHint string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("%s %q: want HOST:PORT, such as 127.0.0.1:8080", flag, addr)
	}
	if token != "" {
		return nil
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usagef("%s %q listens beyond this machine; set %s", flag, addr, tokenHint)
}

// advertised is the URL other replicas reach this one at: flag (--advertise)
// when set, else the listener's address, with this machine's first
// non-loopback address for one that listens on every interface.
func advertised(flag string, addr net.Addr) (string, error) {
	if flag != "" {
		u, err := url.Parse(flag)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return "", usagef("--advertise %q: want a URL such as http://10.1.2.3:8080", flag)
		}
		return strings.TrimSuffix(flag, "/"), nil
	}
	tcp, ok := addr.(*net.TCPAddr)
	if !ok || !tcp.IP.IsUnspecified() {
		return "http://" + addr.String(), nil
	}
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if ip, ok := a.(*net.IPNet); ok && !ip.IP.IsLoopback() && !ip.IP.IsLinkLocalUnicast() {
				return "http://" + net.JoinHostPort(ip.IP.String(), strconv.Itoa(tcp.Port)), nil
			}
		}
	}
	return "", usagef("--http %s listens on every interface and this machine has no address to announce to the other replicas: set --advertise", addr)
}

func serveHTTP(ctx context.Context, host *gateway.Host, o serveOptions, logger *slog.Logger) error {
	l, err := net.Listen("tcp", o.http)
	if err != nil {
		return fmt.Errorf("listen: %v", err)
	}
	if err := portNotGranted(host.Pool(), l.Addr().(*net.TCPAddr).Port); err != nil {
		l.Close()
		return err // a port chosen by the system (":0") may be granted too
	}
	for _, r := range host.Routes() {
		logger.Info("serving MCP over HTTP", "url", "http://"+l.Addr().String()+r.Path, "mode", host.Main().Mode(), "profile", r.Profile, "access", r.Access)
	}
	if o.fleet != nil {
		address, err := advertised(o.advertise, l.Addr())
		if err != nil {
			l.Close()
			return err
		}
		host.Announce(address)
		logger.Info("serving as a replica of the fleet", "replica", o.fleet.ID(), "address", address)
	}
	h := host.Handler()
	if o.console {
		logger.Info("serving the console", "url", "http://"+l.Addr().String()+console.Prefix+"/")
		if o.madeToken {
			// Once, on stderr and not in the log, as Jupyter does: the
			// link signs the browser in.
			made := "made for this run"
			if o.tokenKept != "" {
				made = "kept in " + o.tokenKept
			}
			fmt.Fprintf(o.stderr, "\nThe console needs a token, %s. Open this link to sign in:\n    http://%s%s/login?token=%s\n\n", made, l.Addr(), console.Prefix, o.adminToken)
		}
	}
	allowed := slices.Clone(o.allowedHosts)
	if o.advertise != "" {
		if u, err := url.Parse(o.advertise); err == nil && u.Host != "" {
			allowed = append(allowed, u.Host)
		}
	}
	h = gateway.CheckHost(l.Addr(), allowed, h)
	return runHTTP(ctx, newHTTPServer(h, httpTimeouts.write, logger), l)
}

// newHTTPServer is an http.Server with httpTimeouts' bounds on what a
// connection may hold, writing allowed for write.
func newHTTPServer(h http.Handler, write time.Duration, logger *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: httpTimeouts.header,
		ReadTimeout:       httpTimeouts.read,
		WriteTimeout:      write,
		IdleTimeout:       httpTimeouts.idle,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
}

// runHTTP serves srv on l until ctx is done, then shuts it down, giving
// the requests in flight five seconds.
func runHTTP(ctx context.Context, srv *http.Server, l net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(l) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return nil
}
