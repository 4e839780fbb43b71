package pin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"
)

// changedFields names the fields in which two definitions differ.
func changedFields(old, cur Definition) string {
	a, b := old.Fields(), cur.Fields()
	var names []string
	for _, f := range pinnedFields {
		if !bytes.Equal(a[f], b[f]) {
			names = append(names, f)
		}
	}
	if len(names) == 0 {
		return "no field"
	}
	return strings.Join(names, ", ")
}

// Diff describes, field by field, how cur differs from old, for a
// person: texts (title, description) as a word diff with [-removed-] and
// {+added+} marks, schemas and annotations as the JSON paths added,
// removed or changed. An empty old is a tool never approved: all of cur
// is shown.
func Diff(old, cur Definition) []string {
	a, b := old.Fields(), cur.Fields()
	var out []string
	for _, f := range pinnedFields {
		if bytes.Equal(a[f], b[f]) {
			continue
		}
		switch f {
		case "name", "title", "description":
			var x, y string
			json.Unmarshal(a[f], &x)
			json.Unmarshal(b[f], &y)
			out = append(out, f+": "+wordDiff(x, y))
		default:
			for _, line := range pathDiff(a[f], b[f]) {
				out = append(out, f+line)
			}
		}
	}
	return out
}

// maxDiffCells bounds the word diff's table: a hostile server's
// megabyte description must not cost a gigabyte to compare.
const maxDiffCells = 1 << 22

// wordDiff marks the words removed from a and added in b.
func wordDiff(a, b string) string {
	x, y := strings.Fields(a), strings.Fields(b)
	if len(x)*len(y) > maxDiffCells {
		return "[-" + a + "-] {+" + b + "+}"
	}
	// Longest common subsequence, filled from the end so the walk below
	// goes forwards.
	n, m := len(x), len(y)
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if x[i] == y[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	var out []string
	var del, add []string
	flush := func() {
		if len(del) > 0 {
			out = append(out, "[-"+strings.Join(del, " ")+"-]")
		}
		if len(add) > 0 {
			out = append(out, "{+"+strings.Join(add, " ")+"+}")
		}
		del, add = nil, nil
	}
	i, j := 0, 0
	for i < n || j < m {
		switch {
		case i < n && j < m && x[i] == y[j]:
			flush()
			out = append(out, x[i])
			i, j = i+1, j+1
		case j < m && (i == n || lcs[i][j+1] >= lcs[i+1][j]):
			add = append(add, y[j])
			j++
		default:
			del = append(del, x[i])
			i++
		}
	}
	flush()
	return strings.Join(out, " ")
}

// pathDiff lists the leaves of two JSON values that differ, as
// "<path>: added|removed|changed ..." lines.
func pathDiff(a, b json.RawMessage) []string {
	la, lb := map[string]string{}, map[string]string{}
	flatten("", a, la)
	flatten("", b, lb)
	keys := slices.Sorted(maps.Keys(la))
	for k := range lb {
		if _, ok := la[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		va, ina := la[k]
		vb, inb := lb[k]
		switch {
		case !ina:
			out = append(out, fmt.Sprintf("%s: added %s", k, clip(vb)))
		case !inb:
			out = append(out, fmt.Sprintf("%s: removed (was %s)", k, clip(va)))
		case va != vb:
			x, y := around(va, vb)
			out = append(out, fmt.Sprintf("%s: %s → %s", k, x, y))
		}
	}
	return out
}

// flatten records every leaf of a JSON value under its path
// (.properties.path.type, [0]).
func flatten(prefix string, raw json.RawMessage, out map[string]string) {
	if len(raw) == 0 {
		return
	}
	var obj map[string]json.RawMessage
	if raw[0] == '{' && json.Unmarshal(raw, &obj) == nil {
		if len(obj) == 0 {
			out[prefix] = "{}"
		}
		for k, v := range obj {
			flatten(prefix+"."+k, v, out)
		}
		return
	}
	var arr []json.RawMessage
	if raw[0] == '[' && json.Unmarshal(raw, &arr) == nil {
		if len(arr) == 0 {
			out[prefix] = "[]"
		}
		for i, v := range arr {
			flatten(fmt.Sprintf("%s[%d]", prefix, i), v, out)
		}
		return
	}
	out[prefix] = string(raw)
}

// around shows two long strings where they first differ (an app's HTML,
// a long text in a schema), as text rather than JSON: the change, not
// the start both share.
func around(a, b string) (string, string) {
	var x, y string
	if json.Unmarshal([]byte(a), &x) != nil || json.Unmarshal([]byte(b), &y) != nil || (len(a) <= 120 && len(b) <= 120) {
		return clip(a), clip(b)
	}
	p := 0
	for p < len(x) && p < len(y) && x[p] == y[p] {
		p++
	}
	from := max(0, p-40)
	for from > 0 && !utf8.RuneStart(x[from]) {
		from--
	}
	window := func(s string) string {
		to := min(len(s), p+60)
		for to < len(s) && !utf8.RuneStart(s[to]) {
			to++
		}
		w := s[from:to]
		if from > 0 {
			w = "…" + w
		}
		if to < len(s) {
			w += "…"
		}
		return strconv.Quote(w)
	}
	return window(x), window(y)
}

// clip shortens a value for a diff line.
func clip(s string) string {
	const n = 120
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
