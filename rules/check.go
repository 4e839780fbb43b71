package rules

import (
	"fmt"
	"slices"
	"strings"

	"github.com/cedar-policy/cedar-go"
	"github.com/cedar-policy/cedar-go/types"
	"github.com/cedar-policy/cedar-go/x/exp/ast"
)

// What a rule may read, and of what type: a rule that reads an attribute
// that is never there, or compares values of types that never compare,
// would fail on every call (and so refuse every call it is about); it is
// an error when the rules load, with its file and line. The arguments'
// own types are the tools' and are not known here: a comparison of an
// argument with a string literal is still caught, since no argument
// compares with one.
var (
	resourceAttrs = map[string]kind{"server": kindString, "name": kindString, "readOnly": kindBool,
		"destructive": kindBool, "idempotent": kindBool, "openWorld": kindBool, "unreviewed": kindBool}
	contextAttrs = map[string]kind{"args": kindRecord, "clean": kindRecord, "client": kindString,
		"via": kindString, "hour": kindLong, "person": kindRecord}
	personAttrs = map[string]kind{"sub": kindString, "email": kindString, "groups": kindSet, "claims": kindRecord}
)

type kind int

const (
	kindUnknown kind = iota
	kindString
	kindLong
	kindBool
	kindDecimal
	kindSet
	kindRecord
)

func (k kind) String() string {
	return [...]string{"a value", "a string", "a long", "a boolean", "a decimal", "a set", "a record"}[k]
}

// reads is what of a call a rule reads.
type reads struct {
	context     bool // anything of context
	args, clean bool // context.args, context.clean
	// names are the arguments it reads by name (context.args.path,
	// context.clean.path: "path"), in the order the rule names them.
	names []string
	// warnings are what the rule may not mean (see likePattern).
	warnings []string
}

// check reads a rule for what it reads of a call, and refuses one that
// reads what is never there or compares what never compares.
func check(p *cedar.Policy) (reads, error) {
	var r reads
	var err error
	fail := func(format string, args ...any) bool {
		if err == nil {
			err = fmt.Errorf(format, args...)
		}
		return false
	}
	contextVars, contextReads := 0, 0
	for _, c := range (*ast.Policy)(p.AST()).Conditions {
		ast.Inspect(ast.NewNode(c.Body), func(n ast.IsNode) bool {
			switch n := n.(type) {
			case ast.NodeTypeVariable:
				if n.Name == "context" {
					r.context = true
					contextVars++
				}
			case ast.NodeTypeAccess:
				if attr, known := attribute(n.Arg, string(n.Value)); !known {
					return fail("%s has no attribute %q (it has %s)", describe(n.Arg), n.Value, attrNames(n.Arg))
				} else if isVar(n.Arg, "context") {
					contextReads++
					r.args = r.args || attr == "args"
					r.clean = r.clean || attr == "clean"
				} else if (isAccess(n.Arg, "context", "args") || isAccess(n.Arg, "context", "clean")) && !slices.Contains(r.names, attr) {
					r.names = append(r.names, attr)
				}
			case ast.NodeTypeHas:
				if (isAccess(n.Arg, "context", "args") || isAccess(n.Arg, "context", "clean")) && !slices.Contains(r.names, string(n.Value)) {
					r.names = append(r.names, string(n.Value))
				}
				if isVar(n.Arg, "context") {
					contextReads++
					r.args = r.args || n.Value == "args"
					r.clean = r.clean || n.Value == "clean"
				}
			case ast.NodeTypeLessThan:
				return ordered("<", n.Left, n.Right, fail)
			case ast.NodeTypeLessThanOrEqual:
				return ordered("<=", n.Left, n.Right, fail)
			case ast.NodeTypeGreaterThan:
				return ordered(">", n.Left, n.Right, fail)
			case ast.NodeTypeGreaterThanOrEqual:
				return ordered(">=", n.Left, n.Right, fail)
			case ast.NodeTypeEquals:
				return equal("==", n.Left, n.Right, fail)
			case ast.NodeTypeNotEquals:
				return equal("!=", n.Left, n.Right, fail)
			case ast.NodeTypeLike:
				if k := kindOf(n.Arg); k != kindUnknown && k != kindString {
					return fail("like matches strings, and %s is %s", describe(n.Arg), k)
				}
				if w, err := likePattern(n); err != nil {
					return fail("%v", err)
				} else if w != "" {
					r.warnings = append(r.warnings, w)
				}
			}
			return err == nil
		})
	}
	if contextVars > contextReads {
		// context used whole (passed on, compared): it may read anything.
		r.args, r.clean = true, true
	}
	return r, err
}

