package main

import (
	"context"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/evaluate"
	"github.com/toolshelf/toolshelf/search"
)

// findabilityReport is doctor --findability's: the tools whose words
// will be hard to find, each problem with a suggestion, and with a
// dataset what mending each could bring.
type findabilityReport struct {
	Source string        `json:"source"`
	Tools  int           `json:"tools"`
	Hard   []search.Hard `json:"hard"`
	// Gains, with --dataset, are by tool: the queries needing it, those
	// whose top 5 misses it, and the recall@5 mending it could bring.
	Gains map[string]evaluate.Gain `json:"gains,omitempty"`
	// Mending, with --dataset, is what writing suggested search words
	// did, measured: words from half 0's requests that missed each tool,
	// gains on half 1 (see evaluate.Mend).
	Mending *mendingReport `json:"mending,omitempty"`
}

// mendingReport is evaluate.Mending by tool name.
type mendingReport struct {
	Words  map[string][]string `json:"words"`
	Gain   map[string]float64  `json:"recall_gain_half1"`
	Before float64             `json:"recall_half1_before"`
	After  float64             `json:"recall_half1_after"`
}

// runFindability reports on the catalog of the configuration (or the
// built-in one), or of a dataset, whose queries then measure the gains.
func runFindability(ctx context.Context, e *env, o doctorOptions, dataset string) error {
	var rep findabilityReport
	var cat *catalog.Catalog
	var ds *evaluate.Dataset
	if dataset != "" {
		var err error
		if ds, err = loadDataset(dataset); err != nil {
			return err
		}
		cat, rep.Source = ds.Catalog, "dataset "+ds.Name
	} else {
		src, err := o.open(ctx, e)
		if err != nil {
			return err
		}
		defer src.close()
		cat, rep.Source = src.cat, src.name
	}
	rep.Tools = cat.Len()
	rep.Hard = search.Findability(cat)
	if rep.Hard == nil {
		rep.Hard = []search.Hard{}
	}
	if ds != nil {
		var ids []string
		for _, h := range rep.Hard {
			if e, ok := cat.Find(h.Tool); ok && !slices.Contains(ids, e.ID) {
				ids = append(ids, e.ID)
			}
		}
		eng, err := search.New(search.DefaultEngine, cat)
		if err != nil {
			return err
		}
		byID, err := evaluate.Gains(ctx, ds, eng, ids, 5)
		if err != nil {
			return err
		}
		rep.Gains = map[string]evaluate.Gain{}
		for _, h := range rep.Hard {
			if e, ok := cat.Find(h.Tool); ok {
				if g, ok := byID[e.ID]; ok {
					rep.Gains[h.Tool] = g
				}
			}
		}
		m, err := evaluate.Mend(ctx, ds, func(c *catalog.Catalog) (search.Engine, error) { return search.New(search.DefaultEngine, c) }, ids, 5)
		if err != nil {
			return err
		}
		rep.Mending = &mendingReport{Words: map[string][]string{}, Gain: map[string]float64{}, Before: m.Before, After: m.After}
		for _, h := range rep.Hard {
			if e, ok := cat.Find(h.Tool); ok {
				if ws, ok := m.Words[e.ID]; ok {
					rep.Mending.Words[h.Tool], rep.Mending.Gain[h.Tool] = ws, m.Gain[e.ID]
				}
			}
		}
	}
	if o.json {
		return writeJSON(e.stdout, rep)
	}
	writeFindability(e.stdout, rep)
	return nil
}

func writeFindability(w io.Writer, rep findabilityReport) {
	tools := map[string]bool{}
	for _, h := range rep.Hard {
		tools[h.Tool] = true
	}
	fmt.Fprintf(w, "%s: %d of %d tools will be hard to find (%d problems)\n", rep.Source, len(tools), rep.Tools, len(rep.Hard))
	if len(rep.Hard) == 0 {
		return
	}
	fmt.Fprintln(w)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	head := "TOOL\tPROBLEM\tDETAIL\tSUGGESTION"
	if rep.Gains != nil {
		head += "\tQUERIES\tMISSED@5\tRECALL@5 GAIN AT MOST"
	}
	fmt.Fprintln(tw, head)
	for _, h := range rep.Hard {
		line := fmt.Sprintf("%s\t%s\t%s\t%s", h.Tool, h.Problem, h.Detail, h.Suggestion)
		if rep.Gains != nil {
			g := rep.Gains[h.Tool]
			line += fmt.Sprintf("\t%d\t%d\t+%.4f", g.Queries, g.Missed, g.AtMost)
		}
		fmt.Fprintln(tw, line)
	}
	tw.Flush()
	if m := rep.Mending; m != nil && len(m.Words) > 0 {
		fmt.Fprintf(w, "\nSearch words from the requests of half 0 that missed each tool, written as \"describe\": {\"searchWords\"}, measured on half 1: recall@5 %.4f → %.4f.\n\n", m.Before, m.After)
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "TOOL\tSEARCH WORDS\tRECALL@5 GAIN, HALF 1")
		for _, tool := range slices.Sorted(maps.Keys(m.Words)) {
			fmt.Fprintf(tw, "%s\t%s\t%+.4f\n", tool, strings.Join(m.Words[tool], " "), m.Gain[tool])
		}
		tw.Flush()
	}
}
