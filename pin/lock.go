package pin

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
)

// FileName is the lock file's name, beside the configuration file.
const FileName = "toolshelf.lock"

// Beside returns the lock file that goes with a configuration file.
func Beside(configFile string) string {
	return filepath.Join(filepath.Dir(configFile), FileName)
}

// Trust says what happens to a tool seen for the first time.
type Trust string

const (
	// TrustOnFirstUse pins a new tool's definition and lets it be used.
	TrustOnFirstUse Trust = "on-first-use"
	// TrustServerFirstUse pins a server's tools the first time the
	// server lists them; a tool it adds later (a renamed tool is one)
	// waits for a person's approval.
	TrustServerFirstUse Trust = "server-first-use"
	// TrustApprove holds a new tool until a person approves it.
	TrustApprove Trust = "approve"
)

// ParseTrust reads the "trust" setting; empty is TrustOnFirstUse.
func ParseTrust(s string) (Trust, error) {
	switch t := Trust(s); t {
	case "":
		return TrustOnFirstUse, nil
	case TrustOnFirstUse, TrustServerFirstUse, TrustApprove:
		return t, nil
	}
	return "", fmt.Errorf(`"trust" must be %q, %q or %q, not %q`, TrustOnFirstUse, TrustServerFirstUse, TrustApprove, s)
}

// What Judge decides about a tool.
const (
	Trusted = "trusted" // its definition is the one pinned (or was just pinned)
	New     = "new"     // never seen, and trust is "approve" (or the server's tools were pinned before, under "server-first-use")
	Changed = "changed" // its definition differs from the one pinned
	Risky   = "risky"   // new or changed, and flagged as possible tool poisoning
	Denied  = "denied"  // a person denied it (toolshelf tools deny)
)

// Verdict is what Judge decides about one tool.
type Verdict struct {
	Status string
	// Why says, for a tool that is not trusted, what is wrong, in words
	// for a person.
	Why string
	// Pinned is the definition approved before, if there is one.
	Pinned Definition
	// Added reports that Judge pinned the tool just now (trust on first
	// use); Save writes it.
	Added bool
	// Later reports a tool that appeared on its server after the
	// server's tools were first pinned: under on-first-use it is pinned
	// but shown as new (doctor, tools diff) until a person approves it.
	Later bool
}

// OK reports whether the tool may be used.
func (v Verdict) OK() bool { return v.Status == Trusted }

// entry is one tool in the lock file.
type entry struct {
	SHA256 string `json:"sha256"`
	Denied bool   `json:"denied,omitempty"`
	// Later marks a tool pinned on first use after its server's first
	// tools were: no person has looked at it (see Verdict.Later).
	Later      bool            `json:"later,omitempty"`
	Definition json.RawMessage `json:"definition"`
}

// fileJSON is the lock file.
type fileJSON struct {
	Version int                         `json:"version"`
	Servers map[string]map[string]entry `json:"servers"`
}

// lockVersion is the lock file format's version.
const lockVersion = 1

// Lock is a lock file's pins, loaded in memory. Changes (tools pinned on
// first use, approvals, denials) are kept until Save, which merges them
// into the file as it is on disk then: two toolshelf processes that pin
// different tools lose neither. It is safe for concurrent use.
type Lock struct {
	st storage
	// trust is the configuration's "trust", which SetTrust changes.
	trust atomic.Pointer[Trust]

	mu      sync.Mutex
	pins    map[string]map[string]entry
	changes map[[2]string]*entry // nil entry: removed
	version string               // the pins' version as last read or written
	// known are the servers the file had pins for when last read or
	// written: a tool new to one of them appeared after its first pin.
	known map[string]bool
}

// storage is where a lock's pins are kept: the lock file (lockFile), or
// a PostgreSQL store that replicas share (sharedPins).
type storage interface {
	// load reads every pin, with their version.
	load() (pins map[string]map[string]entry, version string, err error)
	// current is the version now, cheaply: a change by another process
	// changes it.
	current() (string, error)
	// save applies merge to the pins as they are now, in one step no
	// other save interleaves with, and returns the result and its version.
	save(merge func(map[string]map[string]entry)) (pins map[string]map[string]entry, version string, err error)
	where() string
}

