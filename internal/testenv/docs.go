package testenv

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// DocSays fails the test when the document doc (a path from the
// checkout's root, such as "docs/benchmarks.md") does not hold each of
// want: the figures a test measures, written as the document writes them
// (see Thousands). A figure that drifts from what its command gives then
// fails the test that gives it, which names the document and the text.
func DocSays(t testing.TB, doc string, want ...string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(Root(t), doc))
	if err != nil {
		t.Fatal(err)
	}
	for _, w := range want {
		if !strings.Contains(string(b), w) {
			t.Errorf("%s does not say %q, which this test measures now: mend the figure there (or what changed it)", doc, w)
		}
	}
}

// Thousands writes n with a comma between thousands, as the documents
// do: 195445 is "195,445".
func Thousands(n int) string {
	s := strconv.Itoa(n)
	for i := len(s) - 3; i > 0 && s[i-1] != '-'; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
