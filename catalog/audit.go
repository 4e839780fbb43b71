package catalog

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/toolshelf/toolshelf/internal/confusable"
)

// Kinds of audit findings.
const (
	FindingShortened       = "shortened"        // the qualified name was cut or given a hash
	FindingCollision       = "collision"        // servers share a tool name
	FindingSchema          = "schema"           // the input schema had to be normalised
	FindingLongDescription = "long_description" // over LongDescription characters
	FindingInstructions    = "instructions"     // text aimed at the model: possible tool poisoning
	FindingUnreviewed      = "unreviewed"       // appeared after its server's tools were pinned, trusted without review
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
	// innocent, when set, excuses a match: a public key is no secret.
	innocent func(match string) bool
	// after, when set, excuses a match that the text right after it
	// (the match and 60 bytes more) explains: a setup text's "provide
	// your API key from the dashboard".
	after *regexp.Regexp
}{
	{"tells the model to ignore its instructions", true, []string{"ignore", "disregard", "forget"}, regexp.MustCompile(`(?i)\b(ignore|disregard|forget)\s+(all\s+|any\s+)?(the\s+|your\s+)?(previous|prior|above|earlier|other|system)\s+(instructions|prompts?|rules|messages)`), nil, nil},
	{"demands to be called first", false, []string{"this"}, regexp.MustCompile(`(?i)\b(always|must|should)\s+(call|use|run|invoke)\s+this\s+(tool|function)\s+(first|before)`), nil, nil},
	{"demands to be called before other tools", false, []string{"before"}, regexp.MustCompile(`(?i)\bbefore\s+(using|calling|running|invoking)\s+any\s+other\s+(tools?|functions?)`), nil, nil},
	{"asks to keep something from the user", true, []string{"user", "mention", "that you", "this", "silent", "secret", "covert", "quiet", "without"}, regexp.MustCompile(`(?i)\b(do\s+not|don'?t|never)\s+(tell|inform|mention|reveal|show|disclose|notify)\b[^.]{0,40}\b(the\s+user|user|that\s+you|this\s+(step|instruction|requirement|to))|\b(silently|secretly|covertly|quietly)\s+(send|forward|copy|include|read|upload|attach|pass|exfiltrate)\b`), nil, nil},
	{"contains a prompt-like tag", true, []string{"<", "["}, regexp.MustCompile(`(?i)<\s*/?\s*(important|system|instructions?)\s*>|\[\s*(important|system|instructions?)\s*:`), nil, nil},
	{"mentions the system prompt", false, []string{"system"}, regexp.MustCompile(`(?i)\bsystem\s+prompt\b`), nil, nil},
	{"points at credentials files", true, []string{"ssh", "id_", "credentials", "netrc", "mcp.json", "npmrc", "pypirc", "kube", "docker", "/etc/", ".env"},
		// Files that hold secrets by name; configuration files that
		// may or may not (mcp.json, .npmrc, .env) only when the text
		// asks to read or send them.
		regexp.MustCompile(`(?i)(~/\.ssh(/[\w.-]+)?|(^|[^a-z0-9])id_(rsa|ed25519|ecdsa|dsa)(\.pub)?\b|\.aws/credentials|\.netrc\b|\.git-credentials\b|/etc/shadow\b|\b(read|cat|open|send|include|append|copy|upload|attach|contents\s+of)\b[^\n]{0,30}?(\bmcp\.json|\.npmrc|\.pypirc|\.kube/config|\.docker/config\.json|/etc/passwd|~?/?\.env)\b)`),
		func(m string) bool { return strings.HasSuffix(strings.ToLower(m), ".pub") }, nil},
	{"asks to send the conversation somewhere", true, []string{"chat", "conversation", "transcript", "messages", "history", "context window"},
		regexp.MustCompile(`(?i)\b(pass|include|put|insert|copy|paste|append|embed|attach|send|forward|provide|supply|upload|post|dump|leak|share|transmit|fill)\b[^.]{0,60}` + conversation + `|` + conversation + `[^.]{0,120}\b(parameter|argument|field|sidenote)\b`), nil, nil},
	{"asks to hand over credentials", true, []string{"key", "password", "passphrase", "token", "secret", "credential", "login", "cookie", "environment"},
		// A verb of handing over, then credentials that are someone's:
		// the user's, the model's, the session's, "any" or "all" of
		// them. A tool that creates, lists or rotates keys says so
		// without a possessive or a quantifier before them.
		regexp.MustCompile(`(?i)\b` + handOver + `\b[^.]{0,60}?\b(?:any|all|every|each|the\s+user'?s?|users?'|your|their|stored|saved|current|session'?s?|whatever)\b[^.]{0,30}?\b` + secretThings + `\b|\b(?:read|collect|gather|obtain|fetch|find|get|ask(?:\s+\w+)?\s+for)\b[^.]{0,40}?\b` + secretThings + `\b[^.]{0,60}?\band\s+` + handOver + `\s+(?:it|them)\b`), nil,
		// "Provide your API key from the dashboard": a tool that needs the
		// user's key says where they find it.
		setupText},
	{"asks for its instructions or system prompt", true, []string{"prompt", "instruction", "system message"},
		// The model's own instructions, named as the model's ("your")
		// or as the system's: what no tool needs.
		regexp.MustCompile(`(?i)\b` + handOver + `\b(?:\s+back)?[^.]{0,40}?\b(?:your|the|all|its)\s+(?:(?:full|complete|entire|hidden|previous|original|current|initial|exact)\s+)*(?:system\s+(?:prompts?|instructions|messages?)|instructions|prompt)\b|\byour\s+(?:(?:full|complete|entire|hidden|original)\s+)*(?:system\s+(?:prompts?|instructions|messages?)|hidden\s+instructions)\b`), nil, nil},
	{"asks for secrets the user shared", true, []string{"key", "password", "passphrase", "token", "secret", "credential"},
		regexp.MustCompile(`(?i)\b(keys?|passwords?|passphrases?|tokens?|secrets?|credentials)\b[^.]{0,40}\b(the\s+user\s+(has\s+)?(pasted|typed|shared|entered|provided|gave|mentioned)|(that\s+)?appears?\s+in\s+the\s+(conversation|chat|context)|you\s+(can\s+)?(find|see))|\b(value|contents?)\s+of\s+(the\s+)?\$?\w*(key|token|secret|password)\w*\s+(environment\s+)?variable|\b(any|every|all)\s+other\s+(api\s+keys|secrets|credentials|tokens|passwords)\b`), nil, setupText},
	{"redirects messages to another recipient", true, []string{"bcc", "cc", "recipient", "all"},
		regexp.MustCompile(`(?i)\b(bcc|cc)\b[^.\n]{0,40}[\w.+-]+@[\w-]+(\.[\w-]+)+|\b(send|forward|redirect)\s+(all|every|each)\s+(emails?|messages?|mails?)\s+to\b|\bchange\s+the\s+recipient\b`), nil, nil},
	{"sends retrieved data out", true, []string{"contents", "data"},
		regexp.MustCompile(`(?i)\b(contents?|data)\s+of\s+(any|every|all)\s+(retrieved|fetched|read|opened)\b`), nil, nil},
	{"pipes a download into a shell", true, []string{"curl", "wget", "prepend"},
		regexp.MustCompile(`(?i)\b(curl|wget)\b[^|\n]{0,120}\|\s*(ba|z)?sh\b|\bprepend\b[^.]{0,80}\bto\s+(every|each|all)\s+(shell\s+)?commands?\b`), nil, nil},
	{"steers another tool", true, []string{"when", "each time", "every time", "wenn", "lorsque", "cuando"},
		// A tool's text that changes how another tool is called: what a
		// tool has no business saying (cross-server shadowing).
		regexp.MustCompile(`(?i)\b(?:when(?:ever)?|each\s+time|every\s+time)\b[^.]{0,50}\b(?:call|calls|calling|use|uses|using|invoke|invoking|run)\b[^.]{0,40}?(?:\b\w+_\w+\b|\btool\b|\bfunction\b)[^.]{0,80}\b(?:silently|secretly|always|instead|also)\b[^.]{0,40}\b(?:change|set|replace|add|send|forward|redirect|use|swap|point)\b|\b(?:set|change|replace|point)\b[^.]{0,40}\b(?:base|target|recipient|destination|account|repository|repo)\b[^.]{0,40}\binstead\s+of\b`), nil, nil},
	{"builds an image address that would carry data out", true, []string{"![", "<img", "image"},
		// A placeholder for the model to fill ({conversation}, <secret>,
		// ${TOKEN}) in a query of an image's address: data, not a chart's
		// JSON ({type:'bar'}).
		regexp.MustCompile(`(?i)!\[[^\]]*\]\(\s*https?://[^)\s]*[?&][^)\s=]*=[^)\s]*` + placeholder + `[^)]*\)|<img\b[^>]*\bsrc\s*=\s*["']?https?://[^"'>\s]*[?&][^"'>\s=]*=[^"'>\s]*` + placeholder), nil, nil},
	{"tells the model to ignore its instructions (in another language)", true, []string{"ignor", "vergiss", "oublie", "olvida", "ignora"},
		regexp.MustCompile(`(?i)\b(?:ignorier\w*|vergiss\w*|missachte\w*)\b[^.]{0,30}\b(?:vorherig\w*|bisherig\w*|früher\w*|obig\w*|alle\w*)\b[^.]{0,20}\b(?:anweisung\w*|instruktion\w*|regeln)|\b(?:ignore[zr]?|oublie[zr]?)\b[^.]{0,20}\b(?:les\s+)?(?:instructions|consignes|règles)\s+(?:précédentes|antérieures)|\b(?:ignora|ignore|olvida)\b[^.]{0,20}\b(?:las\s+)?(?:instrucciones|reglas)\s+(?:anteriores|previas)`), nil, nil},
	{"asks to keep something from the user (in another language)", true, []string{"benutzer", "nutzer", "utilisateur", "usuario"},
		regexp.MustCompile(`(?i)\b(?:sag|sage|erzähl|erwähne|verrate)\w*\s+(?:dem\s+)?(?:benutzer|nutzer|anwender)\w*\s+nicht|\b(?:sag|sage)\s+(?:dem\s+)?(?:benutzer|nutzer)\w*\s+nichts|\bne\s+(?:dis|dites|mentionne[zr]?)\s+(?:rien\s+)?(?:pas\s+)?à\s+l'utilisateur|\bno\s+(?:le\s+)?(?:digas|menciones|informes)\s+(?:nada\s+)?al\s+usuario`), nil, nil},
	{"asks to send the conversation somewhere (in another language)", true, []string{"chatverlauf", "gesprächsverlauf", "historique", "historial", "conversation"},
		regexp.MustCompile(`(?i)\b(?:sende|schicke|übermittle|füge)\w*\b[^.]{0,60}\b(?:chatverlauf|gesprächsverlauf|unterhaltung)|\b(?:envoie[zr]?|inclue[zr]?|transmet\w*)\b[^.]{0,60}\bhistorique\b|\b(?:envía|enviar|incluye|manda)\b[^.]{0,60}\bhistorial\b`), nil, nil},
}

