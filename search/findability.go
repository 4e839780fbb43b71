package search

import (
	"fmt"
	"strings"
	"unicode"

	"github.com/toolshelf/toolshelf/catalog"
)

// A tool is found by its words: a description too short to match a
// request, one that never says what the tool does, one that says what a
// sibling says, parameters that say nothing, or a description in another
// language than the requests. Findability names such tools for an
// operator, each with what to do (a "describe" override in the
// configuration mends any of them without touching the server).

// Problems a tool's words can have.
const (
	ProblemShort     = "short"
	ProblemNoVerb    = "no-verb"
	ProblemSibling   = "same-as-sibling"
	ProblemParams    = "params-undescribed"
	ProblemLanguage  = "other-language"
	minDescribed     = 5   // words a description needs to be matched at all
	siblingOverlap   = 0.8 // word overlap (Jaccard) that makes two descriptions alike
	minSiblingWords  = 4
	minLanguageWords = 5
)

// Hard is one problem of one tool's words, with a suggestion.
type Hard struct {
	Tool       string `json:"tool"` // qualified name
	Problem    string `json:"problem"`
	Detail     string `json:"detail"`
	Suggestion string `json:"suggestion"`
}

// Findability returns the problems of c's tools' words, tool by tool in
// the catalog's order.
func Findability(c *catalog.Catalog) []Hard {
	english := mostlyEnglish(c)
	type words struct {
		e   *catalog.Entry
		set map[string]bool
	}
	var byServer = map[string][]words{}
	for e := range c.All() {
		byServer[e.Server] = append(byServer[e.Server], words{e, contentWords(e.Description)})
	}
	var out []Hard
	for e := range c.All() {
		desc := strings.TrimSpace(e.Description)
		n := wordCount(desc)
		add := func(problem, detail, suggestion string) {
			out = append(out, Hard{Tool: e.Name, Problem: problem, Detail: detail, Suggestion: suggestion})
		}
		override := fmt.Sprintf(`"describe": {%q: {"description": ...}} in server %q's configuration`, e.Tool, e.Server)
		if n < minDescribed {
			add(ProblemShort, fmt.Sprintf("%d words: %q", n, desc),
				"say what it does, to what, and what it returns, in a sentence or two: "+override)
		}
		foreign := english && n >= minLanguageWords && !isEnglish(desc)
		// A description in another language has no English verb; its
		// language is the problem to name.
		if n > 0 && !foreign && !hasVerb(Tokenize(e.Tool)) && !hasVerb(Tokenize(firstSentence(desc))) {
			add(ProblemNoVerb, fmt.Sprintf("neither %q nor its first sentence says what it does", e.Tool),
				"start with the action (\"Create ...\", \"List ...\", \"Send ...\"): "+override)
		}
		mine := contentWords(desc)
		if len(mine) >= minSiblingWords {
			for _, sib := range byServer[e.Server] {
				if sib.e == e || len(sib.set) < minSiblingWords {
					continue
				}
				if j := jaccard(mine, sib.set); j >= siblingOverlap {
					add(ProblemSibling, fmt.Sprintf("%.0f%% of its words are %s's", 100*j, sib.e.Name),
						"say how it differs from "+sib.e.Name+" (what it takes, what it returns): "+override)
					break
				}
			}
		}
		undescribed := 0
		for _, p := range e.Params {
			if strings.TrimSpace(p.Description) == "" {
				undescribed++
			}
		}
		if undescribed > 0 {
			add(ProblemParams, fmt.Sprintf("%d of %d parameters have no description", undescribed, len(e.Params)),
				"the server should describe its parameters; until then, add what they are to the tool's search words (\"describe\": {\"searchWords\": ...})")
		}
		if foreign {
			add(ProblemLanguage, "written in another language than most of the catalog",
				fmt.Sprintf(`add English search words: "describe": {%q: {"searchWords": ...}}`, e.Tool))
		}
	}
	return out
}

// wordCount counts a text's words, two characters of Chinese, Japanese
// or Korean (written without spaces) counting as one.
func wordCount(text string) int {
	n := 0
	for _, f := range strings.Fields(text) {
		cjk := 0
		for _, r := range f {
			if unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana, unicode.Hangul) {
				cjk++
			}
		}
		n += max(1, (cjk+1)/2)
	}
	return n
}

