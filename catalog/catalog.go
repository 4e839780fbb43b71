// Package catalog is toolshelf's vocabulary: the tools it knows about, as
// immutable snapshots.
//
// An [Entry] is one upstream tool as received, with its raw JSON kept so
// that no field is lost, and a qualified name (mcp__<server>__<tool>) that
// is unique in its catalog and always valid for the Anthropic Messages API.
// A [Catalog] is an immutable, ordered snapshot of entries with a version
// key; search engines, token counts and deferral plans are built from one
// snapshot and cached by its version.
//
// The package is pure: it does no network or process I/O.
package catalog

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"io"
	"iter"
	"slices"
	"strings"
)

// Server describes an upstream server whose tools are in a catalog.
type Server struct {
	// Name is the server's name as configured.
	Name string `json:"name"`
	// Title and Version are from the server's initialize result.
	Title   string `json:"title,omitempty"`
	Version string `json:"version,omitempty"`
	// ProtocolVersion is the MCP revision negotiated with the server.
	ProtocolVersion string `json:"protocolVersion,omitempty"`
	// Instructions is the server's instructions from initialize.
	Instructions string `json:"instructions,omitempty"`
	// Description is a description of the server from elsewhere, such as
	// a registry or dataset.
	Description string `json:"description,omitempty"`
}

// field returns the field of s that a catalog file's key names, matched
// without regard to case as encoding/json matches them; nil for none.
func (s *Server) field(key string) *string {
	for _, f := range [...]struct {
		key string
		p   *string
	}{{"name", &s.Name}, {"title", &s.Title}, {"version", &s.Version}, {"protocolVersion", &s.ProtocolVersion},
		{"instructions", &s.Instructions}, {"description", &s.Description}} {
		if strings.EqualFold(key, f.key) {
			return f.p
		}
	}
	return nil
}

// Catalog is an immutable snapshot of tools, ordered by qualified name.
// It is safe for concurrent use. The entries it returns must not be
// modified.
type Catalog struct {
	entries []Entry
	byName  map[string]int
	servers []Server
	version string
}

// New returns a catalog of the given entries and server descriptions.
//
// New assigns every entry its qualified name. Names that would exceed
// MaxNameLen are shortened with a stable hash; names that collide (because
// sanitising or shortening made two tools look alike) are disambiguated the
// same way, so two different tools never share a name. A tool listed twice
// by the same server is kept once, first occurrence first. Server
// descriptions are optional; the entries' own Server fields are what count.
func New(entries []Entry, servers []Server) *Catalog {
	return newCatalog(make([]Entry, 0, len(entries)), entries, servers)
}

