// Package policy decides which tools are deferred and whether tool search
// is used, and says why.
//
// The rules are Claude Code's: a mode from ENABLE_TOOL_SEARCH (always
// defer, defer above a threshold, never), a per-tool checklist in a fixed
// priority order, a threshold of a percentage of the model's context
// window, a negative list of models without tool_reference support, and
// proxy detection. Everything here is a pure function of its inputs; token
// counts are measured by a [Counter] and passed in. Whenever the inputs
// leave a doubt, the decision is to load every tool rather than hide any.
//
// The package does no network or process I/O.
package policy

import (
	"fmt"
	"strconv"
	"strings"
)

// Mode is how tools are deferred.
type Mode string

const (
	// ModeAlways defers every deferrable tool ("tst").
	ModeAlways Mode = "tst"
	// ModeAuto defers only when the deferrable tools cost more than a
	// percentage of the context window ("tst-auto").
	ModeAuto Mode = "tst-auto"
	// ModeStandard never defers: every tool is sent in full.
	ModeStandard Mode = "standard"
)

// Words says what a mode does, for people: the mode's name ("tst") is
// Claude Code's jargon.
func (m Mode) Words() string {
	switch m {
	case ModeAlways:
		return "always search (every deferrable tool deferred)"
	case ModeAuto:
		return "auto (search once the tools cost more than a share of the context window)"
	case ModeStandard:
		return "never search (every tool listed)"
	}
	return string(m)
}

// DefaultPercent is the auto mode's threshold: 10% of the context window.
const DefaultPercent = 10

// Settings are the user's settings that choose the mode.
type Settings struct {
	Mode Mode `json:"mode"`
	// Percent is the auto mode's threshold, 1–99.
	Percent int `json:"percent"`
	// Explicit reports that ENABLE_TOOL_SEARCH was set to a non-empty
	// value: the user vouches for their proxy (see [Optimistic]).
	Explicit bool `json:"explicit"`
	// BetasDisabled is DISABLE_EXPERIMENTAL_BETAS: standard mode, and no
	// beta-only fields or headers on the wire.
	BetasDisabled bool `json:"betasDisabled"`
}

// Environment variables read by [FromEnv].
const (
	EnvEnableToolSearch = "ENABLE_TOOL_SEARCH"
	EnvDisableBetas     = "DISABLE_EXPERIMENTAL_BETAS"
)

// FromEnv reads the settings from environment variables:
//
//	ENABLE_TOOL_SEARCH unset or empty  always defer (tst)
//	true, 1, yes, on, auto:0           always defer (tst)
//	auto                               defer above 10% of the context window (tst-auto)
//	auto:N, 1 ≤ N ≤ 99                 defer above N% (tst-auto)
//	false, 0, no, off                  never defer (standard)
//	DISABLE_EXPERIMENTAL_BETAS truthy  standard, whatever else is set
//
// Any other value is an error naming the variable: a typo must not
// silently pick a mode.
func FromEnv(getenv func(string) string) (Settings, error) {
	s, err := ParseMode(getenv(EnvEnableToolSearch))
	if err != nil {
		return s, fmt.Errorf("%s=%w", EnvEnableToolSearch, err)
	}
	if v := strings.TrimSpace(getenv(EnvDisableBetas)); v != "" {
		off, ok := parseBool(v)
		if !ok {
			return s, fmt.Errorf("%s=%q: want true or false", EnvDisableBetas, v)
		}
		if off {
			s.Mode, s.BetasDisabled = ModeStandard, true
		}
	}
	return s, nil
}

// ParseMode reads a mode as ENABLE_TOOL_SEARCH or toolshelf serve --mode
// write it. It is the only parser of modes, so that the gateway, doctor,
// the Messages library and the proxy read a setting the same way:
//
//	"", true, 1, yes, on, search, auto:0   always defer (tst)
//	auto                                  defer above 10% of the context window (tst-auto)
//	auto:N, 1 ≤ N ≤ 99                    defer above N% (tst-auto)
//	false, 0, no, off, all                never defer (standard)
//
// Explicit is set for any non-empty value. Errors quote the value; callers
// say where it came from.
func ParseMode(value string) (Settings, error) {
	v := strings.ToLower(strings.TrimSpace(value))
	s := Settings{Mode: ModeAlways, Percent: DefaultPercent, Explicit: v != ""}
	switch v {
	case "", "search":
		return s, nil
	case "all":
		s.Mode = ModeStandard
		return s, nil
	case "auto":
		s.Mode = ModeAuto
		return s, nil
	}
	if n, ok := strings.CutPrefix(v, "auto:"); ok {
		p, err := strconv.Atoi(n)
		switch {
		case err != nil:
			return s, fmt.Errorf("%q: the threshold after auto: must be a whole percentage, 0 to 99", value)
		case p == 0:
			return s, nil // auto:0 defers always
		case p < 0 || p > 99:
			return s, fmt.Errorf("%q: the threshold must be 0 to 99 percent, got %d", value, p)
		}
		s.Mode, s.Percent = ModeAuto, p
		return s, nil
	}
	b, ok := parseBool(v)
	if !ok {
		return s, fmt.Errorf("%q: want true, false, auto or auto:N (N from 0 to 99); serve --mode also takes search and all", value)
	}
	if !b {
		s.Mode = ModeStandard
	}
	return s, nil
}

func parseBool(v string) (value, ok bool) {
	switch strings.ToLower(v) {
	case "1", "true", "yes", "on":
		return true, true
	case "0", "false", "no", "off":
		return false, true
	}
	return false, false
}
