package policy

import (
	"net/url"
	"strings"
)

// DefaultUnsupportedModels lists name fragments of models that cannot
// take tool_reference blocks. It is a negative list on purpose: a new
// model gets tool search without a release, and one that cannot take it
// is added here (or in configuration) instead.
var DefaultUnsupportedModels = []string{"haiku"}

// ModelSupported reports whether a model takes tool_reference blocks: no
// fragment of unsupported (DefaultUnsupportedModels when nil) appears in
// its name, compared without case.
func ModelSupported(model string, unsupported []string) bool {
	if unsupported == nil {
		unsupported = DefaultUnsupportedModels
	}
	m := strings.ToLower(model)
	for _, p := range unsupported {
		if p != "" && strings.Contains(m, strings.ToLower(p)) {
			return false
		}
	}
	return true
}

// DefaultContextWindow is the context window of current Claude models,
// and the assumption for models toolshelf does not know.
const DefaultContextWindow = 200_000

// contextWindows maps model name fragments to context windows, first
// match wins. Every Claude family to date has 200K tokens; the 1M
// variants are named with a "[1m]" or "-1m" suffix, as Claude Code names
// them.
var contextWindows = []struct {
	fragment string
	tokens   int
}{
	{"[1m]", 1_000_000},
	{"-1m", 1_000_000},
	{"claude-opus-4", 200_000},
	{"claude-sonnet-4", 200_000},
	{"claude-haiku-4", 200_000},
	{"claude-3-7-sonnet", 200_000},
	{"claude-3-5", 200_000},
	{"claude-3", 200_000},
}

// ContextWindow returns the context window of a model, in tokens.
func ContextWindow(model string) int {
	m := strings.ToLower(model)
	for _, w := range contextWindows {
		if strings.Contains(m, w.fragment) {
			return w.tokens
		}
	}
	return DefaultContextWindow
}

// Threshold is the auto mode's budget: floor(window × percent / 100)
// tokens.
func Threshold(window, percent int) int { return window * percent / 100 }

// CharsPerToken converts the token threshold to characters when tokens
// cannot be counted. 2.5 overestimates tokens on tool JSON (which runs at
// about 4.6 characters per token), so a guess errs toward deferring.
const CharsPerToken = 2.5

// CharThreshold is the threshold in characters: floor(tokens × 2.5).
func CharThreshold(tokens int) int { return tokens * 5 / 2 }

// Providers of the Messages API.
const (
	ProviderFirstParty = "firstParty"
	ProviderBedrock    = "bedrock"
	ProviderVertex     = "vertex"
)

// AnthropicURL reports whether a base URL is Anthropic's own API (an empty
// URL means the default, which is).
func AnthropicURL(baseURL string) bool {
	if strings.TrimSpace(baseURL) == "" {
		return true
	}
	u, err := url.Parse(baseURL)
	if err != nil {
		return false
	}
	h := strings.ToLower(u.Hostname())
	return h == "anthropic.com" || strings.HasSuffix(h, ".anthropic.com")
}