// newCatalog is New with the array the catalog keeps its entries in: dst,
// which may be entries[:0] when the caller gives its entries up (a file
// of 10,000 tools has 3 MB of them, and a copy raised the peak of
// reading it).
func newCatalog(dst, entries []Entry, servers []Server) *Catalog {
	c := &Catalog{byName: make(map[string]int, len(entries)), entries: dst}

	type key struct{ server, tool string }
	seen := make(map[key]bool, len(entries))
	clean := make([]bool, 0, len(entries))
	for _, e := range entries {
		k := key{e.Server, e.Tool}
		if seen[k] {
			continue
		}
		seen[k] = true
		server := e.Server
		if e.Unprefixed {
			server = ""
		}
		var ok bool
		e.Name, ok = qualify(server, e.Tool)
		e.Shortened = e.Name != fullName(server, e.Tool)
		c.entries = append(c.entries, e)
		clean = append(clean, ok)
	}
	disambiguate(c.entries, clean)

	slices.SortFunc(c.entries, func(a, b Entry) int { return strings.Compare(a.Name, b.Name) })
	for i := range c.entries {
		c.byName[c.entries[i].Name] = i
	}
	c.servers = slices.Clone(servers)
	slices.SortFunc(c.servers, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	c.version = c.computeVersion()
	return c
}

// disambiguate renames entries whose qualified names collide. Among the
// colliding entries, one whose name needed no sanitising keeps it when it is
// the only such entry; all others get a hash suffix. The hash grows until
// the name is unique.
func disambiguate(entries []Entry, clean []bool) {
	groups := make(map[string][]int, len(entries))
	for i := range entries {
		groups[entries[i].Name] = append(groups[entries[i].Name], i)
	}
	taken := make(map[string]bool, len(entries))
	for name := range groups {
		taken[name] = true
	}
	for _, idx := range groups {
		if len(idx) < 2 {
			continue
		}
		keeper := -1
		for _, i := range idx {
			if clean[i] {
				if keeper >= 0 {
					keeper = -1 // two clean names collide: neither keeps it
					break
				}
				keeper = i
			}
		}
		for _, i := range idx {
			if i == keeper {
				continue
			}
			e := &entries[i]
			for n := 6; ; n += 2 {
				name := shorten(e.Server, e.Tool, n)
				if !taken[name] {
					e.Name, e.Shortened = name, true
					taken[name] = true
					break
				}
			}
		}
	}
}

// computeVersion hashes the names and content of every entry in order.
func (c *Catalog) computeVersion() string {
	h := sha256.New()
	var n [8]byte
	writeBytes := func(b []byte) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	write := func(s string) {
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		io.WriteString(h, s)
	}
	for i := range c.entries {
		e := &c.entries[i]
		write(e.Name)
		write(e.Server)
		writeBytes(e.Raw) // not a string: a copy of every tool's JSON
		write(e.ID)
		flags := ""
		if e.AlwaysLoad {
			flags += "a"
		}
		if e.Unverified {
			flags += "u"
		}
		if e.Stale {
			flags += "s"
		}
		write(flags)
	}
	for _, s := range c.servers {
		write(s.Name)
		write(s.Instructions)
		write(s.Description)
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// Version is a key that changes whenever the catalog's names or content
// change. Caches of anything derived from a catalog are keyed by it.
func (c *Catalog) Version() string {
	if c == nil {
		return ""
	}
	return c.version
}

// Join returns a catalog of a's entries and b's, with a's servers: for
// searching tools and skills (Entry.Skill) together. a's entries keep
// their names: a skill's name (made from its URI) always needs
// sanitising, so where one collides with a tool's, the tool keeps its.
func Join(a, b *Catalog) *Catalog {
	entries := make([]Entry, 0, a.Len()+b.Len())
	entries = append(entries, a.entries...)
	entries = append(entries, b.entries...)
	return newCatalog(entries[:0], entries, a.servers)
}

// NameKey is the sorted, comma-joined list of qualified names: the key that
// token counts are cached by, since they depend only on which tools are sent.
func (c *Catalog) NameKey() string { return strings.Join(c.Names(), ",") }

// Len returns the number of entries.
func (c *Catalog) Len() int {
	if c == nil {
		return 0
	}
	return len(c.entries)
}

// Entry returns the i'th entry in name order.
func (c *Catalog) Entry(i int) *Entry { return &c.entries[i] }

// All returns the entries in name order.
func (c *Catalog) All() iter.Seq[*Entry] {
	return func(yield func(*Entry) bool) {
		for i := range c.entries {
			if !yield(&c.entries[i]) {
				return
			}
		}
	}
}

// Names returns the qualified names in order.
func (c *Catalog) Names() []string {
	names := make([]string, len(c.entries))
	for i := range c.entries {
		names[i] = c.entries[i].Name
	}
	return names
}

// Lookup returns the entry with the given qualified name.
func (c *Catalog) Lookup(name string) (*Entry, bool) {
	i, ok := c.byName[name]
	if !ok {
		return nil, false
	}
	return &c.entries[i], true
}

// Index returns the position of the named entry in name order, or -1.
func (c *Catalog) Index(name string) int {
	if i, ok := c.byName[name]; ok {
		return i
	}
	return -1
}

// Find resolves a name the way a model writes it: an exact qualified name
// first, then a unique case-insensitive qualified name, then a tool's name
// as its server gave it when only one server has a tool of that name.
func (c *Catalog) Find(name string) (*Entry, bool) {
	if e, ok := c.Lookup(name); ok {
		return e, true
	}
	var found *Entry
	for i := range c.entries {
		if strings.EqualFold(c.entries[i].Name, name) {
			if found != nil {
				return nil, false
			}
			found = &c.entries[i]
		}
	}
	if found != nil {
		return found, true
	}
	for i := range c.entries {
		if c.entries[i].Tool == name {
			if found != nil {
				return nil, false
			}
			found = &c.entries[i]
		}
	}
	return found, found != nil
}

// Tool returns the entry of a server's tool by the names the server
// gave them, which a qualified name may have had to shorten or
// disambiguate.
func (c *Catalog) Tool(server, tool string) (*Entry, bool) {
	if name, _ := qualify(server, tool); name != "" {
		if e, ok := c.Lookup(name); ok && e.Server == server && e.Tool == tool {
			return e, true
		}
	}
	for i := range c.entries {
		if e := &c.entries[i]; e.Server == server && e.Tool == tool {
			return e, true
		}
	}
	return nil, false
}

// Servers returns the descriptions of the catalog's servers, by name.
func (c *Catalog) Servers() []Server { return c.servers }

// Server returns the description of the named server.
func (c *Catalog) Server(name string) (Server, bool) {
	i, ok := slices.BinarySearchFunc(c.servers, name, func(s Server, n string) int { return strings.Compare(s.Name, n) })
	if !ok {
		return Server{}, false
	}
	return c.servers[i], true
}

// ServerNames returns the distinct servers of the catalog's entries, sorted.
func (c *Catalog) ServerNames() []string {
	var names []string
	for i := range c.entries {
		if s := c.entries[i].Server; s != "" {
			names = append(names, s)
		}
	}
	slices.Sort(names)
	return slices.Compact(names)
}

// Filter returns a catalog of the entries for which keep returns true,
// with the same names (names are not reassigned) and servers.
func (c *Catalog) Filter(keep func(*Entry) bool) *Catalog {
	return c.Map(func(e Entry) (Entry, bool) { return e, keep(&e) })
}

// Map returns a catalog of the entries f keeps, as f returns them, with
// the same names and servers: a view of a catalog (a profile's) whose
// tools are called by the names the whole catalog gives them. f must not
// change an entry's Name.
func (c *Catalog) Map(f func(Entry) (Entry, bool)) *Catalog {
	out := &Catalog{byName: make(map[string]int), servers: c.servers}
	for i := range c.entries {
		if e, ok := f(c.entries[i]); ok {
			e.Name = c.entries[i].Name
			out.byName[e.Name] = len(out.entries)
			out.entries = append(out.entries, e)
		}
	}
	out.version = out.computeVersion()
	return out
}
