package gateway

import (
	"bufio"
	"os"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/internal/builtin"
	"github.com/toolshelf/toolshelf/policy"
	"github.com/toolshelf/toolshelf/shelf"
	"github.com/toolshelf/toolshelf/upstream"
)

// everydayRequests reads testdata/everyday-requests.txt.
func everydayRequests(tb testing.TB) []string {
	f, err := os.Open("../testdata/everyday-requests.txt")
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	var qs []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			qs = append(qs, l)
		}
	}
	return qs
}

// BenchmarkEverydayAnswers measures what search_tools' answers to twenty
// everyday requests over the built-in catalog cost, in characters and
// tokens (cl100k × the measured factor for Claude): as before issue 42
// (whole definitions, five matches, text and structured content) and as
// now (compact matches, depth by confidence, text only).
func BenchmarkEverydayAnswers(b *testing.B) {
	queries := everydayRequests(b)
	for _, tc := range []struct {
		name  string
		opts  *Options
		args  map[string]any
		twice bool // the answer was carried as text and as structured content
	}{
		{"before", &Options{Results: shelf.Full, Budget: -1}, map[string]any{"limit": 5}, true},
		{"after", nil, nil, false},
	} {
		b.Run(tc.name, func(b *testing.B) {
			cs := connect(b, newGateway(b, upstream.Fixed(builtin.Catalog(), "the built-in catalog").Scope(nil), tc.opts), nil)
			var chars, tokens, matches int
			for b.Loop() {
				chars, tokens, matches = 0, 0, 0
				for _, q := range queries {
					args := map[string]any{"query": q}
					for k, v := range tc.args {
						args[k] = v
					}
					out := text(call(b, cs, toolSearch, args))
					n, _ := policy.CL100K(out)
					n = int(float64(n) * policy.ClaudeFactor)
					if tc.twice {
						n, out = 2*n, out+out
					}
					chars += len(out)
					tokens += n
					matches += strings.Count(out, `"name":`)
				}
			}
			b.ReportMetric(float64(chars)/float64(len(queries)), "chars/answer")
			b.ReportMetric(float64(tokens)/float64(len(queries)), "tokens/answer")
			b.ReportMetric(float64(matches)/float64(len(queries))/map[bool]float64{true: 2, false: 1}[tc.twice], "matches/answer")
		})
	}
}