// placeholder is a slot for the model to fill: {name}, {{name}}, <name>,
// $NAME, ${name}.
const placeholder = `(?:\{\{?\s*[\w.]+\s*\}\}?|<\s*[\w ]+\s*>|\$\{?[\w.]+\}?)`

// setupText excuses a request for the user's credentials that says where
// the user finds them: "provide your API key from the dashboard".
var setupText = regexp.MustCompile(`(?i)\b(?:from|in|on|at|under|via)\s+(?:the\s+|your\s+)?(?:[\w-]+\s+){0,2}?(?:dashboard|console|account|settings|portal|developer|admin)`)

// conversation is a phrase naming the conversation as a whole: what a
// poisoned tool asks the model to hand over.
const conversation = `(?:(?:entire|whole|full|complete)\s+(?:\w+\s+){0,2}?(?:chat|conversation|transcript|message\s+history)|\b(?:chat|conversation|message)\s+(?:history|histories|transcripts?|logs?)\b|\b(?:previous|prior|earlier|past|last)\s+messages\b|\bcontext\s+window\b)`

// handOver are the verbs of a text that asks the model to put something
// where the tool (and whoever runs it) receives it.
const handOver = `(?:include|supply|provide|pass|send|forward|share|copy|paste|attach|append|add|put|insert|embed|post|upload|transmit|submit|leak|dump|disclose|reveal|expose|output|print|echo|repeat|return|write|log|record|report|give|fill)`