// Open reads the lock file at path; a missing file is an empty lock. A
// malformed file is an error that names the line.
func Open(path string, trust Trust) (*Lock, error) {
	return open(&lockFile{path: path}, trust)
}

func open(st storage, trust Trust) (*Lock, error) {
	l := &Lock{st: st, pins: map[string]map[string]entry{}, changes: map[[2]string]*entry{}}
	l.SetTrust(trust)
	pins, version, err := st.load()
	if err != nil {
		return nil, err
	}
	l.pins, l.version, l.known = pins, version, serversOf(pins)
	return l, nil
}

// lockFile keeps the pins in the lock file.
type lockFile struct{ path string }

func (f *lockFile) where() string { return f.path }

func (f *lockFile) load() (map[string]map[string]entry, string, error) {
	pins, stamp, err := read(f.path)
	return pins, stamp.String(), err
}

func (f *lockFile) current() (string, error) {
	fi, err := os.Stat(f.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	var stamp fileStamp
	if err == nil {
		stamp = fileStamp{fi.Size(), fi.ModTime()}
	}
	return stamp.String(), nil
}

// save merges under the folder's lock: another process may save between
// this one's read and rename, and the lock makes read, merge and rename
// one step.
func (f *lockFile) save(merge func(map[string]map[string]entry)) (map[string]map[string]entry, string, error) {
	dir := filepath.Dir(f.path)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, "", err
	}
	unlock, err := lockDir(dir)
	if err != nil {
		return nil, "", fmt.Errorf("the lock file was not saved: locking %s: %w", dir, err)
	}
	defer unlock()
	pins, _, err := read(f.path)
	if err != nil {
		return nil, "", fmt.Errorf("the lock file was not saved: %w", err)
	}
	merge(pins)
	data, err := json.MarshalIndent(fileJSON{Version: lockVersion, Servers: pins}, "", "  ")
	if err != nil {
		return nil, "", err
	}
	data = append(data, '\n')
	if err := writeFile(f.path, data); err != nil {
		return nil, "", err
	}
	v, _ := f.current()
	return pins, v, nil
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func (s fileStamp) String() string { return fmt.Sprintf("%d.%d", s.size, s.mod.UnixNano()) }

// serversOf returns the servers a file's pins name.
func serversOf(pins map[string]map[string]entry) map[string]bool {
	known := make(map[string]bool, len(pins))
	for s, tools := range pins {
		known[s] = len(tools) > 0
	}
	return known
}

// Path returns the lock file's path.
func (l *Lock) Path() string { return l.st.where() }

// Trust returns what happens to new tools.
func (l *Lock) Trust() Trust { return *l.trust.Load() }

// SetTrust changes the trust that Judge judges new and changed tools by,
// from its next judgement (a change of the configuration); "" is
// TrustOnFirstUse.
func (l *Lock) SetTrust(t Trust) {
	if t == "" {
		t = TrustOnFirstUse
	}
	l.trust.Store(&t)
}

// read loads and checks a lock file.
func read(path string) (map[string]map[string]entry, fileStamp, error) {
	pins := map[string]map[string]entry{}
	fi, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return pins, fileStamp{}, nil
	}
	if err != nil {
		return nil, fileStamp{}, err
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fileStamp{}, err
	}
	stamp := fileStamp{fi.Size(), fi.ModTime()}
	if len(bytes.TrimSpace(data)) == 0 {
		return pins, stamp, nil
	}
	ferr := func(offset int, format string, args ...any) error {
		return catalog.ErrorAt(path, data, offset, fmt.Errorf(format, args...))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f fileJSON
	if err := dec.Decode(&f); err != nil {
		var syn *json.SyntaxError
		var typ *json.UnmarshalTypeError
		switch {
		case errors.As(err, &syn):
			return nil, stamp, ferr(int(syn.Offset), "invalid JSON: %v", err)
		case errors.As(err, &typ):
			return nil, stamp, ferr(int(typ.Offset), "%q has the wrong type: want %v, got a JSON %s", typ.Field, typ.Type, typ.Value)
		}
		return nil, stamp, ferr(int(dec.InputOffset()), "%v", err)
	}
	if f.Version != lockVersion {
		return nil, stamp, ferr(catalog.KeyOffset(data, 0, "version"), "version %d is not one this toolshelf reads (want %d)", f.Version, lockVersion)
	}
	for _, server := range slices.Sorted(maps.Keys(f.Servers)) {
		at := catalog.KeyOffset(data, 0, server)
		for _, tool := range slices.Sorted(maps.Keys(f.Servers[server])) {
			e := f.Servers[server][tool]
			where := catalog.KeyOffset(data, max(at, 0), tool)
			def, err := Canonical(e.Definition)
			if err != nil {
				return nil, stamp, ferr(where, "server %q, tool %q: %v", server, tool, err)
			}
			if name := def.Fields()["name"]; string(name) != quote(tool) {
				return nil, stamp, ferr(where, "server %q, tool %q: the definition's name is %s", server, tool, name)
			}
			if def.Hash() != e.SHA256 {
				return nil, stamp, ferr(where, "server %q, tool %q: sha256 does not match the definition (edited by hand? approve the tool again with toolshelf tools approve %s/%s)", server, tool, server, tool)
			}
			e.Definition = json.RawMessage(def)
			if pins[server] == nil {
				pins[server] = map[string]entry{}
			}
			pins[server][tool] = e
		}
	}
	return pins, stamp, nil
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// Judge decides whether a tool, as its server lists it now, may be used.
// risk, when set, says why the tool looks like tool poisoning ("" when it
// does not): a new or changed tool with a risk is quarantined whatever the trust
// setting. It is asked only for such a tool, since the check reads every
// text of the definition and a pool judges every tool at every publish.
// Under trust on first use a new tool is pinned (in memory until Save).
func (l *Lock) Judge(server, tool string, def Definition, risk func() string) Verdict {
	return l.JudgeAs(l.Trust(), server, tool, def, risk)
}

// JudgeAs is Judge under a trust setting of the server's own (a server
// added from a registry is held until approved: "trust": "approve" in
// its configuration), whatever the lock's.
func (l *Lock) JudgeAs(trust Trust, server, tool string, def Definition, risk func() string) Verdict {
	l.mu.Lock()
	defer l.mu.Unlock()
	p, ok := l.pins[server][tool]
	switch {
	case ok && p.Denied:
		return Verdict{Status: Denied, Why: "denied in " + FileName, Pinned: Definition(p.Definition)}
	case ok && p.SHA256 == def.Hash():
		return Verdict{Status: Trusted}
	}
	if why := callRisk(risk); why != "" {
		return Verdict{Status: Risky, Why: "flagged as possible tool poisoning: " + why, Pinned: Definition(p.Definition)}
	}
	switch {
	case ok:
		return Verdict{Status: Changed, Why: "its definition changed since it was approved (" + changedFields(Definition(p.Definition), def) + ")", Pinned: Definition(p.Definition)}
	case trust == TrustApprove:
		return Verdict{Status: New, Why: `new, and "trust" is "approve"`}
	case l.known[server] && trust == TrustServerFirstUse:
		return Verdict{Status: New, Why: `new on a server whose tools were pinned before (a renamed or added tool), and "trust" is "server-first-use"`}
	}
	later := l.known[server]
	l.setLocked(server, tool, &entry{SHA256: def.Hash(), Later: later, Definition: json.RawMessage(def)})
	return Verdict{Status: Trusted, Added: true, Later: later}
}

// IsLater reports whether a server's tool is one Later lists: trusted on
// first use after the server's tools were pinned, not yet approved.
func (l *Lock) IsLater(server, tool string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	e, ok := l.pins[server][tool]
	return ok && e.Later && !e.Denied
}

// Later returns the tools of a server pinned on first use after the
// server's first tools were, that no person has approved since: tools to
// look at, as a renamed tool may be a rug pull.
func (l *Lock) Later(server string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for tool, e := range l.pins[server] {
		if e.Later && !e.Denied {
			out = append(out, tool)
		}
	}
	slices.Sort(out)
	return out
}

// callRisk asks risk, if there is one.
func callRisk(risk func() string) string {
	if risk == nil {
		return ""
	}
	return risk()
}

// Approve pins a tool's current definition, lifting a denial.
func (l *Lock) Approve(server, tool string, def Definition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(server, tool, &entry{SHA256: def.Hash(), Definition: json.RawMessage(def)})
}

// Deny keeps a tool out whatever its definition, until it is approved.
// def is kept as the definition denied.
func (l *Lock) Deny(server, tool string, def Definition) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.setLocked(server, tool, &entry{SHA256: def.Hash(), Denied: true, Definition: json.RawMessage(def)})
}

// Pinned returns the definitions pinned for a server, by tool name, and
// which of them are denied.
func (l *Lock) Pinned(server string) (defs map[string]Definition, denied map[string]bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	defs, denied = map[string]Definition{}, map[string]bool{}
	for tool, e := range l.pins[server] {
		defs[tool] = Definition(e.Definition)
		if e.Denied {
			denied[tool] = true
		}
	}
	return defs, denied
}

func (l *Lock) setLocked(server, tool string, e *entry) {
	if l.pins[server] == nil {
		l.pins[server] = map[string]entry{}
	}
	l.pins[server][tool] = *e
	l.changes[[2]string{server, tool}] = e
}

// Dirty reports whether there are changes that Save has not written.
func (l *Lock) Dirty() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.changes) > 0
}

