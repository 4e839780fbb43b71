package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/internal/folders"
	"github.com/toolshelf/toolshelf/signin"
	"github.com/toolshelf/toolshelf/store"
)

// envTokens names the token file instead of the default one.
const envTokens = "TOOLSHELF_TOKENS"

// envStoreKey is the key that seals sign-ins in the shared store.
const envStoreKey = "TOOLSHELF_STORE_KEY"

// envStoreOldKey is the store key being rotated away from: it opens
// sign-ins, the store key seals them (see 'toolshelf store rotate-key').
const envStoreOldKey = "TOOLSHELF_STORE_OLD_KEY"

// envFleetKey is the key the replicas of a fleet prove themselves with.
const envFleetKey = "TOOLSHELF_FLEET_KEY"

// tokenFile is the sign-ins' file: $TOOLSHELF_TOKENS, else tokens.json
// in toolshelf's configuration folder.
func tokenFile(e *env) string {
	if p := e.getenv(envTokens); p != "" {
		return p
	}
	if dir := folders.Config(e.getenv); dir != "" {
		return filepath.Join(dir, "tokens.json")
	}
	return ""
}

// openTokens is where sign-ins are kept: sealed in the shared store db
// when there is one and $TOOLSHELF_STORE_KEY is set, else the token file.
func openTokens(e *env, db *store.DB) (*signin.Store, error) {
	raw := e.getenv(envStoreKey)
	if db == nil || raw == "" {
		return signin.Open(tokenFile(e)), nil
	}
	key, err := signin.ParseKey(raw)
	if err != nil {
		return nil, usagef("$%s: %v", envStoreKey, err)
	}
	var old [][]byte
	if raw := e.getenv(envStoreOldKey); raw != "" {
		k, err := signin.ParseKey(raw)
		if err != nil {
			return nil, usagef("$%s: %v", envStoreOldKey, err)
		}
		old = append(old, k)
	}
	return signin.OpenShared(db, key, old...)
}

// authTokens opens the sign-ins the auth command works on: those of the
// shared store that --store, $TOOLSHELF_STORE or the configuration cfg
// (nil when none) names, with $TOOLSHELF_STORE_KEY, else the token file. close
// releases the store.
func authTokens(e *env, cfg *config.Config, storeURL string) (tokens *signin.Store, close func(), err error) {
	db, err := openStore(e, storeURL, cfg)
	if err != nil {
		return nil, nil, err
	}
	close = func() {}
	if db != nil {
		close = db.Close
	}
	if tokens, err = openTokens(e, db); err != nil {
		close()
		return nil, nil, err
	}
	return tokens, close, nil
}

// loginWait is how long auth login waits for the browser to come back.
const loginWait = 5 * time.Minute