// secretThings name what a user or the model holds that no tool should
// be handed: credentials of every kind.
const secretThings = `(?:api[\s_-]*keys?|access[\s_-]*tokens?|auth(?:entication|orization)?[\s_-]*(?:tokens?|headers?)|bearer[\s_-]*tokens?|oauth[\s_-]*tokens?|refresh[\s_-]*tokens?|tokens|passwords?|passphrases?|credentials|secret[\s_-]*keys?|private[\s_-]*keys?|secrets|login\s+details|session\s+cookies|environment\s+variables)`

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
		r == 0xFEFF,
		r == 0x1B: // ESC: terminal escapes can hide text from a person reading it there
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

// instructionFindings checks a tool's texts for model-directed content:
// every string of its definition (its title, description, parameters'
// names, descriptions, enum values and defaults, its output schema,
// annotations: whatever a client may show the model), each also read
// with look-alike letters folded and base64 runs decoded.
func instructionFindings(e *Entry) []Finding {
	var out []Finding
	texts, whole := definitionTexts(e)
	if !whole {
		out = append(out, Finding{FindingInstructions, e.Name, e.Server, fmt.Sprintf("its definition holds over %d bytes of text, more than the check reads: held until a person reviews it", maxDefinitionText), true})
		return out
	}
	seen := map[string]bool{}
	read := make(map[string]bool, len(texts))
	for _, text := range texts {
		// The JSON's strings repeat the parsed fields (a description,
		// each parameter's): what a text says is found in its first
		// reading, and the expressions are most of a doctor's time.
		if read[text] {
			continue
		}
		read[text] = true
		for _, r := range text {
			if hiddenRune(r) && !seen["hidden"] {
				seen["hidden"] = true
				out = append(out, Finding{FindingInstructions, e.Name, e.Server, fmt.Sprintf("contains invisible character U+%04X, which can hide text from people but not from the model", r), true})
			}
		}
		if text == "" {
			continue
		}
		for _, variant := range readings(text) {
			lower := strings.ToLower(variant)
			for _, p := range modelDirected {
				if seen[p.what] || !slices.ContainsFunc(p.words, func(w string) bool { return strings.Contains(lower, w) }) {
					continue
				}
				loc := p.re.FindStringIndex(variant)
				if loc == nil {
					continue
				}
				m := variant[loc[0]:loc[1]]
				if p.innocent != nil && p.innocent(m) || p.after != nil && p.after.MatchString(variant[loc[0]:min(len(variant), loc[1]+60)]) {
					continue
				}
				seen[p.what] = true
				out = append(out, Finding{FindingInstructions, e.Name, e.Server, fmt.Sprintf("%s: %q", p.what, m), p.high})
			}
		}
	}
	return out
}

