package main

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/upstream"
)

// configPoll is how often serve looks at its configuration file. A change
// is taken once two looks in a row read the same bytes: an editor's save
// (written in pieces, or a new file renamed over the old) has settled.
const configPoll = 300 * time.Millisecond

// watchConfig follows the configuration file at path while serve runs:
// a change that loads is applied to the pool's servers (started,
// stopped, restarted: upstream.Pool.Reconfigure) while the others serve
// on; one that does not load changes nothing and is said at WARN with
// what is wrong and where. applied are the bytes serve started with.
func watchConfig(ctx context.Context, e *env, path string, applied []byte, pool *upstream.Pool, logger *slog.Logger) {
	logger = logger.With("component", "config", "file", path)
	tick := time.NewTicker(configPoll)
	defer tick.Stop()
	var seen []byte // read at the last look, not applied yet
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			continue // between an editor's removal and its rename
		}
		if err != nil || bytes.Equal(b, applied) {
			seen = nil
			continue
		}
		if !bytes.Equal(b, seen) {
			seen = b // changed since the last look: not settled yet
			continue
		}
		applied, seen = b, nil
		cfg, err := loadConfig(e, path)
		if err != nil {
			logger.Warn("the configuration's change does not load; serving it as it was", "error", err)
			continue
		}
		ch := pool.Reconfigure(cfg.Servers)
		if ch.Empty() {
			logger.Info("the configuration changed; its servers did not (profiles, identity and settings follow a restart of serve)")
			continue
		}
		logger.Info("the configuration changed: servers follow it",
			"added", strings.Join(ch.Added, ","), "removed", strings.Join(ch.Removed, ","), "restarted", strings.Join(ch.Restarted, ","))
	}
}