var authCommand = &command{
	name:    "auth",
	summary: "sign in to remote servers that ask for OAuth, and out",
	usage:   "login (SERVER | --url URL [--name NAME]) [--no-browser] [--client-id ID [--client-secret S] | --client-metadata-url URL] | status [--json] | logout SERVER [--person SUBJECT | --everyone]   [--config FILE] [--store URL]",
	help: `
Remote MCP servers (type http or sse) that answer 401 ask for OAuth sign-in,
as the MCP authorization specification describes. toolshelf signs in once,
here, and serve, list and doctor send the token afterwards, refreshing it
when it expires; they never open a browser themselves: a server without a
usable token is listed as needs-auth with this command in its error, its
tools stay searchable from the cache, and calls to them say how to sign in.

  login SERVER   discovers the server's authorization server, registers
                 toolshelf with it (or uses "oauth": {"clientId",
                 "clientSecret"} or {"clientMetadataUrl"} from the server's
                 configuration), prints the authorization URL and opens it
                 in a browser ($BROWSER, else xdg-open or open; not with
                 --no-browser), and waits up to five minutes for the browser
                 to come back to a listener on 127.0.0.1.
                 --url signs in to a server that is not configured (its
                 token is kept under --name, default the URL's host);
                 --client-id/--client-secret/--client-metadata-url override
                 the configuration's "oauth"; --grant client_credentials
                 checks a machine-to-machine client (serve then gets its
                 tokens itself, nothing is kept). login connects and lists the
                 server's tools to prove the token, signing in again with
                 more scopes if the server asks for them.
  status         which remote servers are signed in, until when, with which
                 scopes: the gateway's own sign-in, and for a server marked
                 "signin": "per-person" each person's (by the subject of
                 their token at the identity provider). Tokens are never
                 printed.
  logout SERVER  forgets the gateway's own token of the server; with
                 --person SUBJECT that person's (they sign in again on
                 their next call), with --everyone every sign-in of it.

Tokens are kept in toolshelf/tokens.json under the user's configuration
folder (or $TOOLSHELF_TOKENS), mode 0600, replaced whole on every change.
With a shared store ($TOOLSHELF_STORE or the configuration's "store") and
$TOOLSHELF_STORE_KEY (32 random bytes, base64: openssl rand -base64 32),
they are kept in the store instead, each sealed with the key
(AES-256-GCM), for every replica of a fleet: a sign-in or sign-out made
through one reaches the others within seconds, and a token that expires
is refreshed once for all of them.

` + configHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		configFile := fs.String("config", "", "servers configuration `FILE` (mcpServers JSON)")
		storeURL := storeFlag(fs)
		noBrowser := fs.Bool("no-browser", false, "login: print the authorization URL only")
		asJSON := fs.Bool("json", false, "status: print JSON")
		person := fs.String("person", "", "logout: forget the sign-in of the person with this `SUBJECT`, not the gateway's own")
		everyone := fs.Bool("everyone", false, "logout: forget every sign-in of the server, the gateway's and each person's")
		rawURL := fs.String("url", "", "login: sign in to the server at `URL`, not one of the configuration (named by --name)")
		name := fs.String("name", "", "login --url: the `NAME` to keep the token under (default: the URL's host)")
		var client config.OAuthConfig
		fs.StringVar(&client.ClientID, "client-id", "", "login: a client `ID` registered with the authorization server ahead of time")
		fs.StringVar(&client.ClientSecret, "client-secret", "", "login: that client's `SECRET`")
		fs.StringVar(&client.ClientMetadataURL, "client-metadata-url", "", "login: an https `URL` of a Client ID Metadata Document to use as the client id")
		fs.StringVar(&client.Grant, "grant", "", "login: `authorization_code` (default) or client_credentials (check a machine-to-machine client)")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) == 0 {
				return usagef("auth needs login, status or logout")
			}
			cfg, path, err := optionalConfig(e, *configFile)
			if err != nil {
				return err
			}
			store, closeStore, err := authTokens(e, cfg, *storeURL)
			if err != nil {
				return err
			}
			defer closeStore()
			switch sub, rest := args[0], args[1:]; sub {
			case "login":
				var server *config.ServerConfig
				switch {
				case *rawURL != "" && len(rest) == 0:
					u, err := url.Parse(*rawURL)
					if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
						return usagef("--url %q is not an http or https URL", *rawURL)
					}
					server = &config.ServerConfig{Name: cmp.Or(*name, u.Hostname()), URL: *rawURL}
				case *rawURL == "" && len(rest) == 1:
					var err error
					if server, err = remoteServer(cfg, path, rest[0]); err != nil {
						return err
					}
				default:
					return usagef("auth login needs the name of one server, or --url")
				}
				if client != (config.OAuthConfig{}) {
					server.OAuth = &client
				}
				return authLogin(ctx, e, store, server, !*noBrowser)
			case "logout":
				if len(rest) != 1 {
					return usagef("auth logout needs the name of one server")
				}
				if *person != "" && *everyone {
					return usagef("--person and --everyone go one at a time")
				}
				who := *person
				if *everyone {
					who = "*"
				}
				return authLogout(e, store, rest[0], who)
			case "status":
				if len(rest) > 0 {
					return usagef("unexpected arguments: %v", rest)
				}
				return authStatus(e, store, cfg, *asJSON)
			default:
				return usagef("unknown auth command %q (want login, status or logout)%s", sub, didYouMean(sub, []string{"login", "status", "logout"}))
			}
		}
	},
}

// remoteServer returns the configuration of a remote server by name
// from cfg, the configuration read from path (nil when there is none).
func remoteServer(cfg *config.Config, path, name string) (*config.ServerConfig, error) {
	if cfg == nil {
		return nil, usagef("no configuration: pass --config FILE or set $%s", envConfig)
	}
	cfgs := cfg.Servers
	var names []string
	for i := range cfgs {
		if cfgs[i].Name == name {
			if cfgs[i].URL == "" {
				return nil, usagef("server %q is not a remote server (it has no \"url\"); only remote servers sign in", name)
			}
			return &cfgs[i], nil
		}
		names = append(names, cfgs[i].Name)
	}
	return nil, usagef("no server %q in %s%s", name, path, didYouMean(name, names))
}

