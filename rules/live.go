package rules

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"
)

// Live is a set of rules that follows its files: Watch reads them again
// when they change, and a change that does not load keeps the last good
// set and says why in the log.
type Live struct {
	paths []string
	cur   atomic.Pointer[Set]
	stamp string // the files' names, sizes and times when last read
	seen  string // what they were at the last look (see settled)
	// counts are the limits' counts, kept across reloads.
	counts *counters
	// share, when set, says among how many replicas a limit is shared
	// (SetShare).
	share atomic.Pointer[func() int]
}

// SetShare makes every limit a fleet's: each replica counts its share,
// the limit divided by replicas() (rounded down, at least one), so that
// the fleet as a whole keeps within the limit without a round trip to the
// store on each call. A limit smaller than the fleet is the exception:
// each replica still lets one call through.
func (l *Live) SetShare(replicas func() int) { l.share.Store(&replicas) }

// Open loads the rules of paths (see Load) and returns them live.
func Open(paths ...string) (*Live, error) {
	s, err := Load(paths...)
	if err != nil {
		return nil, err
	}
	st := stamp(paths)
	l := &Live{paths: paths, stamp: st, seen: st, counts: newCounters()}
	l.cur.Store(s)
	return l, nil
}

// Admit counts a permitted call against the limits in force (see Set);
// release is to be called when the call ends.
func (l *Live) Admit(r *Request) (release func(), err error) {
	share := 1
	if f := l.share.Load(); f != nil {
		share = max(1, (*f)())
	}
	return l.Current().admit(r, l.counts, time.Now(), share)
}

// Current returns the rules in force.
func (l *Live) Current() *Set { return l.cur.Load() }

// Reload reads the rules again if their files changed, and reports
// whether it did; the error is a change that did not load (the last good
// rules stay).
func (l *Live) Reload() (bool, error) {
	st := stamp(l.paths)
	if st == l.stamp {
		return false, nil
	}
	l.stamp = st
	s, err := Load(l.paths...)
	if err != nil {
		return false, err
	}
	l.cur.Store(s)
	return true, nil
}

// settled reports whether the files have not changed since the last
// look: a file still being written (an editor's save, a copy under way)
// is read only once it has stayed as it is for a look.
func (l *Live) settled() bool {
	st := stamp(l.paths)
	same := st == l.seen
	l.seen = st
	return same
}

// reloadEvery is how often Watch looks at the files.
const reloadEvery = time.Second

// Watch reloads the rules when their files change, until ctx is done,
// and calls changed (if not nil) after each reload.
func (l *Live) Watch(ctx context.Context, logger *slog.Logger, changed func()) {
	t := time.NewTicker(reloadEvery)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		if !l.settled() {
			continue
		}
		old := l.Current()
		reloaded, err := l.Reload()
		if err != nil && logger != nil {
			logger.Warn("the changed rules do not load; the last good ones stay in force", "error", err)
		}
		if reloaded {
			if logger != nil {
				cur := l.Current()
				logger.Info("rules reloaded", "files", strings.Join(cur.Files, ","))
				if dropped := cur.Dropped(old); len(dropped) > 0 {
					logger.Warn("the reload dropped rules", "rules", strings.Join(dropped, "; "))
				}
				for _, w := range cur.Warnings {
					logger.Warn("a rule may not mean what it says", "rule", w)
				}
			}
			if changed != nil {
				changed()
			}
		}
	}
}

// stamp describes the files of paths as they are now.
func stamp(paths []string) string {
	var b strings.Builder
	for _, p := range paths {
		files := []string{p}
		if st, err := os.Stat(p); err == nil && st.IsDir() {
			files, _ = filepath.Glob(filepath.Join(p, "*.cedar"))
		}
		for _, f := range files {
			if st, err := os.Stat(f); err == nil {
				fmt.Fprintf(&b, "%s %d %d\n", f, st.Size(), st.ModTime().UnixNano())
			} else {
				fmt.Fprintf(&b, "%s missing\n", f)
			}
		}
	}
	return b.String()
}
