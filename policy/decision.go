package policy

import (
	"fmt"
	"strings"

	"golang.org/x/text/language"
	"golang.org/x/text/message"
)

// Why tool search was or was not enabled. The names follow Claude Code's
// tengu_tool_search_mode_decision event where it has one.
const (
	ReasonStandardMode      = "standard_mode"     // ENABLE_TOOL_SEARCH is falsy
	ReasonBetasDisabled     = "betas_disabled"    // DISABLE_EXPERIMENTAL_BETAS
	ReasonProxy             = "proxy_detected"    // non-Anthropic base URL, no explicit setting
	ReasonModelUnsupported  = "model_unsupported" // no tool_reference support
	ReasonSearchUnavailable = "mcp_search_unavailable"
	ReasonAlways            = "tst_enabled"
	ReasonAboveThreshold    = "auto_above_threshold"
	ReasonBelowThreshold    = "auto_below_threshold"
	ReasonNoDeferred        = "no_deferred_tools" // nothing to search and nothing pending
	ReasonPending           = "pending_servers"   // nothing yet, but servers are connecting
)

// Optimistic is the early gate: may the search tool be in the tool pool at
// all? It looks at the mode and the endpoint, not at the model or the
// tools. When ENABLE_TOOL_SEARCH is unset, a first-party provider behind a
// base URL that is not Anthropic's is taken for a proxy, and proxies often
// reject tool_reference blocks; setting the variable vouches for the
// proxy.
func Optimistic(s Settings, provider, baseURL string) (ok bool, reason string) {
	if s.Mode == ModeStandard {
		if s.BetasDisabled {
			return false, ReasonBetasDisabled
		}
		return false, ReasonStandardMode
	}
	firstParty := provider == "" || provider == ProviderFirstParty
	if !s.Explicit && firstParty && !AnthropicURL(baseURL) {
		return false, ReasonProxy
	}
	return true, ""
}

// Cost is what the deferrable tools would cost if sent in full.
type Cost struct {
	// Tokens is their token count, measured by Source.
	Tokens int
	// Chars is their character count (name + description + schema); the
	// heuristic compares it with the threshold times 2.5.
	Chars  int
	Source string
	// CountError says why the counter failed, when Source is the
	// heuristic standing in for it.
	CountError string
}

// Request is everything the definitive gate looks at for one request.
type Request struct {
	Settings Settings
	Model    string
	// ContextWindow overrides the model's context window when positive.
	ContextWindow int
	// UnsupportedModels overrides DefaultUnsupportedModels when non-nil.
	UnsupportedModels []string
	Provider, BaseURL string
	// SearchAvailable reports that the search tool is in the pool (it
	// passed the optimistic gate and was not disallowed).
	SearchAvailable bool
	// Tools is every tool of the request, and Checklist decides which are
	// deferrable.
	Tools     []Tool
	Checklist Checklist
	// Cost measures the deferrable tools; only auto mode needs it.
	Cost Cost
	// Pending names the MCP servers still connecting.
	Pending []string
}

// Decision is the definitive gate's answer, with the numbers behind it:
// what Claude Code records in its tengu_tool_search_mode_decision event,
// for logs and for toolshelf doctor.
type Decision struct {
	Enabled        bool     `json:"enabled"`
	Mode           Mode     `json:"mode"`
	Reason         string   `json:"reason"`
	Model          string   `json:"model"`
	ContextWindow  int      `json:"contextWindow"`
	Percent        int      `json:"percent,omitempty"`
	MCPTools       int      `json:"mcpToolCount"`
	Deferrable     int      `json:"deferrableTools"`
	Tokens         int      `json:"deferrableTokens"`
	Chars          int      `json:"deferrableChars"`
	TokenSource    string   `json:"tokenSource,omitempty"`
	CountError     string   `json:"countError,omitempty"`
	Threshold      int      `json:"thresholdTokens,omitempty"`
	CharThreshold  int      `json:"thresholdChars,omitempty"`
	PendingServers []string `json:"pendingServers,omitempty"`
	// Deferred names the tools sent with defer_loading when Enabled.
	Deferred []string `json:"-"`
}

