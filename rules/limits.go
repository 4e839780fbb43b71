package rules

import (
	"fmt"
	"regexp"
	"strconv"
	"sync"
	"time"

	"github.com/cedar-policy/cedar-go"
)

// A limit rule is a permit rule with @limit ("N/minute", "N/second",
// "N/hour" or "N at once"): the calls it matches count against it, by principal (and by server or tool with @per), and a call
// past the limit is refused with when to try again.
//
//	@limit("30/minute") @per("server")
//	permit (principal, action == Action::"call", resource) when { resource.server == "payments" };
//
//	@limit("2 at once")
//	permit (principal == Profile::"ci", action, resource);

// limitSpec is a parsed @limit: n calls a window (a second, a minute
// or an hour), or n at once.
type limitSpec struct {
	n      int
	window time.Duration
	atOnce bool
	per    string // "", "server" or "tool"
}

var (
	perWindow = regexp.MustCompile(`^\s*(\d+)\s*(?:/|per|a)\s*(second|minute|hour)\s*$`)
	atOnce    = regexp.MustCompile(`^\s*(\d+)\s+at\s+once\s*$`)
	windows   = map[string]time.Duration{"second": time.Second, "minute": time.Minute, "hour": time.Hour}
)

// parseLimit reads a rule's @limit and @per.
func parseLimit(p *cedar.Policy) (*limitSpec, error) {
	a := p.Annotations()
	raw, ok := a["limit"]
	if !ok {
		if _, per := a["per"]; per {
			return nil, fmt.Errorf("@per goes with @limit")
		}
		return nil, nil
	}
	if p.Effect() != cedar.Permit {
		return nil, fmt.Errorf("@limit is for permit rules: the calls they match are counted")
	}
	s := &limitSpec{}
	switch m := perWindow.FindStringSubmatch(string(raw)); {
	case m != nil:
		s.n, _ = strconv.Atoi(m[1])
		s.window = windows[m[2]]
	default:
		m = atOnce.FindStringSubmatch(string(raw))
		if m == nil {
			return nil, fmt.Errorf(`@limit(%q): want "N/minute" (or /second, /hour) or "N at once"`, raw)
		}
		s.n, _ = strconv.Atoi(m[1])
		s.atOnce = true
	}
	if s.n <= 0 || s.n > 1_000_000 {
		return nil, fmt.Errorf("@limit(%q): the number must be between 1 and 1000000", raw)
	}
	switch per := string(a["per"]); per {
	case "", "profile":
	case "server", "tool":
		s.per = per
	default:
		return nil, fmt.Errorf(`@per(%q): want "profile", "server" or "tool"`, per)
	}
	return s, nil
}

// counters hold what limits counted: they outlive a reload of the rules,
// by the rule's name and the key its @per gives.
type counters struct {
	mu       sync.Mutex
	recent   map[string][]time.Time // calls of the last window, oldest first
	inFlight map[string]int
}

func newCounters() *counters {
	return &counters{recent: map[string][]time.Time{}, inFlight: map[string]int{}}
}

// A LimitError is a call past a limit: Rule names it, Retry says when a
// call would go (zero for "at once": when one ends).
type LimitError struct {
	Rule  string
	Limit string
	Retry time.Duration
}

func (e *LimitError) Error() string {
	if e.Retry > 0 {
		return fmt.Sprintf("limited by %s (%s): try again in %s", e.Rule, e.Limit, max(e.Retry.Round(100*time.Millisecond), 100*time.Millisecond))
	}
	return fmt.Sprintf("limited by %s (%s): try again when one of those calls has ended", e.Rule, e.Limit)
}

// take counts a call against a limit; release, for an "at once" limit,
// is to be called when the call ends.
func (c *counters) take(key string, s *limitSpec, rule, text string, now time.Time) (release func(), err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if s.atOnce {
		if c.inFlight[key] >= s.n {
			return nil, &LimitError{Rule: rule, Limit: text}
		}
		c.inFlight[key]++
		var once sync.Once
		return func() {
			once.Do(func() {
				c.mu.Lock()
				defer c.mu.Unlock()
				if c.inFlight[key]--; c.inFlight[key] <= 0 {
					delete(c.inFlight, key)
				}
			})
		}, nil
	}
	calls := c.recent[key]
	i := 0
	for i < len(calls) && now.Sub(calls[i]) >= s.window {
		i++
	}
	calls = calls[i:]
	if len(calls) >= s.n {
		c.recent[key] = calls
		return nil, &LimitError{Rule: rule, Limit: text, Retry: calls[0].Add(s.window).Sub(now)}
	}
	c.recent[key] = append(calls, now)
	return func() {}, nil
}
