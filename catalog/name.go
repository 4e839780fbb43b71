package catalog

import (
	"crypto/sha256"
	"encoding/hex"
	"regexp"
	"strings"
)

// MaxNameLen is the longest tool name the Anthropic Messages API accepts
// (tool names and tool_reference.tool_name are both capped at 64).
const MaxNameLen = 64

// Prefix starts every qualified name of an MCP tool.
const Prefix = "mcp__"

// sep separates the server part from the tool part of a qualified name.
const sep = "__"

// maxServerPart is how much of a server's name survives when a qualified
// name has to be shortened: the tool part carries more meaning.
const maxServerPart = 16

// validName is the pattern every qualified name satisfies.
var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

// ValidName reports whether s is acceptable as a tool name to the Messages
// API: 1 to 64 characters from [a-zA-Z0-9_-].
func ValidName(s string) bool { return validName.MatchString(s) }

// sanitize replaces every character outside [a-zA-Z0-9_-] with '_'. An empty
// string becomes "_" so that a part is never empty.
func sanitize(s string) string {
	if s == "" {
		return "_"
	}
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '_', r == '-':
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	return b.String()
}

// nameHash is a short stable digest of a tool's identity, used to keep
// shortened or colliding names unique. n is the number of hex digits.
func nameHash(server, tool string, n int) string {
	sum := sha256.Sum256([]byte(server + "\x00" + tool))
	return hex.EncodeToString(sum[:])[:n]
}

// fullName is the qualified name before any shortening.
func fullName(server, tool string) string {
	if server == "" {
		return sanitize(tool)
	}
	return Prefix + sanitize(server) + sep + sanitize(tool)
}

// qualify returns the qualified name of a tool: mcp__<server>__<tool> for an
// MCP tool, the sanitised tool name for a tool without a server. clean
// reports that neither part needed sanitising or shortening.
func qualify(server, tool string) (name string, clean bool) {
	name = fullName(server, tool)
	if len(name) > MaxNameLen {
		return shorten(server, tool, 6), false
	}
	return name, sanitize(tool) == tool && (server == "" || sanitize(server) == server)
}

// shorten builds a name that fits MaxNameLen by cutting the server part to
// maxServerPart characters and the tool part to what is left, then appending
// a hash of the full identity with hashLen hex digits. The tool's head is
// kept because that is where verbs such as "create" or "list" live.
func shorten(server, tool string, hashLen int) string {
	h := nameHash(server, tool, hashLen)
	t := sanitize(tool)
	var head string
	if server != "" {
		s := sanitize(server)
		if len(s) > maxServerPart {
			s = s[:maxServerPart]
		}
		head = Prefix + s + sep
	}
	room := MaxNameLen - len(head) - 1 - len(h)
	if len(t) > room {
		// Trim separators left at the cut so the hash reads as a suffix.
		if cut := strings.TrimRight(t[:room], "_-"); cut != "" {
			t = cut
		} else {
			t = t[:room]
		}
	}
	return head + t + "_" + h
}

// SplitName splits a qualified MCP tool name into its sanitised server and
// tool parts. ok is false for names without the mcp__ prefix or separator.
// Shortened names split into their shortened parts.
func SplitName(name string) (server, tool string, ok bool) {
	rest, ok := strings.CutPrefix(name, Prefix)
	if !ok {
		return "", "", false
	}
	server, tool, ok = strings.Cut(rest, sep)
	if !ok || server == "" || tool == "" {
		return "", "", false
	}
	return server, tool, true
}
