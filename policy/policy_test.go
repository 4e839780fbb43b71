package policy

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestFromEnv(t *testing.T) {
	tests := []struct {
		enable, betas string
		want          Settings
		err           string
	}{
		{"", "", Settings{Mode: ModeAlways, Percent: 10}, ""},
		{"  ", "", Settings{Mode: ModeAlways, Percent: 10}, ""},
		{"true", "", Settings{Mode: ModeAlways, Percent: 10, Explicit: true}, ""},
		{"1", "", Settings{Mode: ModeAlways, Percent: 10, Explicit: true}, ""},
		{"YES", "", Settings{Mode: ModeAlways, Percent: 10, Explicit: true}, ""},
		{"on", "", Settings{Mode: ModeAlways, Percent: 10, Explicit: true}, ""},
		{"auto:0", "", Settings{Mode: ModeAlways, Percent: 10, Explicit: true}, ""},
		{"auto", "", Settings{Mode: ModeAuto, Percent: 10, Explicit: true}, ""},
		{"Auto", "", Settings{Mode: ModeAuto, Percent: 10, Explicit: true}, ""},
		{"auto:1", "", Settings{Mode: ModeAuto, Percent: 1, Explicit: true}, ""},
		{"auto:50", "", Settings{Mode: ModeAuto, Percent: 50, Explicit: true}, ""},
		{"auto:99", "", Settings{Mode: ModeAuto, Percent: 99, Explicit: true}, ""},
		{"false", "", Settings{Mode: ModeStandard, Percent: 10, Explicit: true}, ""},
		{"0", "", Settings{Mode: ModeStandard, Percent: 10, Explicit: true}, ""},
		{"no", "", Settings{Mode: ModeStandard, Percent: 10, Explicit: true}, ""},
		{"off", "", Settings{Mode: ModeStandard, Percent: 10, Explicit: true}, ""},
		{"true", "1", Settings{Mode: ModeStandard, Percent: 10, Explicit: true, BetasDisabled: true}, ""},
		{"auto:20", "true", Settings{Mode: ModeStandard, Percent: 20, Explicit: true, BetasDisabled: true}, ""},
		{"", "false", Settings{Mode: ModeAlways, Percent: 10}, ""},
		{"auto:150", "", Settings{}, `ENABLE_TOOL_SEARCH="auto:150": the threshold must be 0 to 99 percent, got 150`},
		{"auto:-5", "", Settings{}, "must be 0 to 99 percent"},
		{"auto:x", "", Settings{}, `ENABLE_TOOL_SEARCH="auto:x": the threshold after auto: must be a whole percentage`},
		{"auto:", "", Settings{}, "must be a whole percentage"},
		{"maybe", "", Settings{}, `ENABLE_TOOL_SEARCH="maybe": want true, false, auto or auto:N`},
		{"true", "kinda", Settings{}, `DISABLE_EXPERIMENTAL_BETAS="kinda"`},
	}
	for _, tt := range tests {
		env := map[string]string{EnvEnableToolSearch: tt.enable, EnvDisableBetas: tt.betas}
		got, err := FromEnv(func(k string) string { return env[k] })
		if tt.err != "" {
			if err == nil || !strings.Contains(err.Error(), tt.err) {
				t.Errorf("FromEnv(%q, %q) error = %v, want %q", tt.enable, tt.betas, err, tt.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("FromEnv(%q, %q): %v", tt.enable, tt.betas, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("FromEnv(%q, %q) (-want +got):\n%s", tt.enable, tt.betas, diff)
		}
	}
}

func TestChecklist(t *testing.T) {
	c := Checklist{SearchTool: "ToolSearch", Essential: []string{"Agent", "Brief"}}
	tests := []struct {
		tool Tool
		want Verdict
	}{
		{Tool{Name: "mcp__db__query", MCP: true, AlwaysLoad: true}, Verdict{false, ReasonAlwaysLoad}},
		{Tool{Name: "mcp__github__create_issue", MCP: true}, Verdict{true, ReasonMCP}},
		// An MCP server that wraps a tool called ToolSearch gets no pass.
		{Tool{Name: "ToolSearch", MCP: true}, Verdict{true, ReasonMCP}},
		{Tool{Name: "ToolSearch"}, Verdict{false, ReasonSearchTool}},
		{Tool{Name: "ToolSearch", ShouldDefer: true}, Verdict{false, ReasonSearchTool}},
		{Tool{Name: "Agent", ShouldDefer: true}, Verdict{false, ReasonEssential}},
		{Tool{Name: "NotebookEdit", ShouldDefer: true}, Verdict{true, ReasonShouldDefer}},
		{Tool{Name: "Read"}, Verdict{false, ReasonNotMarked}},
		{Tool{Name: "Read", AlwaysLoad: true, ShouldDefer: true}, Verdict{false, ReasonAlwaysLoad}},
	}
	for _, tt := range tests {
		if got := c.Defer(tt.tool); got != tt.want {
			t.Errorf("Defer(%+v) = %+v, want %+v", tt.tool, got, tt.want)
		}
	}
}

func TestThreshold(t *testing.T) {
	for _, tt := range []struct{ window, pct, want, chars int }{
		{200_000, 10, 20_000, 50_000},
		{200_000, 1, 2_000, 5_000},
		{200_000, 99, 198_000, 495_000},
		{1_000_000, 10, 100_000, 250_000},
		{199_999, 10, 19_999, 49_997}, // floor, then floor(19,999 × 2.5) = floor(49,997.5)
		{33_333, 3, 999, 2_497},       // floor(999.99)
	} {
		if got := Threshold(tt.window, tt.pct); got != tt.want {
			t.Errorf("Threshold(%d, %d) = %d, want %d", tt.window, tt.pct, got, tt.want)
		}
		if got := CharThreshold(tt.want); got != tt.chars {
			t.Errorf("CharThreshold(%d) = %d, want %d", tt.want, got, tt.chars)
		}
	}
}

func TestModels(t *testing.T) {
	for model, want := range map[string]bool{
		"claude-sonnet-4-5": true, "claude-opus-4-1-20250805": true, "claude-haiku-4-5": false,
		"claude-3-5-HAIKU-latest": false, "some-future-model": true, "": true,
	} {
		if got := ModelSupported(model, nil); got != want {
			t.Errorf("ModelSupported(%q) = %v", model, got)
		}
	}
	if ModelSupported("claude-sonnet-4-5", []string{"sonnet"}) || !ModelSupported("claude-haiku-4-5", []string{}) {
		t.Error("a configured negative list is not used")
	}
	for model, want := range map[string]int{
		"claude-sonnet-4-5": 200_000, "claude-sonnet-4-5[1m]": 1_000_000, "claude-opus-4-6-1m": 1_000_000, "gpt-x": 200_000,
	} {
		if got := ContextWindow(model); got != want {
			t.Errorf("ContextWindow(%q) = %d, want %d", model, got, want)
		}
	}
	for u, want := range map[string]bool{
		"": true, "https://api.anthropic.com": true, "https://api.anthropic.com/v1/": true, "https://eu.api.anthropic.com": true,
		"http://localhost:4000": false, "https://litellm.corp.example": false, "https://anthropic.com.evil.example": false, "::bad": false,
	} {
		if got := AnthropicURL(u); got != want {
			t.Errorf("AnthropicURL(%q) = %v", u, got)
		}
	}
}

func TestDecide(t *testing.T) {
	mcp := []Tool{{Name: "mcp__a__x", MCP: true}, {Name: "mcp__a__y", MCP: true}, {Name: "ToolSearch"}}
	always := Settings{Mode: ModeAlways, Percent: 10}
	auto := Settings{Mode: ModeAuto, Percent: 10, Explicit: true}
	base := Request{Settings: always, Model: "claude-sonnet-4-5", SearchAvailable: true, Tools: mcp, Checklist: Checklist{SearchTool: "ToolSearch"}}
	with := func(f func(*Request)) Request { r := base; f(&r); return r }
	tests := []struct {
		name    string
		req     Request
		enabled bool
		reason  string
	}{
		{"always", base, true, ReasonAlways},
		{"standard", with(func(r *Request) { r.Settings.Mode = ModeStandard }), false, ReasonStandardMode},
		{"betas off", with(func(r *Request) { r.Settings = Settings{Mode: ModeStandard, BetasDisabled: true} }), false, ReasonBetasDisabled},
		{"haiku", with(func(r *Request) { r.Model = "claude-haiku-4-5" }), false, ReasonModelUnsupported},
		{"no search tool", with(func(r *Request) { r.SearchAvailable = false }), false, ReasonSearchUnavailable},
		{"proxy, unset", with(func(r *Request) { r.BaseURL = "http://127.0.0.1:4000" }), false, ReasonProxy},
		{"proxy, explicit", with(func(r *Request) { r.BaseURL = "http://127.0.0.1:4000"; r.Settings.Explicit = true }), true, ReasonAlways},
		{"proxy, bedrock", with(func(r *Request) { r.BaseURL = "http://127.0.0.1:4000"; r.Provider = ProviderBedrock }), true, ReasonAlways},
		{"anthropic url", with(func(r *Request) { r.BaseURL = "https://api.anthropic.com" }), true, ReasonAlways},
		{"nothing deferred", with(func(r *Request) { r.Tools = []Tool{{Name: "ToolSearch"}} }), false, ReasonNoDeferred},
		{"nothing yet, pending", with(func(r *Request) { r.Tools = nil; r.Pending = []string{"github"} }), true, ReasonPending},
		{"all alwaysLoad", with(func(r *Request) { r.Tools = []Tool{{Name: "mcp__a__x", MCP: true, AlwaysLoad: true}} }), false, ReasonNoDeferred},
		{"auto, tokens above", with(func(r *Request) {
			r.Settings = auto
			r.Cost = Cost{Tokens: 20_000, Source: SourceTokenizer}
		}), true, ReasonAboveThreshold},
		{"auto, tokens below", with(func(r *Request) {
			r.Settings = auto
			r.Cost = Cost{Tokens: 19_999, Chars: 1 << 30, Source: SourceCountTokens}
		}), false, ReasonBelowThreshold},
		{"auto, heuristic above", with(func(r *Request) { r.Settings = auto; r.Cost = Cost{Chars: 50_000, Source: SourceHeuristic} }), true, ReasonAboveThreshold},
		{"auto, heuristic below", with(func(r *Request) {
			r.Settings = auto
			r.Cost = Cost{Chars: 49_999, Tokens: 1 << 30, Source: SourceHeuristic}
		}), false, ReasonBelowThreshold},
		{"auto, no count", with(func(r *Request) { r.Settings = auto; r.Cost = Cost{Chars: 60_000} }), true, ReasonAboveThreshold},
		{"auto:50 1M", with(func(r *Request) {
			r.Settings = Settings{Mode: ModeAuto, Percent: 50}
			r.Model = "claude-sonnet-4-5[1m]"
			r.Cost = Cost{Tokens: 499_999, Source: SourceTokenizer}
		}), false, ReasonBelowThreshold},
		{"auto, window override", with(func(r *Request) {
			r.Settings = auto
			r.ContextWindow = 10_000
			r.Cost = Cost{Tokens: 1_000, Source: SourceTokenizer}
		}), true, ReasonAboveThreshold},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := Decide(tt.req)
			if d.Enabled != tt.enabled || d.Reason != tt.reason {
				t.Errorf("Decide = %v/%s, want %v/%s (%s)", d.Enabled, d.Reason, tt.enabled, tt.reason, d)
			}
			if d.Enabled != (len(d.Deferred) > 0) && d.Reason != ReasonPending {
				t.Errorf("enabled %v with deferred %v", d.Enabled, d.Deferred)
			}
		})
	}
	d := Decide(with(func(r *Request) { r.Settings = auto; r.Cost = Cost{Tokens: 57_012, Source: SourceTokenizer} }))
	if got, want := d.String(), "enabled: auto_above_threshold (57,012 tokens ≥ threshold 20,000: 10% of 200,000; tokenizer)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
	if d.MCPTools != 2 || d.Deferrable != 2 || d.Threshold != 20_000 {
		t.Errorf("counts: %+v", d)
	}
	d = Decide(with(func(r *Request) { r.Settings = auto; r.Cost = Cost{Chars: 1_000, Source: SourceHeuristic} }))
	if got, want := d.String(), "disabled: auto_below_threshold (1,000 chars < threshold 50,000 chars: 10% of 200,000 tokens × 2.5; heuristic)"; got != want {
		t.Errorf("String() = %q, want %q", got, want)
	}
}

func TestCounters(t *testing.T) {
	defs := []json.RawMessage{
		json.RawMessage(`{"name":"mcp__github__create_issue","description":"Create a new issue in a GitHub repository","input_schema":{"type":"object","properties":{"title":{"type":"string"}}}}`),
	}
	chars := len("mcp__github__create_issue") + len("Create a new issue in a GitHub repository") + len(`{"type":"object","properties":{"title":{"type":"string"}}}`)
	if got := Chars(defs); got != chars {
		t.Errorf("Chars = %d, want %d", got, chars)
	}
	h, _ := Heuristic{}.CountTokens(context.Background(), defs)
	if want := (chars*2 + 4) / 5; h != want {
		t.Errorf("Heuristic = %d, want ceil(%d / 2.5) = %d", h, chars, want)
	}
	raw, err := CL100K(string(defs[0]))
	if err != nil || raw < 20 || raw > 60 {
		t.Fatalf("CL100K = %d, %v", raw, err)
	}
	tok, _ := Tokenizer{Factor: 2}.CountTokens(context.Background(), defs)
	if tok != 2*raw {
		t.Errorf("Tokenizer{2} = %d, want %d", tok, 2*raw)
	}
	if n, _ := CL100K("hello world"); n != 2 {
		t.Errorf(`CL100K("hello world") = %d, want 2`, n)
	}
}

type failingCounter struct{}

func (failingCounter) CountTokens(context.Context, []json.RawMessage) (int, error) {
	return 0, errors.New("count_tokens: 503 overloaded")
}

// A counter that fails gives way to the heuristic, and the decision says so.
func TestMeasureFallsBack(t *testing.T) {
	defs := []json.RawMessage{json.RawMessage(`{"name":"mcp__a__x","description":"` + strings.Repeat("d", 100) + `","input_schema":{"type":"object"}}`)}
	c := Measure(context.Background(), failingCounter{}, defs)
	if c.Source != SourceHeuristic || c.CountError != "count_tokens: 503 overloaded" || c.Chars != Chars(defs) || c.Tokens == 0 {
		t.Fatalf("cost = %+v", c)
	}
	d := Decide(Request{Settings: Settings{Mode: ModeAuto, Percent: 10}, Model: "claude-opus-4-1", SearchAvailable: true,
		Tools: []Tool{{Name: "mcp__a__x", MCP: true}}, Cost: c})
	if d.Enabled || d.TokenSource != SourceHeuristic || !strings.Contains(d.String(), "token count failed (count_tokens: 503 overloaded), used the character heuristic") {
		t.Errorf("decision: %s", d)
	}
	if c := Measure(context.Background(), Tokenizer{}, defs); c.Source != SourceTokenizer || c.CountError != "" {
		t.Errorf("tokenizer cost = %+v", c)
	}
	d = Decide(Request{Settings: Settings{Mode: ModeAlways}, Model: "claude-opus-4-1", SearchAvailable: true,
		Tools: []Tool{{Name: "mcp__a__x", MCP: true}}, Cost: Cost{Tokens: 30_000, Source: SourceTokenizer}})
	if got, want := d.String(), "enabled: tst_enabled (always, whatever the cost: 30,000 tokens; auto mode's threshold would be 20,000, 10% of 200,000; tokenizer)"; got != want {
		t.Errorf("String = %q, want %q", got, want)
	}
}
