package catalog

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// Kinds of audit findings.
const (
	FindingShortened       = "shortened"        // the qualified name was cut or given a hash
	FindingCollision       = "collision"        // servers share a tool name
	FindingSchema          = "schema"           // the input schema had to be normalised
	FindingLongDescription = "long_description" // over LongDescription characters
	FindingInstructions    = "instructions"     // text aimed at the model: possible tool poisoning
)

// LongDescription is the description length, in characters, above which
// a tool is reported: every request that loads the tool pays for it.
const LongDescription = 2000

// Finding is one thing an operator should know about a catalog.
type Finding struct {
	Kind    string `json:"kind"`
	Tool    string `json:"tool,omitempty"` // qualified name; the tool's own name for collisions
	Server  string `json:"server,omitempty"`
	Message string `json:"message"`
	// High marks the findings most likely to be an attack (hidden text,
	// orders to ignore instructions or to keep things from the user,
	// credentials files): a new or changed tool with one is quarantined
	// when tool definitions are pinned.
	High bool `json:"high,omitempty"`
}

// modelDirected matches text in a tool's description or parameters that
// speaks to the model rather than describing the tool: the marks of tool
// poisoning (instructions hidden in metadata the user never reads). Some
// real tools use such phrasing innocently ("you must call this before
// X"); the finding quotes the text so that a person can judge.
var modelDirected = []struct {
	what string
	high bool
	// words: the lower-cased text must hold one of them for re to be
	// worth running; most texts hold none, and the expressions are slow.
	words []string
	re    *regexp.Regexp
}{
	{"tells the model to ignore its instructions", true, []string{"ignore", "disregard", "forget"}, regexp.MustCompile(`(?i)\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+|your\s+)?(previous|prior|above|earlier|other|system)\s+(instructions|prompts?|rules|messages)`)},
	{"demands to be called first", false, []string{"this"}, regexp.MustCompile(`(?i)\b(always|must|should)\s+(call|use|run|invoke)\s+this\s+(tool|function)\s+(first|before)`)},
	{"demands to be called before other tools", false, []string{"before"}, regexp.MustCompile(`(?i)\bbefore\s+(using|calling|running|invoking)\s+any\s+other\s+(tools?|functions?)`)},
	{"asks to keep something from the user", true, []string{"user"}, regexp.MustCompile(`(?i)\b(do\s+not|don'?t|never)\s+(tell|inform|mention|reveal|show)\b[^.]{0,30}\b(the\s+)?user`)},
	{"contains a prompt-like tag", true, []string{"<"}, regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?)\s*>`)},
	{"mentions the system prompt", false, []string{"system"}, regexp.MustCompile(`(?i)\bsystem\s+prompt\b`)},
	{"points at credentials files", true, []string{"ssh", "id_rsa", "credentials", "netrc"}, regexp.MustCompile(`(?i)(~/\.ssh|\bid_rsa\b|\.aws/credentials|\.netrc\b)`)},
}

// hiddenRune reports characters that render as nothing: Unicode tag
// characters (which can spell out hidden text), zero-width characters and
// bidirectional overrides.
func hiddenRune(r rune) bool {
	switch {
	case r >= 0xE0000 && r <= 0xE007F, // tags
		r >= 0x200B && r <= 0x200F, // zero-width space, joiners, marks
		r >= 0x202A && r <= 0x202E, // bidi embeddings and overrides
		r >= 0x2060 && r <= 0x2064, // word joiner, invisible operators
		r >= 0x2066 && r <= 0x2069, // bidi isolates
		r == 0xFEFF:
		return true
	}
	return false
}

// Audit reports what an operator should know about the catalog: names
// that had to be shortened, tool names several servers share, schemas
// that had to be normalised, long descriptions, and text aimed at the
// model (a tool-poisoning check). Findings are in name order.
func (c *Catalog) Audit() []Finding {
	var out []Finding
	byTool := map[string][]*Entry{}
	for e := range c.All() {
		if e.Server != "" {
			byTool[e.Tool] = append(byTool[e.Tool], e)
		}
		if e.Shortened {
			out = append(out, Finding{FindingShortened, e.Name, e.Server,
				fmt.Sprintf("%q of %s is named %s: the full name is over %d characters or collides with another", e.Tool, e.Server, e.Name, MaxNameLen), false})
		}
		if _, changed := NormalizeSchema(e.InputSchema); changed && !e.Unverified {
			out = append(out, Finding{FindingSchema, e.Name, e.Server, `the input schema is not an object schema ("type":"object"); it is given one when re-exposed`, false})
		}
		if n := utf8.RuneCountInString(e.Description); n > LongDescription {
			out = append(out, Finding{FindingLongDescription, e.Name, e.Server, fmt.Sprintf("the description is %d characters, paid for in every request that loads the tool", n), false})
		}
		out = append(out, instructionFindings(e)...)
	}
	for _, tool := range slices.Sorted(maps.Keys(byTool)) {
		es := byTool[tool]
		if len(es) < 2 {
			continue
		}
		var servers, names []string
		for _, e := range es {
			servers = append(servers, e.Server)
			names = append(names, e.Name)
		}
		out = append(out, Finding{FindingCollision, tool, strings.Join(servers, ", "),
			fmt.Sprintf("%q is a tool of %s; kept apart as %s", tool, strings.Join(servers, " and "), strings.Join(names, ", ")), false})
	}
	return out
}

// Poisoning returns the first high-risk finding of the tool-poisoning
// check on the tool's texts (see [Finding.High]), or "".
func (e *Entry) Poisoning() string {
	for _, f := range instructionFindings(e) {
		if f.High {
			return f.Message
		}
	}
	return ""
}

// instructionFindings checks a tool's texts for model-directed content.
func instructionFindings(e *Entry) []Finding {
	texts := []string{e.Title, e.Description, e.SearchHint}
	for _, p := range e.Params {
		texts = append(texts, p.Name, p.Description)
	}
	var out []Finding
	seen := map[string]bool{}
	for _, text := range texts {
		for _, r := range text {
			if hiddenRune(r) && !seen["hidden"] {
				seen["hidden"] = true
				out = append(out, Finding{FindingInstructions, e.Name, e.Server, fmt.Sprintf("contains invisible character U+%04X, which can hide text from people but not from the model", r), true})
			}
		}
		if text == "" {
			continue
		}
		lower := strings.ToLower(text)
		for _, p := range modelDirected {
			if seen[p.what] || !slices.ContainsFunc(p.words, func(w string) bool { return strings.Contains(lower, w) }) {
				continue
			}
			if m := p.re.FindString(text); m != "" {
				seen[p.what] = true
				out = append(out, Finding{FindingInstructions, e.Name, e.Server, fmt.Sprintf("%s: %q", p.what, m), p.high})
			}
		}
	}
	return out
}
