package rules

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/big"
	"strings"

	"github.com/cedar-policy/cedar-go/types"
)

// What a rule sees of a call's arguments: every one of them, or the call
// is refused. A model writes arguments, so they are bounded; but a bound
// that cut them silently would let a rule read a value that is not there,
// and an argument padded past it would slip by (a forbid that cannot be
// evaluated is a refusal, see Decide, but only a whole view tells a
// missing argument from a cut one).
const (
	maxArgsDepth = 32
	maxArgsItems = 20_000
	// maxNumberText bounds a number's text that is read exactly: beyond
	// it a number is neither a long nor a decimal anyway.
	maxNumberText = 48
)

// An ArgsError is a call's arguments that the rules cannot be given
// whole: not a JSON object, or past a bound. A call with such arguments
// is refused when any rule reads them.
type ArgsError struct{ Reason string }

func (e *ArgsError) Error() string { return "the rules cannot read the arguments: " + e.Reason }

// argsValues turns a call's JSON arguments into what rules see:
// context.args, the arguments as they are, and context.clean, the same
// with every string that names a path normalised (cleanPath). Objects
// are records, arrays sets, strings strings and numbers numbers (see
// numberValue). No arguments is the empty record.
func argsValues(raw json.RawMessage, clean bool) (args, cleaned types.Value, err error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return types.NewRecord(nil), types.NewRecord(nil), nil
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, nil, &ArgsError{Reason: "not JSON: " + err.Error()}
	}
	if dec.More() {
		return nil, nil, &ArgsError{Reason: "more than one JSON value"}
	}
	if _, ok := v.(map[string]any); !ok {
		return nil, nil, &ArgsError{Reason: fmt.Sprintf("a JSON %s, not an object", jsonKind(v))}
	}
	c := converter{}
	if args, err = c.value(v, 0, false); err != nil {
		return nil, nil, err
	}
	cleaned = types.NewRecord(nil)
	if clean {
		c = converter{}
		if cleaned, err = c.value(v, 0, true); err != nil {
			return nil, nil, err
		}
	}
	return args, cleaned, nil
}

// converter turns decoded JSON into Cedar values within the bounds.
type converter struct{ items int }

func (c *converter) value(v any, depth int, clean bool) (types.Value, error) {
	c.items++
	if depth > maxArgsDepth {
		return nil, &ArgsError{Reason: fmt.Sprintf("nested deeper than %d levels", maxArgsDepth)}
	}
	if c.items > maxArgsItems {
		return nil, &ArgsError{Reason: fmt.Sprintf("more than %d values", maxArgsItems)}
	}
	switch v := v.(type) {
	case nil:
		// Cedar has no null: an empty record, which no comparison with
		// a string or a number takes (an error, so a refusal).
		return types.NewRecord(nil), nil
	case string:
		if clean {
			cleaned, err := cleanValue(v)
			if err != nil {
				return nil, err
			}
			v = cleaned
		}
		return types.String(v), nil
	case bool:
		return types.Boolean(v), nil
	case json.Number:
		return numberValue(v), nil
	case []any:
		vals := make([]types.Value, 0, len(v))
		for _, x := range v {
			cv, err := c.value(x, depth+1, clean)
			if err != nil {
				return nil, err
			}
			vals = append(vals, cv)
		}
		return types.NewSet(vals...), nil
	case map[string]any:
		m := make(types.RecordMap, len(v))
		for k, x := range v {
			cv, err := c.value(x, depth+1, clean)
			if err != nil {
				return nil, err
			}
			m[types.String(k)] = cv
		}
		return types.NewRecord(m), nil
	}
	return nil, &ArgsError{Reason: fmt.Sprintf("a value of type %T", v)}
}

// numberValue is a JSON number as rules see it, exactly or not at all: a
// whole number that fits 64 bits is a long (compare it with <, >, ==); one
// with at most four decimal places within ±922337203685477 is a decimal
// (compare it with .lessThan(decimal("100")) and the like); any other
// (1e300, 0.123456) is its text, a string. A comparison that does not
// take the value's type is an error, and an error in a forbid refuses the
// call: no number passes a rule by being read wrongly.
func numberValue(n json.Number) types.Value {
	s := n.String()
	if len(s) > maxNumberText {
		return types.String(s)
	}
	if exp := strings.IndexAny(s, "eE"); exp >= 0 {
		// big.Rat would expand 1e999999999; no long or decimal is
		// that large or that small.
		var e int
		if _, err := fmt.Sscan(strings.TrimPrefix(s[exp+1:], "+"), &e); err != nil || e > 40 || e < -40 {
			return types.String(s)
		}
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return types.String(s)
	}
	if r.IsInt() && r.Num().IsInt64() {
		return types.Long(r.Num().Int64())
	}
	scaled := new(big.Rat).Mul(r, big.NewRat(10000, 1))
	if scaled.IsInt() && scaled.Num().IsInt64() {
		if d, err := types.NewDecimal(scaled.Num().Int64(), -4); err == nil {
			return d
		}
	}
	return types.String(s)
}

func jsonKind(v any) string {
	switch v.(type) {
	case []any:
		return "array"
	case string:
		return "string"
	case json.Number:
		return "number"
	case bool:
		return "boolean"
	case nil:
		return "null"
	}
	return "value"
}