// maxDefinitionText bounds the text of one definition the check reads:
// a server writes it, and the check's cost must stay bounded. No real
// tool comes near it; a definition past it is not read in part (an
// instruction could sit past any cut) but flagged whole.
const maxDefinitionText = 1 << 20

// definitionTexts are the strings of a tool's definition: the parsed
// fields first, then every string and key of its JSON (names written
// as words: "IMPORTANT_read_the_key" reads "IMPORTANT read the key").
// whole is false for a definition past maxDefinitionText.
func definitionTexts(e *Entry) (texts []string, whole bool) {
	texts = []string{e.Title, e.Description, e.SearchHint}
	for _, p := range e.Params {
		texts = append(texts, p.Name, words(p.Name), p.Description)
	}
	size := 0
	var walk func(v any)
	walk = func(v any) {
		if size > maxDefinitionText {
			return
		}
		switch v := v.(type) {
		case string:
			size += len(v)
			texts = append(texts, v)
		case []any:
			for _, x := range v {
				walk(x)
			}
		case map[string]any:
			for _, k := range slices.Sorted(maps.Keys(v)) {
				if len(k) > 12 {
					size += len(k)
					texts = append(texts, words(k))
				}
				walk(v[k])
			}
		}
	}
	var raw any
	if json.Unmarshal(e.Raw, &raw) == nil {
		walk(raw)
	}
	return texts, size <= maxDefinitionText
}

// words is an identifier written as words: split at underscores,
// dashes, dots and camelCase.
func words(name string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.':
			b.WriteByte(' ')
		case unicode.IsUpper(r) && unicode.IsLower(prev):
			b.WriteByte(' ')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
		prev = r
	}
	return b.String()
}

// base64Run is a run of base64 long enough to hide an instruction.
var base64Run = regexp.MustCompile(`[A-Za-z0-9+/]{24,}={0,2}`)

// readings are the ways a text is read: as it is, with look-alike
// letters folded, and each base64 run decoded (when it decodes to text).
func readings(text string) []string {
	out := []string{text}
	if f := confusable.Fold(text); f != text {
		out = append(out, f)
	}
	if strings.ContainsAny(text, "0123456789+/=") || len(text) >= 24 {
		for _, run := range base64Run.FindAllString(text, 16) {
			b, err := base64.StdEncoding.DecodeString(run)
			if err != nil {
				b, err = base64.RawStdEncoding.DecodeString(strings.TrimRight(run, "="))
			}
			if err == nil && utf8.Valid(b) && printableText(b) {
				out = append(out, string(b))
			}
		}
	}
	return out
}

// printableText reports whether b reads as text.
func printableText(b []byte) bool {
	for _, c := range b {
		if c < 0x20 && c != '\n' && c != '\t' && c != '\r' {
			return false
		}
	}
	return len(b) > 0
}