func authLogin(ctx context.Context, e *env, store *signin.Store, cfg *config.ServerConfig, browser bool) error {
	ctx, cancel := context.WithTimeout(ctx, loginWait)
	defer cancel()
	// A key that opens none of the store's sign-ins is most likely the
	// wrong one (another fleet's, a laptop's): what it sealed, the fleet
	// could not read.
	if recs, bad, err := store.ListAll(); err != nil {
		return err
	} else if len(recs) == 0 && len(bad) > 0 {
		return usagef("the store key ($%s) opens none of the %d sign-ins in %s: it is not this fleet's key (%s). Give the fleet's key, or rotate it (toolshelf store rotate-key)", envStoreKey, len(bad), store.Where(), bad[0].Reason)
	}
	if o := cfg.OAuth; o != nil && o.Grant == config.GrantClientCredentials {
		// Machine to machine: nothing to sign in to or keep; check that the
		// credentials are taken.
		if o.ClientID == "" || o.ClientSecret == "" {
			return usagef("the client_credentials grant needs a client id and secret")
		}
		if err := signin.Check(ctx, cfg.URL, cfg.Headers, signin.ClientCredentials(o.ClientID, o.ClientSecret)); err != nil {
			return fmt.Errorf("server %s: the client credentials were not accepted: %v", cfg.Name, err)
		}
		fmt.Fprintf(e.stdout, "%s takes the client credentials; serve gets its tokens itself.\n", cfg.Name)
		return nil
	}
	opts := &signin.LoginOptions{
		Headers: cfg.Headers,
		SSE:     cfg.Type == "sse",
		Open: func(ctx context.Context, url string) error {
			fmt.Fprintf(e.stderr, "To sign in to %s, open:\n\n  %s\n\nWaiting for the browser to come back (up to %v)...\n", cfg.Name, url, loginWait)
			if browser {
				openBrowser(e, url)
			}
			return nil
		},
	}
	if o := cfg.OAuth; o != nil {
		opts.ClientID, opts.ClientSecret, opts.ClientMetadataURL = o.ClientID, o.ClientSecret, o.ClientMetadataURL
	}
	rec, err := signin.Login(ctx, store, cfg.Name, cfg.URL, opts)
	if errors.Is(err, signin.ErrNotAsked) {
		fmt.Fprintf(e.stdout, "%s does not ask for sign-in: it served its tools without a token. Nothing to keep.\n", cfg.Name)
		return nil
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return fmt.Errorf("%v (no browser came back within %v)", err, loginWait)
		}
		return err
	}
	fmt.Fprintf(e.stdout, "Signed in to %s%s; the token is kept in %s.\n", cfg.Name, expiryNote(rec), store.Where())
	return nil
}

// openBrowser opens url with $BROWSER, else xdg-open or open, if there is
// one; the URL is printed either way.
func openBrowser(e *env, url string) {
	var cmd *exec.Cmd
	if b := e.getenv("BROWSER"); b != "" {
		cmd = exec.Command(b, url)
	} else {
		for _, name := range []string{"xdg-open", "open"} {
			if p, err := exec.LookPath(name); err == nil {
				cmd = exec.Command(p, url)
				break
			}
		}
	}
	if cmd == nil {
		return
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(e.stderr, "(could not open a browser: %v)\n", err)
		return
	}
	go cmd.Wait()
}

func expiryNote(r *signin.Record) string {
	if r.Expiry.IsZero() {
		return ""
	}
	note := fmt.Sprintf(" until %s", r.Expiry.Local().Format(time.DateTime))
	if r.RefreshToken != "" {
		note += " (refreshed automatically)"
	}
	return note
}

