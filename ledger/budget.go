package ledger

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Budget limits what one person, profile or group (or everyone) spends
// in a window: dollars, tokens and requests of the model API, tool calls
// through the gateway. A zero limit is no limit.
type Budget struct {
	// For is "person:NAME" (the person's email, else subject),
	// "profile:NAME", "group:NAME" or "everyone".
	For       string
	USD       float64
	Tokens    int64
	Requests  int64
	ToolCalls int64
	// Per is "hour", "day", "week" or "month".
	Per string
	// Calendar windows start at the hour, midnight, Monday or the 1st
	// (UTC); otherwise the window is the last hour, day, 7 days or 30
	// days.
	Calendar bool
	// WarnAt is the share spent past which answers carry a warning (0:
	// the ledger's, 0.8 by default).
	WarnAt float64
}

// Pers are the windows a budget may have.
var Pers = []string{"hour", "day", "week", "month"}

// Check says what is wrong with b, if anything.
func (b *Budget) Check() error {
	kind, name, _ := strings.Cut(b.For, ":")
	switch {
	case b.For == "everyone":
	case (kind == "person" || kind == "profile" || kind == "group") && name != "":
	default:
		return fmt.Errorf(`"for" is %q: want "person:NAME", "profile:NAME", "group:NAME" or "everyone"`, b.For)
	}
	if b.USD < 0 || b.Tokens < 0 || b.Requests < 0 || b.ToolCalls < 0 {
		return errors.New(`a limit is negative: "usd", "tokens", "requests" and "toolCalls" are amounts of zero or more`)
	}
	if b.USD == 0 && b.Tokens == 0 && b.Requests == 0 && b.ToolCalls == 0 {
		return errors.New(`it limits nothing: give "usd", "tokens", "requests" or "toolCalls"`)
	}
	if b.WarnAt < 0 || b.WarnAt > 1 {
		return fmt.Errorf(`"warnAt" is %v: want a share between 0 and 1, such as 0.9`, b.WarnAt)
	}
	if !slices.Contains(Pers, b.Per) {
		return fmt.Errorf(`"per" is %q: want "hour", "day", "week" or "month"`, b.Per)
	}
	return nil
}

// Name names the budget in messages: person:alice/day.
func (b *Budget) Name() string {
	n := b.For + "/" + b.Per
	if b.Calendar {
		n += " (calendar)"
	}
	return n
}

// Applies reports whether the budget counts what w does.
func (b *Budget) Applies(w *Who) bool {
	s := b.Scope(time.Time{})
	e := Entry{Who: *w}
	return s.Holds(&e)
}

// Counts reports whether the budget limits entries of kind.
func (b *Budget) Counts(kind string) bool {
	if kind == KindCall {
		return b.ToolCalls > 0
	}
	return b.USD > 0 || b.Tokens > 0 || b.Requests > 0
}

// Scope is the part of the ledger the budget counts at now.
func (b *Budget) Scope(now time.Time) Scope {
	kind, name, _ := strings.Cut(b.For, ":")
	start, _ := b.window(now)
	return Scope{Kind: kind, Name: name, Since: start, Key: b.Name()}
}

// window is the budget's window at now: its start, and its end for a
// calendar window (zero for a rolling one).
func (b *Budget) window(now time.Time) (start, end time.Time) {
	if now.IsZero() {
		return time.Time{}, time.Time{}
	}
	now = now.UTC()
	if !b.Calendar {
		return now.Add(-b.length()), time.Time{}
	}
	y, m, d := now.Date()
	switch b.Per {
	case "hour":
		start = now.Truncate(time.Hour)
		return start, start.Add(time.Hour)
	case "day":
		start = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 1)
	case "week":
		back := (int(now.Weekday()) + 6) % 7 // days since Monday
		start = time.Date(y, m, d-back, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 0, 7)
	default:
		start = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		return start, start.AddDate(0, 1, 0)
	}
}

// length is a rolling window's length.
func (b *Budget) length() time.Duration {
	switch b.Per {
	case "hour":
		return time.Hour
	case "day":
		return 24 * time.Hour
	case "week":
		return 7 * 24 * time.Hour
	}
	return 30 * 24 * time.Hour
}

// over is the refusal of e when the budget's sums already reach a limit
// that counts e, or nil. Dollars and tokens are refused once spent (what
// a request will cost is not known before it runs); requests and tool
// calls when e would be one past the limit.
func (b *Budget) over(s Sums, e *Entry, now time.Time) *OverError {
	refuse := func(spent, limit string) *OverError {
		_, end := b.window(now)
		if end.IsZero() {
			end = now.Add(b.length())
			if !s.Oldest.IsZero() {
				end = s.Oldest.Add(b.length())
			}
		}
		return &OverError{Budget: *b, Spent: spent, Limit: limit, Frees: end}
	}
	if e.Kind == KindCall {
		if b.ToolCalls > 0 && s.Calls >= b.ToolCalls {
			return refuse(fmt.Sprintf("%d tool calls", s.Calls), fmt.Sprint(b.ToolCalls))
		}
		return nil
	}
	switch {
	case b.Requests > 0 && s.Requests >= b.Requests:
		return refuse(fmt.Sprintf("%d requests", s.Requests), fmt.Sprint(b.Requests))
	case b.USD > 0 && float64(s.Nanos) >= b.USD*1e9:
		return refuse(fmt.Sprintf("$%.4f", float64(s.Nanos)/1e9), fmt.Sprintf("$%.2f", b.USD))
	case b.Tokens > 0 && s.Tokens >= b.Tokens:
		return refuse(fmt.Sprintf("%d tokens", s.Tokens), fmt.Sprint(b.Tokens))
	}
	return nil
}

// share is the largest share of a limit spent once e is counted (held at
// its most).
func (b *Budget) share(s Sums, e *Entry) float64 {
	var share float64
	ratio := func(spent, limit float64) {
		if limit > 0 {
			share = max(share, spent/limit)
		}
	}
	if e.Kind == KindCall {
		ratio(float64(s.Calls+1), float64(b.ToolCalls))
		return share
	}
	ratio(float64(s.Requests+1), float64(b.Requests))
	ratio(float64(s.Nanos+e.Nanos)/1e9, b.USD)
	ratio(float64(s.Tokens+e.Total()), float64(b.Tokens))
	return share
}
