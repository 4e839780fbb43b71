package upstream

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/pin"
)

// ErrQuarantined is returned for a call to a tool whose definition is not
// the one pinned (see [Options.Pins]).
var ErrQuarantined = errors.New("tool quarantined")

// Quarantined is a tool kept out of the catalog because its definition is not
// the one pinned: a "rug pull" (changed since approval), a new tool that
// waits for approval, a tool that looks like tool poisoning, or one a
// person denied.
type Quarantined struct {
	Server string `json:"server"`
	Tool   string `json:"tool"`
	// Name is the qualified name the tool has when it is let in.
	Name string `json:"name"`
	// Status is pin.New, pin.Changed, pin.Risky or pin.Denied; Why says
	// it in words.
	Status string `json:"status"`
	Why    string `json:"why"`
	// Pinned is the definition approved before (empty for a new tool);
	// Current is the one the server lists now.
	Pinned  pin.Definition `json:"-"`
	Current pin.Definition `json:"-"`
}

// Message is what a client calling the tool is told: what changed and
// the commands that review and approve it.
func (h *Quarantined) Message() string {
	return fmt.Sprintf("%s of server %s is quarantined: %s. Nothing was called. A person can review it with `toolshelf tools diff %s` and let it in with `toolshelf tools approve %s/%s`.",
		h.Tool, h.Server, h.Why, h.Server, h.Server, h.Tool)
}

// pinReload is how often a running pool looks for changes to the lock
// file made by another process (toolshelf tools approve).
const pinReload = 2 * time.Second

// judge keeps the entries of one server that the lock lets in, and
// returns the others as quarantined. Called by publish, with pubMu and s.mu
// held. Canonical definitions are kept from one publish to the next:
// making them costs 20 ms for 500 tools, and a pool publishes on every
// server's start and change.
func (p *Pool) judge(s *server, es []catalog.Entry) (kept []catalog.Entry, quarantined []Quarantined) {
	// A tool whose definition held a secret (cut from it, see setTools)
	// is held out, with or without a lock file.
	if len(s.secretHeld) > 0 {
		var rest []catalog.Entry
		for _, e := range es {
			if !s.secretHeld[e.Tool] {
				rest = append(rest, e)
				continue
			}
			def, _ := pin.Canonical(e.Raw)
			quarantined = append(quarantined, Quarantined{Server: s.cfg.Name, Tool: e.Tool, Name: qualified(e), Status: pin.Risky,
				Why: "its definition held a secret (toolshelf's or a server's), which was cut from it; a server that puts a secret in a tool's definition is not to be trusted", Current: def})
		}
		es = rest
	}
	if p.opts.Pins == nil {
		return es, quarantined
	}
	for _, e := range es {
		if e.Unverified {
			// Known by name only: nothing to pin, and not callable.
			kept = append(kept, e)
			continue
		}
		def, ok := p.defs[string(e.Raw)]
		if !ok {
			var err error
			if def, err = pin.Canonical(e.Raw); err != nil {
				continue // entries() parsed it; cannot happen
			}
		}
		p.nextDefs[string(e.Raw)] = def
		v := p.judgeTool(s, e.Tool, def, e.Poisoning)
		if v.OK() {
			kept = append(kept, e)
			continue
		}
		quarantined = append(quarantined, Quarantined{Server: s.cfg.Name, Tool: e.Tool, Name: qualified(e), Status: v.Status, Why: v.Why, Pinned: v.Pinned, Current: def})
	}
	return kept, quarantined
}

// qualified is the name a tool has when it is let in.
func qualified(e catalog.Entry) string {
	if e.Unprefixed {
		return e.Tool
	}
	return catalog.Prefix + e.Server + "__" + e.Tool
}

// noteQuarantined logs tools that were quarantined or let in since the
// last publish, keeps the quarantined ones for Quarantined and Status,
// and saves tools pinned on first use. Called by publish, with pubMu
// held.
func (p *Pool) noteQuarantined(now map[string][]Quarantined) {
	if p.opts.Pins == nil && len(now) == 0 && len(p.quarantined) == 0 {
		return
	}
	was := make(map[string]bool)
	for _, hs := range p.quarantined {
		for _, h := range hs {
			was[h.Server+"\x00"+h.Tool+"\x00"+h.Current.Hash()] = true
		}
	}
	for _, server := range slices.Sorted(maps.Keys(now)) {
		for _, h := range now[server] {
			if !was[h.Server+"\x00"+h.Tool+"\x00"+h.Current.Hash()] {
				p.quarantines.Add(1)
				p.logger.Warn("tool quarantined", "server", h.Server, "tool", h.Tool, "status", h.Status, "why", h.Why)
			}
		}
	}
	p.quarantined = now
	if p.opts.Pins == nil {
		return // what secrets held out, without a lock file
	}
	p.defs, p.nextDefs = p.nextDefs, make(map[string]pin.Definition, len(p.nextDefs))
	if p.opts.Pins.Dirty() {
		if err := p.opts.Pins.Save(); err != nil {
			p.logger.Error("cannot save pinned tool definitions", "error", err)
		}
	}
}

// Quarantined returns the tools kept out of the catalog by the lock file, by
// server and tool name.
func (p *Pool) Quarantined() []Quarantined {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	var out []Quarantined
	for _, server := range slices.Sorted(maps.Keys(p.quarantined)) {
		out = append(out, p.quarantined[server]...)
	}
	return out
}

// Rejudge judges every tool against the lock file again and publishes
// the result: call it after approving or denying through the pool's own
// lock in this process (another process's change is seen on its own).
func (p *Pool) Rejudge() {
	if p.opts.Pins != nil {
		p.publish()
	}
}

// Quarantines counts the times a tool was quarantined since the pool started,
// at start-up and at run time (a tools/list_changed that rewrote a tool).
func (p *Pool) Quarantines() int64 { return p.quarantines.Load() }

// quarantinedTool reports whether the lock file holds a server's tool
// back now.
func (p *Pool) quarantinedTool(server, tool string) (Quarantined, bool) {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	for _, h := range p.quarantined[server] {
		if h.Tool == tool {
			return h, true
		}
	}
	return Quarantined{}, false
}

// quarantinedCount returns how many of a server's tools are quarantined.
func (p *Pool) quarantinedCount(server string) int {
	p.pubMu.Lock()
	defer p.pubMu.Unlock()
	return len(p.quarantined[server])
}

// watchPins reloads the lock file when another process changes it, and
// publishes again so that approved tools come in and denied ones go.
func (p *Pool) watchPins(ctx context.Context) {
	t := time.NewTicker(pinReload)
	defer t.Stop()
	var last string // the last error logged, logged once
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := p.opts.Pins.Reload()
		if err != nil {
			if err.Error() != last {
				p.logger.Error("the lock file is not valid; keeping the pins read before", "error", err)
			}
			last = err.Error()
			continue
		}
		last = ""
		if changed {
			p.logger.Info("lock file changed; judging tools again", "file", p.opts.Pins.Path())
			p.publish()
		}
	}
}

// judgeTool judges one of a server's tools (or its apps, or skills) under
// the server's own trust when it has one.
func (p *Pool) judgeTool(s *server, name string, def pin.Definition, risk func() string) pin.Verdict {
	if t := s.cfg.Trust; t != "" {
		return p.opts.Pins.JudgeAs(t, s.cfg.Name, name, def, risk)
	}
	return p.opts.Pins.Judge(s.cfg.Name, name, def, risk)
}