// authLogout forgets sign-ins of a server: the gateway's own (who empty),
// a person's, or every one (who "*").
func authLogout(e *env, store *signin.Store, name, who string) error {
	n, err := store.DeletePerson(name, who)
	if err != nil {
		return err
	}
	whose := ""
	switch who {
	case "":
	case "*":
		whose = " (every sign-in)"
	default:
		whose = " for " + who
	}
	if n == 0 {
		fmt.Fprintf(e.stdout, "%s was not signed in%s.\n", name, whose)
		return nil
	}
	fmt.Fprintf(e.stdout, "Signed out of %s%s.\n", name, whose)
	if who == "*" {
		fmt.Fprintf(e.stdout, "%d sign-ins forgotten.\n", n)
	}
	return nil
}

// authEntry is one line of auth status. Its JSON form is stable.
type authEntry struct {
	Server string `json:"server"`
	// Person is the subject whose sign-in this is; empty for the
	// gateway's own.
	Person string `json:"person,omitempty"`
	URL    string `json:"url,omitempty"`
	State  string `json:"state"` // signed-in, expired, not-signed-in, unreadable
	// Why says why a sign-in is unreadable.
	Why        string    `json:"why,omitempty"`
	Expiry     time.Time `json:"expiry,omitzero"`
	Refreshing bool      `json:"refreshable"`
	Scopes     []string  `json:"scopes,omitempty"`
}

func authStatus(e *env, store *signin.Store, cfg *config.Config, asJSON bool) error {
	recs, bad, err := store.ListAll()
	if err != nil {
		return err
	}
	var entries []authEntry
	seen := map[string]bool{}
	add := func(name, url string) {
		entry := authEntry{Server: name, URL: url, State: "not-signed-in"}
		for _, r := range recs {
			if r.Server == name && r.Subject == "" && (url == "" || r.Resource == url) {
				entry.URL, entry.Expiry, entry.Scopes, entry.Refreshing = r.Resource, r.Expiry, r.Scopes, r.RefreshToken != ""
				entry.State = "signed-in"
				if !r.Expiry.IsZero() && time.Now().After(r.Expiry) {
					entry.State = "expired"
				}
			}
		}
		seen[name] = true
		entries = append(entries, entry)
	}
	if cfg != nil {
		for _, c := range cfg.Servers {
			if c.URL != "" {
				add(c.Name, c.URL)
			}
		}
	}
	for _, r := range recs {
		if !seen[r.Server] {
			add(r.Server, "")
		}
	}
	// Each person's sign-in, after the gateway's own of its server.
	for _, r := range recs {
		if r.Subject == "" {
			continue
		}
		entry := authEntry{Server: r.Server, Person: r.Subject, URL: r.Resource, State: "signed-in", Expiry: r.Expiry, Scopes: r.Scopes, Refreshing: r.RefreshToken != ""}
		if !r.Expiry.IsZero() && time.Now().After(r.Expiry) {
			entry.State = "expired"
		}
		i := len(entries)
		for j, en := range entries {
			if en.Server == r.Server {
				i = j + 1
			}
		}
		entries = slices.Insert(entries, i, entry)
	}
	// The rows that cannot be read are listed, each alone: they hide
	// none of the others.
	for _, u := range bad {
		entries = append(entries, authEntry{Server: u.Key.Server, Person: u.Key.Subject, URL: u.Key.Resource, State: "unreadable", Why: u.Reason})
	}
	if asJSON {
		if entries == nil {
			entries = []authEntry{}
		}
		return writeJSON(e.stdout, entries)
	}
	if len(entries) == 0 {
		fmt.Fprintln(e.stdout, "No remote servers are configured, and none is signed in.")
		return nil
	}
	tw := tabwriter.NewWriter(e.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tPERSON\tSTATE\tEXPIRES\tSCOPES")
	for _, en := range entries {
		expires := "-"
		if !en.Expiry.IsZero() {
			expires = en.Expiry.Local().Format(time.DateTime)
			if en.Refreshing {
				expires += " (refreshable)"
			}
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", en.Server, cmp.Or(en.Person, "(gateway)"), en.State, expires, strings.Join(en.Scopes, " "))
	}
	tw.Flush()
	for _, en := range entries {
		if en.State == "unreadable" {
			fmt.Fprintf(e.stdout, "\n%s: %s\n", en.Server, en.Why)
		}
	}
	for _, en := range entries {
		if en.State != "signed-in" && en.State != "unreadable" && en.Person == "" {
			fmt.Fprintf(e.stdout, "\nSign in with: toolshelf auth login SERVER\n")
			break
		}
	}
	return nil
}