// ordered checks an ordering comparison: Cedar orders longs (and
// datetimes); a decimal is compared with its methods.
func ordered(op string, l, r ast.IsNode, fail func(string, ...any) bool) bool {
	for _, n := range []ast.IsNode{l, r} {
		switch k := kindOf(n); k {
		case kindUnknown, kindLong:
		case kindDecimal:
			return fail("%s compares longs; %s is a decimal: use .lessThan(), .greaterThan() and the like", op, describe(n))
		default:
			return fail("%s compares numbers, and %s is %s", op, describe(n), k)
		}
	}
	return true
}

// equal checks an equality that could never hold (or never fail).
func equal(op string, l, r ast.IsNode, fail func(string, ...any) bool) bool {
	if kl, kr := kindOf(l), kindOf(r); kl != kindUnknown && kr != kindUnknown && kl != kr {
		return fail("%s of %s (%s) and %s (%s) is decided by their types alone", op, describe(l), kl, describe(r), kr)
	}
	return true
}

// attribute reports whether an access of attr on n reads an attribute
// that is there; on what is not known (the arguments, claims), it is.
func attribute(n ast.IsNode, attr string) (string, bool) {
	attrs := attrsOf(n)
	if attrs == nil {
		return attr, true
	}
	_, ok := attrs[attr]
	return attr, ok
}

func attrsOf(n ast.IsNode) map[string]kind {
	switch {
	case isVar(n, "resource"):
		return resourceAttrs
	case isVar(n, "context"):
		return contextAttrs
	case isAccess(n, "context", "person"):
		return personAttrs
	}
	return nil
}

func attrNames(n ast.IsNode) string {
	var names []string
	for k := range attrsOf(n) {
		names = append(names, k)
	}
	slices.Sort(names)
	return strings.Join(names, ", ")
}

// kindOf is the type of what n evaluates to, where it is known.
func kindOf(n ast.IsNode) kind {
	switch n := n.(type) {
	case ast.NodeValue:
		switch n.Value.(type) {
		case types.String:
			return kindString
		case types.Long:
			return kindLong
		case types.Boolean:
			return kindBool
		case types.Decimal:
			return kindDecimal
		}
	case ast.NodeTypeExtensionCall:
		if n.Name == "decimal" {
			return kindDecimal
		}
	case ast.NodeTypeAccess:
		if attrs := attrsOf(n.Arg); attrs != nil {
			return attrs[string(n.Value)]
		}
	case ast.NodeTypeLike, ast.NodeTypeEquals, ast.NodeTypeNotEquals, ast.NodeTypeLessThan, ast.NodeTypeGreaterThan,
		ast.NodeTypeLessThanOrEqual, ast.NodeTypeGreaterThanOrEqual, ast.NodeTypeAnd, ast.NodeTypeOr, ast.NodeTypeNot, ast.NodeTypeHas:
		return kindBool
	case ast.NodeTypeSet:
		return kindSet
	case ast.NodeTypeRecord:
		return kindRecord
	}
	return kindUnknown
}

func isVar(n ast.IsNode, name string) bool {
	v, ok := n.(ast.NodeTypeVariable)
	return ok && string(v.Name) == name
}

func isAccess(n ast.IsNode, variable, attr string) bool {
	a, ok := n.(ast.NodeTypeAccess)
	return ok && isVar(a.Arg, variable) && string(a.Value) == attr
}

// describe names an expression in an error: context.args.amount, "100".
func describe(n ast.IsNode) string {
	switch n := n.(type) {
	case ast.NodeTypeVariable:
		return string(n.Name)
	case ast.NodeTypeAccess:
		return describe(n.Arg) + "." + string(n.Value)
	case ast.NodeValue:
		return string(n.Value.MarshalCedar())
	case ast.NodeTypeExtensionCall:
		return string(n.Name) + "(…)"
	}
	return "an expression"
}
