package pin

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"

	"github.com/toolshelf/toolshelf/store"
)

// Shared is a store that keeps pins for several replicas, and counts
// the changes it hears of (store.DB is one).
type Shared interface {
	store.Pins
	Changes(store.Kind) uint64
	Where() string
}

// OpenShared returns the pins kept in a store that replicas share (serve
// --store): an approval or a denial through one replica is seen by every
// other once its store's feed tells of it (the next Reload), and tools
// pinned on first use by any replica are pinned for all.
func OpenShared(s Shared, trust Trust) (*Lock, error) {
	return open(&sharedPins{st: s}, trust)
}

// sharedPins adapts a shared store to a lock's storage.
type sharedPins struct {
	st Shared

	mu      sync.Mutex
	heard   uint64 // the store's change count when version was read
	version string
}

func (s *sharedPins) where() string { return s.st.Where() + " (pins)" }

// current asks the store only when its feed heard of a change of pins.
func (s *sharedPins) current() (string, error) {
	heard := s.st.Changes(store.KindPins)
	s.mu.Lock()
	if heard == s.heard && s.version != "" {
		defer s.mu.Unlock()
		return s.version, nil
	}
	s.mu.Unlock()
	v, err := s.st.PinsVersion(context.Background())
	if err != nil {
		return "", err
	}
	s.mu.Lock()
	s.heard, s.version = heard, strconv.FormatInt(v, 10)
	s.mu.Unlock()
	return strconv.FormatInt(v, 10), nil
}

func (s *sharedPins) load() (map[string]map[string]entry, string, error) {
	raw, v, err := s.st.LoadPins(context.Background())
	if err != nil {
		return nil, "", err
	}
	pins, err := decodePins(raw)
	if err != nil {
		return nil, "", fmt.Errorf("reading the pins in %s: %w", s.st.Where(), err)
	}
	return pins, strconv.FormatInt(v, 10), nil
}

func (s *sharedPins) save(merge func(map[string]map[string]entry)) (map[string]map[string]entry, string, error) {
	var pins map[string]map[string]entry
	v, err := s.st.SavePins(context.Background(), func(now store.PinSet) (store.PinSet, error) {
		before, err := decodePins(now)
		if err != nil {
			return nil, err
		}
		pins = map[string]map[string]entry{}
		for server, tools := range before {
			pins[server] = map[string]entry{}
			for tool, e := range tools {
				pins[server][tool] = e
			}
		}
		merge(pins)
		writes := store.PinSet{}
		for server, tools := range pins {
			for tool, e := range tools {
				if old, ok := before[server][tool]; ok && old.SHA256 == e.SHA256 && old.Denied == e.Denied && old.Later == e.Later {
					continue
				}
				raw, err := json.Marshal(e)
				if err != nil {
					return nil, err
				}
				if writes[server] == nil {
					writes[server] = map[string]json.RawMessage{}
				}
				writes[server][tool] = raw
			}
		}
		return writes, nil
	})
	if err != nil {
		return nil, "", err
	}
	return pins, strconv.FormatInt(v, 10), nil
}

// decodePins reads and checks the store's entries, as the lock file's
// are checked.
func decodePins(raw store.PinSet) (map[string]map[string]entry, error) {
	pins := map[string]map[string]entry{}
	for server, tools := range raw {
		for tool, data := range tools {
			var e entry
			if err := json.Unmarshal(data, &e); err != nil {
				return nil, fmt.Errorf("server %q, tool %q: %v", server, tool, err)
			}
			def, err := Canonical(e.Definition)
			if err != nil {
				return nil, fmt.Errorf("server %q, tool %q: %v", server, tool, err)
			}
			if def.Hash() != e.SHA256 {
				return nil, fmt.Errorf("server %q, tool %q: sha256 does not match the definition", server, tool)
			}
			e.Definition = json.RawMessage(def)
			if pins[server] == nil {
				pins[server] = map[string]entry{}
			}
			pins[server][tool] = e
		}
	}
	return pins, nil
}
