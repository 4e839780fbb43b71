package proxy

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"hash"
	"runtime"
	"slices"
	"sync"

	"github.com/toolshelf/toolshelf/messages"
)

// Bounds of the plan cache.
const (
	// DefaultMaxPlanBytes bounds what the cached tool sets hold (see
	// setSize).
	DefaultMaxPlanBytes = 256 << 20
	// maxPlans bounds the sets kept however small: a hit moves its key
	// to the back of the order, a walk over every key kept.
	maxPlans = 64
	// largeToolBytes is a tool set whose build waits for one of the few
	// slots for large builds; smaller sets build at once, so that a
	// client with a few tools never waits behind one with twenty
	// thousand.
	largeToolBytes = 1 << 20
)

// planCache keeps the tool sets of recent requests: a client sends the
// same tools on every turn, and indexing them costs milliseconds (seconds
// for twenty thousand tools). Each set is built once, outside the lock,
// while other requests for it wait for that build; the sets kept are
// bounded by their size and number, the least recently used going first.
type planCache struct {
	maxBytes int64
	large    chan struct{} // slots for building large sets

	// building, when set (by tests), is called as a build starts.
	building func(size int64)

	mu    sync.Mutex
	bytes int64
	order []string // least recently used first; built sets only
	by    map[string]*planEntry
}

type planEntry struct {
	ready chan struct{} // closed when set is built, or the build gave up
	set   *toolSet      // nil when the build gave up
	size  int64
}

func newPlanCache(maxBytes int64) *planCache {
	if maxBytes <= 0 {
		maxBytes = DefaultMaxPlanBytes
	}
	return &planCache{
		maxBytes: maxBytes,
		large:    make(chan struct{}, max(1, runtime.GOMAXPROCS(0)-1)),
		by:       map[string]*planEntry{},
	}
}

// get returns the set of key, building it with build when no request has;
// size is about what the set will hold. It fails only when ctx ends while
// it waits.
func (c *planCache) get(ctx context.Context, key string, size int64, build func() *toolSet) (*toolSet, error) {
	for {
		c.mu.Lock()
		e, ok := c.by[key]
		if ok {
			if i := slices.Index(c.order, key); i >= 0 {
				c.order = append(slices.Delete(c.order, i, i+1), key)
			}
			c.mu.Unlock()
			select {
			case <-e.ready:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if e.set != nil {
				return e.set, nil
			}
			continue // that build gave up; try again
		}
		e = &planEntry{ready: make(chan struct{})}
		c.by[key] = e
		c.mu.Unlock()
		return c.build(ctx, key, e, size, build)
	}
}

func (c *planCache) build(ctx context.Context, key string, e *planEntry, size int64, build func() *toolSet) (*toolSet, error) {
	if size >= largeToolBytes {
		select {
		case c.large <- struct{}{}:
			defer func() { <-c.large }()
		case <-ctx.Done():
			c.mu.Lock()
			delete(c.by, key)
			c.mu.Unlock()
			close(e.ready)
			return nil, ctx.Err()
		}
	}
	if c.building != nil {
		c.building(size)
	}
	set := build()
	c.mu.Lock()
	e.set, e.size = set, size
	c.bytes += size
	c.order = append(c.order, key)
	for (c.bytes > c.maxBytes || len(c.order) > maxPlans) && len(c.order) > 1 {
		old := c.order[0]
		c.order = c.order[1:]
		if o := c.by[old]; o != nil {
			c.bytes -= o.size
			delete(c.by, old)
		}
	}
	c.mu.Unlock()
	close(e.ready)
	return set, nil
}

// held returns how many sets the cache holds and their size.
func (c *planCache) held() (int, int64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.order), c.bytes
}

// toolsKey is the cache key of a request's tools: a SHA-256 over every
// field with its length, so that no name or description, whatever bytes
// it holds, can make two tool sets one key.
func toolsKey(searchName string, deferAll bool, tools []messages.Tool) (key string, size int64) {
	h := sha256.New()
	field := func(s []byte) {
		writeField(h, s)
		size += int64(len(s))
	}
	field([]byte(searchName))
	if deferAll {
		field([]byte{1})
	} else {
		field([]byte{0})
	}
	for _, t := range tools {
		if t.Type == "" {
			field([]byte(t.Name))
			field([]byte(t.Description))
			field(t.InputSchema)
		}
	}
	return string(h.Sum(nil)), setSize(size, len(tools))
}

// writeField writes b to h after its length, so that no run of fields
// hashes like another ("ab","c" and "a","bc" differ).
func writeField(h hash.Hash, b []byte) {
	var n [8]byte
	binary.BigEndian.PutUint64(n[:], uint64(len(b)))
	h.Write(n[:])
	h.Write(b)
}

// bytesPerTool is what a built set keeps for each tool beside its text:
// the catalog's entry, the index's postings and the view's token counts.
// Measured at about 1,200 bytes for a tool with a short name and no
// description; TestPlanSizeCoversTheHeap checks the estimate against the
// heap for such sets and for rich ones.
const bytesPerTool = 2048

// setSize is about what a built set of n tools with text bytes of names,
// descriptions and schemas holds: the catalog keeps the text, the index
// about as much again, and each tool costs bytesPerTool besides. A
// charge by text alone was 40 times low for tools with little text.
func setSize(text int64, n int) int64 {
	return 2*text + int64(n)*bytesPerTool + 4<<10
}