// Decide runs the definitive gate. With search disabled nothing is
// deferred: every tool is sent in full.
func Decide(r Request) Decision {
	d := Decision{
		Mode: r.Settings.Mode, Model: r.Model, ContextWindow: r.ContextWindow,
		Percent: r.Settings.Percent, PendingServers: r.Pending,
		Tokens: r.Cost.Tokens, Chars: r.Cost.Chars, TokenSource: r.Cost.Source, CountError: r.Cost.CountError,
	}
	if d.ContextWindow <= 0 {
		d.ContextWindow = ContextWindow(r.Model)
	}
	if d.Percent == 0 {
		d.Percent = DefaultPercent
	}
	if r.Cost.Source != "" || r.Cost.Chars > 0 {
		// Reported in every mode, for logs and doctor; compared only in
		// auto mode.
		d.Threshold = Threshold(d.ContextWindow, d.Percent)
		if r.Cost.Source == "" || r.Cost.Source == SourceHeuristic {
			d.CharThreshold = CharThreshold(d.Threshold)
		}
	}
	var deferred []string
	for _, t := range r.Tools {
		if t.MCP {
			d.MCPTools++
		}
		if r.Checklist.Defer(t).Deferred {
			deferred = append(deferred, t.Name)
		}
	}
	d.Deferrable = len(deferred)

	if ok, reason := Optimistic(r.Settings, r.Provider, r.BaseURL); !ok {
		d.Reason = reason
		return d
	}
	if !ModelSupported(r.Model, r.UnsupportedModels) {
		d.Reason = ReasonModelUnsupported
		return d
	}
	if !r.SearchAvailable {
		d.Reason = ReasonSearchUnavailable
		return d
	}
	switch d.Mode {
	case ModeAlways:
		d.Enabled, d.Reason = true, ReasonAlways
	case ModeAuto:
		threshold := Threshold(d.ContextWindow, d.Percent)
		var above bool
		if r.Cost.Source == "" || r.Cost.Source == SourceHeuristic {
			above = r.Cost.Chars >= CharThreshold(threshold)
		} else {
			above = r.Cost.Tokens >= threshold
		}
		d.Enabled, d.Reason = above, ReasonBelowThreshold
		if above {
			d.Reason = ReasonAboveThreshold
		}
	default:
		d.Reason = ReasonStandardMode
	}
	if d.Enabled && len(deferred) == 0 {
		if len(r.Pending) == 0 {
			d.Enabled, d.Reason = false, ReasonNoDeferred
		} else {
			d.Reason = ReasonPending // keep the search tool: tools are coming
		}
	}
	if d.Enabled {
		d.Deferred = deferred
	}
	return d
}

// String summarises the decision on one line, for logs and doctor:
//
//	enabled: auto_above_threshold (57,012 tokens ≥ threshold 20,000: 10% of 200,000; tokenizer)
func (d Decision) String() string {
	var b strings.Builder
	if d.Enabled {
		b.WriteString("enabled: ")
	} else {
		b.WriteString("disabled: ")
	}
	b.WriteString(d.Reason)
	switch {
	case d.Threshold > 0 && d.CharThreshold > 0:
		fmt.Fprintf(&b, " (%s chars %s threshold %s chars: %d%% of %s tokens × 2.5; heuristic)",
			num(d.Chars), cmpSign(d.Chars, d.CharThreshold), num(d.CharThreshold), d.Percent, num(d.ContextWindow))
	case d.Threshold > 0 && d.Reason == ReasonAlways:
		// tst defers whatever the cost: the threshold is auto mode's, and
		// shown only for comparison.
		fmt.Fprintf(&b, " (always, whatever the cost: %s tokens; auto mode's threshold would be %s, %d%% of %s; %s)",
			num(d.Tokens), num(d.Threshold), d.Percent, num(d.ContextWindow), d.TokenSource)
	case d.Threshold > 0:
		fmt.Fprintf(&b, " (%s tokens %s threshold %s: %d%% of %s; %s)",
			num(d.Tokens), cmpSign(d.Tokens, d.Threshold), num(d.Threshold), d.Percent, num(d.ContextWindow), d.TokenSource)
	case d.Reason == ReasonModelUnsupported:
		fmt.Fprintf(&b, " (model %q does not take tool_reference blocks)", d.Model)
	case d.Reason == ReasonPending:
		fmt.Fprintf(&b, " (waiting for %s)", strings.Join(d.PendingServers, ", "))
	}
	if d.CountError != "" {
		fmt.Fprintf(&b, "; token count failed (%s), used the character heuristic", d.CountError)
	}
	return b.String()
}

func cmpSign(a, b int) string {
	if a >= b {
		return "≥"
	}
	return "<"
}

// english formats numbers for people: 1234567 → "1,234,567".
var english = message.NewPrinter(language.English)

func num(n int) string { return english.Sprint(n) }