// Save writes the changes made since the last Save into the lock file,
// over what the file holds now, and replaces the file in one step.
func (l *Lock) Save() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.changes) == 0 {
		return nil
	}
	pins, version, err := l.st.save(func(pins map[string]map[string]entry) {
		for k, e := range l.changes {
			if pins[k[0]] == nil {
				pins[k[0]] = map[string]entry{}
			}
			pins[k[0]][k[1]] = *e
		}
	})
	if err != nil {
		return err
	}
	l.pins, l.known, l.version = pins, serversOf(pins), version
	clear(l.changes)
	return nil
}

// Reload reads the lock file again if it changed on disk since it was
// last read or written (an approval from the command line while the
// gateway runs), keeping unsaved changes. It reports whether it did. A
// malformed file is an error and changes nothing.
func (l *Lock) Reload() (bool, error) {
	now, err := l.st.current()
	if err != nil {
		return false, err
	}
	l.mu.Lock()
	same := now == l.version
	l.mu.Unlock()
	if same {
		return false, nil
	}
	pins, version, err := l.st.load()
	if err != nil {
		return false, err
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.known = serversOf(pins)
	for k, e := range l.changes {
		if pins[k[0]] == nil {
			pins[k[0]] = map[string]entry{}
		}
		pins[k[0]][k[1]] = *e
	}
	l.pins, l.version = pins, version
	return true, nil
}

// writeFile replaces path with data atomically: a reader sees the old
// file or the new one, never half of one.
func writeFile(path string, data []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".toolshelf.lock.*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	// On disk before the rename: a crash must leave the old file or the
	// whole new one, not an empty one.
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	syncDir(filepath.Dir(path))
	return nil
}

// Copy writes every pin, approval and denial of src into dst (a lock file
// into a shared store, or back), over what dst has for the same tools,
// and returns how many it copied.
func Copy(dst, src *Lock) (int, error) {
	src.mu.Lock()
	n := 0
	dst.mu.Lock()
	for server, tools := range src.pins {
		for tool, e := range tools {
			e := e
			dst.changes[[2]string{server, tool}] = &e
			n++
		}
	}
	for k, e := range src.changes {
		if e != nil {
			c := *e
			dst.changes[k] = &c
		}
	}
	dst.mu.Unlock()
	src.mu.Unlock()
	return n, dst.Save()
}
