package evaluate

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/search"
)

// Mending a hard-to-find tool is measured on the half that chose nothing:
// words that half 0's requests used for a tool and missed it with are
// suggested (not the tool's own words, not English's commonest), written
// into its search words, and half 1's requests in the same words find it.
func TestMendIsMeasuredOnTheOtherHalf(t *testing.T) {
	var lines []string
	half := [2]int{}
	for i := 0; half[0] < 3 || half[1] < 3; i++ {
		id := fmt.Sprintf("q%d", i)
		h := Half(Query{ID: id})
		if half[h] >= 3 {
			continue
		}
		half[h]++
		lines = append(lines, fmt.Sprintf(`{"id": %q, "query": "zebrafinch the ledger after %d", "relevant": ["books::close_period"]}`, id, i))
	}
	dir := writeDataset(t, map[string]string{
		"tools.jsonl": `{"id": "books::close_period", "server": "books", "name": "close_period", "description": "Close an accounting period."}
{"id": "books::open_period", "server": "books", "name": "open_period", "description": "Open an accounting period."}
{"id": "mail::send", "server": "mail", "name": "send", "description": "Send an email to the ledger team."}
`,
		"queries.jsonl": strings.Join(lines, "\n") + "\n",
	})
	ds, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	build := func(c *catalog.Catalog) (search.Engine, error) { return search.NewBM25(c), nil }
	m, err := Mend(context.Background(), ds, build, []string{"books::close_period"}, 1)
	if err != nil {
		t.Fatal(err)
	}
	words := m.Words["books::close_period"]
	if !slices.Contains(words, "zebrafinch") || !slices.Contains(words, "ledger") || slices.Contains(words, "after") || slices.Contains(words, "period") {
		t.Errorf("suggested %v", words)
	}
	if m.Before != 0 || m.After != 1 || m.Gain["books::close_period"] != 1 {
		t.Errorf("measured on half 1: %+v", m)
	}
}
