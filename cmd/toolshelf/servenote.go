package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolshelf/toolshelf/config"
	"github.com/toolshelf/toolshelf/learn"
)

// serveNote is what a running serve says of the configuration file it
// serves, kept in the state folder while it runs
// (serving/<the file's hash>-<pid>.json): add, remove, update and tools
// approve read it to say whether a running gateway took their change.
type serveNote struct {
	PID    int    `json:"pid"`
	Config string `json:"config"`
	// Follows is false for serve --no-watch.
	Follows bool `json:"follows"`
	// Applied is the fingerprint of the configuration served
	// (configPrint); Refused that of a change that did not load, and
	// Error why (secrets cut).
	Applied string `json:"applied,omitempty"`
	Refused string `json:"refused,omitempty"`
	Error   string `json:"error,omitempty"`
	// Unapplied names the parts changed that wait for a restart.
	Unapplied []string `json:"unapplied,omitempty"`
}

// takeWait bounds how long a command waits for a running gateway to take
// its change: a few looks of the follower and a server's stop.
const takeWait = 15 * time.Second

// servingDir is the folder of the running serves' notes, "" without a
// state folder.
func servingDir(e *env) string {
	p := learn.DefaultPath(e.getenv)
	if p == "" {
		return ""
	}
	return filepath.Join(filepath.Dir(p), "serving")
}

// notePrefix is the start of the notes' names of serves of a
// configuration file.
func notePrefix(file string) string {
	if abs, err := filepath.Abs(file); err == nil {
		file = abs
	}
	h := sha256.Sum256([]byte(file))
	return hex.EncodeToString(h[:8]) + "-"
}

// noteKeeper writes this serve's note; its methods do nothing without a
// state folder.
type noteKeeper struct {
	path string
	note serveNote
}

func newNoteKeeper(e *env, file string, follows bool) *noteKeeper {
	dir := servingDir(e)
	if dir == "" {
		return &noteKeeper{}
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	return &noteKeeper{
		path: filepath.Join(dir, notePrefix(file)+strconv.Itoa(os.Getpid())+".json"),
		note: serveNote{PID: os.Getpid(), Config: abs, Follows: follows},
	}
}

// keep writes the note as st says: the fingerprint applied, or the one
// refused and why. A note that cannot be written is left: the commands
// then say that no gateway is known to serve the file.
func (k *noteKeeper) keep(st followed, why string) {
	if k.path == "" {
		return
	}
	k.note.Applied, k.note.Refused, k.note.Error, k.note.Unapplied = st.Applied, st.Refused, why, st.Unapplied
	b, _ := json.Marshal(k.note)
	if err := os.MkdirAll(filepath.Dir(k.path), 0o700); err != nil {
		return
	}
	_ = writeAtomic(k.path, b, 0o600)
}

// remove removes the note, when serve ends.
func (k *noteKeeper) remove() {
	if k.path != "" {
		os.Remove(k.path)
	}
}

// writeAtomic replaces path with data: a reader sees the old file or the
// new one, never half of one.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Chmod(mode); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// runningServes returns the notes of the serves of a configuration file
// that are running; the notes of serves that are gone are removed.
func runningServes(e *env, file string) []serveNote {
	dir := servingDir(e)
	if dir == "" {
		return nil
	}
	names, _ := filepath.Glob(filepath.Join(dir, notePrefix(file)+"*.json"))
	var out []serveNote
	for _, name := range names {
		b, err := os.ReadFile(name)
		var n serveNote
		if err != nil || json.Unmarshal(b, &n) != nil || n.PID <= 0 {
			continue
		}
		if processGone(n.PID) {
			os.Remove(name) // a serve that was killed left it
			continue
		}
		out = append(out, n)
	}
	return out
}

// tookChange says whether the running serves of a configuration file took
// its change: each one's verdict on the file as it is now, once it has
// one (up to takeWait), or that none runs.
func tookChange(ctx context.Context, e *env, file string) string {
	serves := runningServes(e, file)
	if len(serves) == 0 {
		return "no gateway is serving " + file + " now: the next serve takes the change"
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return ""
	}
	want := configPrint(data, config.FileRefs(data, file))
	deadline := time.Now().Add(takeWait)
	var said []string
	for _, n := range serves {
		for n.Follows && !(n.Applied == want && n.Refused == "") && n.Refused != want && time.Now().Before(deadline) && ctx.Err() == nil {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			for _, m := range runningServes(e, file) {
				if m.PID == n.PID {
					n = m
				}
			}
		}
		switch {
		case !n.Follows:
			said = append(said, fmt.Sprintf("the gateway running as pid %d does not follow its configuration (serve --no-watch): restart it to take the change", n.PID))
		case n.Applied == want && n.Refused == "" && len(n.Unapplied) > 0:
			said = append(said, fmt.Sprintf("the gateway running as pid %d took the change of its servers; its %s change when it restarts", n.PID, strings.Join(n.Unapplied, ", ")))
		case n.Applied == want && n.Refused == "":
			said = append(said, fmt.Sprintf("the gateway running as pid %d took the change", n.PID))
		case n.Refused == want:
			said = append(said, fmt.Sprintf("the gateway running as pid %d refused the change and serves the configuration as it was: %s", n.PID, n.Error))
		default:
			said = append(said, fmt.Sprintf("the gateway running as pid %d has not taken the change after %s: see its log", n.PID, takeWait))
		}
	}
	return strings.Join(said, "\n")
}
