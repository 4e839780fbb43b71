package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/gateway"
	"github.com/toolshelf/toolshelf/shelf"
)

// configPoll is how often serve looks at its configuration file. A change
// is taken once two looks in a row read the same bytes: an editor's save
// (written in pieces, or a new file renamed over the old) has settled.
const configPoll = 300 * time.Millisecond

// configFollower follows serve's configuration file, and the secret files
// it names (${file:PATH}), while serve runs: a change that loads is
// applied, one that does not changes nothing and is said at WARN with
// what is wrong and where, and reported (the pool's ConfigRefused, the
// state folder's note for add and remove).
type configFollower struct {
	path  string
	parse func(data []byte) (*config.Config, error)
	// apply makes what serve serves the configuration's; it returns the
	// parts that changed and are read only at start (unapplied).
	apply func(*config.Config) []string
	// report, when set, hears of every change handled: the fingerprint
	// applied, or the one refused and why.
	report func(followed)
	logger *slog.Logger
	poll   time.Duration
}

// followed is what a follower did with the configuration it read last.
type followed struct {
	// Applied is the fingerprint of the configuration served (see
	// configPrint); Refused that of a change that did not load, and Err
	// why, while the file holds it.
	Applied, Refused string
	Err              error
	// Unapplied names the parts of the configuration served that
	// changed and wait for a restart of serve (see unapplied).
	Unapplied []string
}

// run follows the file until ctx is done. Its first look applies the file
// as it is then (nothing changes when it is what serve started with): a
// secret file it names may have changed since serve read it.
func (f *configFollower) run(ctx context.Context) {
	poll := f.poll
	if poll == 0 {
		poll = configPoll
	}
	var st followed
	// The files the configuration names, read again only when its bytes
	// change: most looks find it as it was.
	var data []byte
	var refs []string
	tick := time.NewTicker(poll)
	defer tick.Stop()
	seen := "" // the fingerprint of the last look, not handled yet
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(f.path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // between an editor's removal and its rename
		}
		if err != nil {
			continue
		}
		// Read before the parse: a secret file that changes while it
		// is parsed is seen changed at the next look.
		if !bytes.Equal(b, data) {
			data, refs = b, config.FileRefs(b, f.path)
		}
		fp := configPrint(b, refs)
		if fp == st.Applied {
			seen = ""
			if st.Refused != "" {
				// Put back as it is served: nothing is refused now.
				st.Refused, st.Err = "", nil
				f.said(st)
			}
			continue
		}
		// A change is read once it has settled. One refused is read again
		// at every look: a file it names may have come since.
		if fp != st.Refused && fp != seen {
			seen = fp
			continue
		}
		seen = ""
		next, err := f.parse(b)
		if err != nil {
			if fp != st.Refused || err.Error() != st.Err.Error() {
				f.logger.Warn("the configuration's change does not load; serving it as it was", "file", f.path, "error", err)
			}
			st.Refused, st.Err = fp, err
			f.said(st)
			continue
		}
		st = followed{Applied: fp, Unapplied: f.apply(next)}
		f.said(st)
	}
}

func (f *configFollower) said(st followed) {
	if f.report != nil {
		f.report(st)
	}
}

// configPrint is the fingerprint of a configuration: its bytes and those
// of the secret files it names (config.FileRefs), so that a new token in
// a file restarts the servers given it.
func configPrint(data []byte, files []string) string {
	h := sha256.New()
	h.Write([]byte(strconv.Itoa(len(data)) + ":"))
	h.Write(data)
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			b = []byte("\x00unreadable")
		}
		h.Write([]byte("\x00" + name + "\x00" + strconv.Itoa(len(b)) + ":"))
		h.Write(b)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// applyConfig makes what serve serves a configuration's: its servers
// started, stopped and restarted (upstream.Pool.Reconfigure) while the
// others serve on, its profiles' tools and the gateways' settings changed
// in place (gateway.Host.Apply). It returns the parts of the
// configuration that changed since serve started and wait for a restart.
func applyConfig(host *gateway.Host, started, cfg *config.Config, logger *slog.Logger) []string {
	logger = logger.With("component", "config")
	ch := host.Pool().Reconfigure(cfg.Servers)
	if !ch.Empty() {
		logger.Info("the configuration changed: servers follow it",
			"added", strings.Join(ch.Added, ","), "removed", strings.Join(ch.Removed, ","), "restarted", strings.Join(ch.Restarted, ","))
	}
	host.Pool().SetTrust(cfg.Trust) // new and changed tools judged by it at once
	if !reflect.DeepEqual(started.Profiles, cfg.Profiles) {
		logger.Info("the configuration changed: profiles follow it (their tools, tokens and claims)", "profiles", len(cfg.Profiles))
	}
	var claims map[string][]string
	if cfg.Identity != nil {
		claims = cfg.Identity.Claims
	}
	parts := host.Apply(cfg.Profiles, claims, gateway.Settings{Results: shelf.Form(cfg.Search.Results), Budget: cfg.Search.Budget, Groups: cfg.Groups})
	parts = append(parts, unapplied(started, cfg)...)
	if len(parts) > 0 {
		logger.Warn("the configuration changed parts that serve reads at start: they take effect when it restarts", "parts", strings.Join(parts, ", "))
	}
	return parts
}

// providerOf is the identity provider a configuration names and who may
// use the console with it: what a restart applies of "identity" (its
// "claims" open /mcp, which Host.Apply applies in place).
func providerOf(c *config.Config) any {
	if c.Identity == nil {
		return nil
	}
	id := *c.Identity
	id.Claims = nil
	return id
}

// unapplied names the parts of the configuration, other than its
// servers, profiles, groups, search settings and trust, that differ between what
// serve started with and now. They are read once, by the parts of serve
// built at start (the identity provider, the store, learning, the rules'
// files).
func unapplied(started, now *config.Config) []string {
	var parts []string
	for _, p := range []struct {
		name     string
		was, now any
	}{
		{"identity", providerOf(started), providerOf(now)},
		{"store", started.Store, now.Store},
		{"learn", started.NoLearn, now.NoLearn},
		{"policies", started.Policies, now.Policies},
	} {
		if !reflect.DeepEqual(p.was, p.now) {
			parts = append(parts, p.name)
		}
	}
	return parts
}