// firstSentence is the first sentence of a description (as the compact
// answers' purpose, without its bound).
func firstSentence(desc string) string {
	if i := strings.IndexAny(desc, ".\n。"); i > 0 {
		return desc[:i]
	}
	return desc
}

// verbs are common verbs of a tool's purpose.
var verbs = map[string]bool{}

func init() {
	for _, v := range strings.Fields(`get list create delete remove update edit set add send read write fetch search find query run
		execute start stop open close move copy rename upload download save load check validate verify convert translate
		generate summarize analyze analyse parse extract compute calculate count show display return retrieve lookup look
		post publish schedule cancel book buy sell pay transfer approve reject merge push pull clone commit deploy build
		install uninstall restart scale monitor track watch subscribe unsubscribe notify invite join leave assign archive
		restore backup export import sync click type navigate scroll take capture record play pause resume resize crop
		compress decompress encrypt decrypt sign login logout authenticate authorize register reset enable disable toggle
		fill submit select hover drag drop wait evaluate describe explain compare rank sort filter group tag label comment
		reply forward mark star pin unpin lock unlock insert replace append apply create_or_update manage test debug
		lint format fix review inspect scan detect estimate predict forecast convert geocode reverse route plan resolve
		fork tell ask answer chat call invoke trigger emit log measure profile benchmark`) {
		verbs[v] = true
	}
}

func hasVerb(words []string) bool {
	for _, w := range words {
		w = strings.ToLower(w)
		for _, form := range []string{w, strings.TrimSuffix(w, "s"), strings.TrimSuffix(w, "es"), strings.TrimSuffix(w, "ed"), strings.TrimSuffix(w, "ing"), strings.TrimSuffix(w, "d")} {
			if verbs[form] {
				return true
			}
		}
	}
	return false
}

// englishWords are frequent English function words: a description of
// five words or more with none of them is not in English.
var englishWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`the a an of to in for on with and or by from is are be as at this that it its your you
		all any into if when which use using returns given`) {
		englishWords[w] = true
	}
}

// foreignWords are frequent function words of the other languages tool
// descriptions are written in (Spanish, German, French, Portuguese,
// Italian) that are not English words.
var foreignWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`el la los las del que y para con una por es se su al lo
		der die das und ist mit für von den zu ein eine nicht auf dem des
		le les des du et est pour avec dans sur un une ce qui pas
		o os do da dos das e com em não uma ao
		il gli della di per che non nel alla`) {
		foreignWords[w] = true
	}
}

// isEnglish reports whether a description reads as English: mostly
// Latin letters, and not two function words of another language with
// none of English ("Create app: custom name, region" is English).
func isEnglish(desc string) bool {
	letters, latin := 0, 0
	for _, r := range desc {
		if unicode.IsLetter(r) {
			letters++
			if r < unicode.MaxLatin1 {
				latin++
			}
		}
	}
	if letters == 0 || latin*2 < letters {
		return false
	}
	english, foreign := 0, 0
	for _, w := range strings.Fields(strings.ToLower(desc)) {
		w = strings.Trim(w, ".,;:()\"'")
		if englishWords[w] {
			english++
		}
		if foreignWords[w] {
			foreign++
		}
	}
	return english > 0 || foreign < 2
}

// mostlyEnglish reports whether most of c's descriptions (of five words
// or more) are in English: only then is another language a problem.
func mostlyEnglish(c *catalog.Catalog) bool {
	yes, all := 0, 0
	for e := range c.All() {
		if wordCount(e.Description) >= minLanguageWords {
			all++
			if isEnglish(e.Description) {
				yes++
			}
		}
	}
	return all > 0 && yes*2 > all
}

// contentWords are a description's lower-case words, without the
// function words.
func contentWords(desc string) map[string]bool {
	set := map[string]bool{}
	for _, w := range strings.FieldsFunc(strings.ToLower(desc), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
		if !englishWords[w] {
			set[w] = true
		}
	}
	return set
}

func jaccard(a, b map[string]bool) float64 {
	inter := 0
	for w := range a {
		if b[w] {
			inter++
		}
	}
	union := len(a) + len(b) - inter
	if union == 0 {
		return 0
	}
	return float64(inter) / float64(union)
}
