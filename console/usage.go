package console

import (
	"cmp"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/toolshelf/toolshelf/ledger"
)

// usageDays is how far back the Usage page's chart goes.
const usageDays = 14

// chartPeople is how many people the chart names; the rest are "others".
const chartPeople = 5

// chart is the Usage page's chart of spend per person per day: bars of
// stacked segments, laid out here so that the template only draws.
type chart struct {
	Width, Height int
	// Axis is where the days' names stand, below the bars.
	Axis   int
	Bars   []chartBar
	Legend []chartKey
	Max    float64
}

type chartBar struct {
	Day      string
	X, Width float64
	Label    float64 // the middle of the bar, for the day's name
	Parts    []chartPart
}

type chartPart struct {
	Person    string
	USD       float64
	Y, Height float64
	Color     int
}

type chartKey struct {
	Person string
	USD    float64
	Color  int
}

func (c *Console) usagePage(w http.ResponseWriter, r *http.Request) {
	data := map[string]any{"On": c.opts.Ledger != nil}
	if c.opts.Ledger == nil {
		c.render(w, r, "usage", data)
		return
	}
	now := time.Now().UTC()
	since := now.Truncate(24*time.Hour).AddDate(0, 0, -(usageDays - 1))
	rep, err := c.opts.Ledger.Report(r.Context(), map[string][]string{"by": {"person"}, "since": {now.Sub(since).String()}}, ledger.Who{}, true)
	if err != nil {
		data["Error"] = err.Error()
		c.render(w, r, "usage", data)
		return
	}
	entries, err := c.opts.Ledger.Entries(r.Context(), since)
	if err != nil {
		data["Error"] = err.Error()
	}
	data["People"], data["Budgets"] = rep.Rows, rep.Budgets
	data["Chart"] = spendChart(entries, rep.Rows, since)
	tools, _ := ledger.Group(entries, "tool")
	tools = slices.DeleteFunc(tools, func(u ledger.Usage) bool { return u.ToolCalls == 0 })
	slices.SortStableFunc(tools, func(a, b ledger.Usage) int { return cmp.Compare(b.ToolCalls, a.ToolCalls) })
	data["Tools"] = tools[:min(len(tools), 10)]
	c.render(w, r, "usage", data)
}

// spendChart lays out each day's spend by person: the costliest people
// (rows come costliest first) by name, the rest as "others".
func spendChart(entries []ledger.Entry, rows []ledger.Usage, since time.Time) chart {
	const bars = 200 // the bars' height; the days' names go below
	ch := chart{Width: 720, Height: bars + 20, Axis: bars + 14}
	named := map[string]int{}
	for _, r := range rows {
		if len(named) < chartPeople && r.USD > 0 {
			named[r.Key] = len(named)
			ch.Legend = append(ch.Legend, chartKey{Person: r.Key, USD: r.USD, Color: len(named) - 1})
		}
	}
	others := len(named)
	spend := make([]map[int]float64, usageDays)
	for i := range spend {
		spend[i] = map[int]float64{}
	}
	var otherUSD float64
	for _, e := range entries {
		day := int(e.Time.Sub(since) / (24 * time.Hour))
		if e.Void || e.Kind != ledger.KindRound || day < 0 || day >= usageDays {
			continue
		}
		person := e.Person
		if person == "" {
			person = "-"
		}
		k, ok := named[person]
		if !ok {
			k = others
			otherUSD += float64(e.Nanos) / 1e9
		}
		spend[day][k] += float64(e.Nanos) / 1e9
	}
	if otherUSD > 0 {
		ch.Legend = append(ch.Legend, chartKey{Person: "others", USD: otherUSD, Color: others})
	}
	for _, day := range spend {
		total := 0.0
		for _, v := range day {
			total += v
		}
		ch.Max = max(ch.Max, total)
	}
	slot := float64(ch.Width) / usageDays
	for i, day := range spend {
		bar := chartBar{Day: since.AddDate(0, 0, i).Format("Jan 2"), X: float64(i)*slot + 4, Width: slot - 8, Label: (float64(i) + 0.5) * slot}
		y := float64(bars)
		for k := 0; k <= others; k++ {
			v := day[k]
			if v <= 0 || ch.Max == 0 {
				continue
			}
			h := v / ch.Max * float64(bars-10)
			y -= h
			person := "others"
			for _, l := range ch.Legend {
				if l.Color == k {
					person = l.Person
				}
			}
			bar.Parts = append(bar.Parts, chartPart{Person: person, USD: v, Y: y, Height: h, Color: k})
		}
		ch.Bars = append(ch.Bars, bar)
	}
	return ch
}

// usd formats dollars for the page.
func usd(v float64) string {
	if v < 0.01 && v > 0 {
		return fmt.Sprintf("$%.4f", v)
	}
	return fmt.Sprintf("$%.2f", v)
}
