package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/evaluate"
	"github.com/toolshelf/toolshelf/search"
	"github.com/toolshelf/toolshelf/shelf"
)

var evalCommand = &command{
	name:    "eval",
	summary: "measure retrieval quality on a labelled dataset",
	usage:   "--dataset DIR [--engine ENGINE | --variant NAME] [--learn-folds K [--learn-min-similarity S] [--learn-weight W] [--learn-min-words SHARE]] [--half 0|1] [--limit K] [--answers compact|full|none] [--depth RATIO,MIN|off] [--budget N] [--companions=false] [--json]",
	help: `
Searches every query of a labelled dataset and reports, over all queries,
for each value of their level, category and subset fields, and for each
length band (words=1-8, words=9-20, words=21+):

  recall@k     covered groups / groups, k = 1, 5, 10 (a group of
               interchangeable tools is covered when one is in the top k)
  complete@10  1 when every group is covered in the top 10
  mrr@10       1 / rank of the first hit that covers a group
  ndcg@10      a hit gains 1 when it covers a group not yet covered; the
               ideal is min(groups, 10)
  flagged weak answerable queries whose results the engine flagged weak,
               and how many of them had no labelled tool in the top 5
               (flagged rightly: what was shown missed)
  abstain      queries no tool fits, and how many got no hits or only
               hits flagged weak

and, of the answers a gateway's search_tools would give (--answers):

  r@1000t      covered groups / groups within the first 1,000 tokens of
               the answer (r@2500t: 2,500), counting what each match
               really carries
  tokens       what an answer costs, median / 90th percentile
  matches      the mean number of matches an answer keeps
  complete     the share of answers naming a tool of every group, as a
               match or as a companion (--companions: a tool that
               produces what a match needs, named beside it)

plus the time to build the index and per-query latency (p50, p99).
An answer keeps the hits its depth keeps (--depth: those scoring at
least RATIO of the best, at least MIN; "off" keeps --limit of them)
within --budget tokens of compact matches, as search_tools does when a
model gives no limit; --answers full measures whole definitions
instead (search.results "full"), none skips the measure.
Recall@5 comes with a bootstrap 95% interval (1,000 resamples of the
queries, a fixed seed; --json has it for recall@1, @5 and @10 too): two
figures whose intervals overlap may differ by chance alone.

A dataset folder holds tools.jsonl and queries.jsonl, and optionally
servers.jsonl; docs/datasets.md in the source gives the format, the public
datasets and how to build one from your own servers.

--misses also prints each request one of whose steps had no labelled tool
in the top 5: the tools ranked above the first labelled one (or the whole
list, when none was found) with the terms that scored them, as 'toolshelf
search --explain' names them ("save~saving" a word of the same stem,
"forget≈omit" a related word); --json puts them under "misses".

--learn-folds K measures search that learns from use (see 'toolshelf
learned') without leakage: the queries are split into K folds, each fold
is searched with the other folds' queries and their tools as what was
learned, and only the held-out fold is scored. The report without
learning is printed first, for comparison. --learn-min-similarity,
--learn-weight and --learn-min-words (the share of a query's words a
tool's earlier queries must have for them to count as its words;
negative: off) set what it is measured with (defaults: the settings
toolshelf uses).

--half 0 or --half 1 scores one half of the queries (split by a hash of
their ids): settings are chosen on half 0 and reported on half 1
(docs/search-quality.md).

--variant NAME measures a bm25 configuration from docs/search-quality.md
instead of the default engine, so that its experiments can be rerun:
` + variantHelp() + `
` + engineHelp,
	flags: func(fs *flag.FlagSet) func(context.Context, *env, []string) error {
		dataset := fs.String("dataset", "", "dataset `DIR` with tools.jsonl and queries.jsonl")
		var engine engineFlags
		engine.register(fs)
		limit := fs.Int("limit", evaluate.DefaultLimit, "results retrieved per query (`K`)")
		asJSON := fs.Bool("json", false, "print the report as one JSON object")
		variant := fs.String("variant", "", "measure the bm25 variant `NAME` (see above)")
		folds := fs.Int("learn-folds", 0, "also measure learning from use, with `K` folds (see above)")
		fs.IntVar(folds, "usage-folds", 0, "the earlier name of --learn-folds `K`")
		minSim := fs.Float64("learn-min-similarity", search.DefaultLearnedMinSimilarity, "with --learn-folds, the `COSINE` a learned query needs")
		weight := fs.Float64("learn-weight", search.DefaultLearnedWeight, "with --learn-folds, the `WEIGHT` of a learned query's tools")
		minWords := fs.Float64("learn-min-words", search.DefaultLearnedMinWords, "with --learn-folds, the `SHARE` of a query's words a tool's past queries must have (negative: off)")
		half := fs.Int("half", -1, "score only half `N` (0 or 1) of the queries")
		answers := fs.String("answers", string(shelf.Compact), "measure the answers search_tools gives, in `FORM` (compact, full or none)")
		depth := fs.String("depth", fmt.Sprintf("%g,%d", search.DefaultDepth.Ratio, search.DefaultDepth.Min), "the answers' depth: `RATIO,MIN` or off")
		budget := fs.Int("budget", shelf.DefaultBudget, "the answers' budget of compact-match `TOKENS` (0: none)")
		companions := fs.Bool("companions", true, "the answers name each match's companions, and a companion counts as found")
		misses := fs.Bool("misses", false, "also print each request with a step not found in the top 5: what ranked above it, and why")
		return func(ctx context.Context, e *env, args []string) error {
			if len(args) > 0 {
				return usagef("unexpected argument %q", args[0])
			}
			if *dataset == "" {
				return usagef("--dataset is required")
			}
			if err := checkPositive(fs, "limit", *limit); err != nil {
				return err
			}
			if err := engine.check(e); err != nil {
				return err
			}
			build := func(c *catalog.Catalog) (search.Engine, error) { return engine.build(ctx, e, c) }
			name := engine.kind
			if *variant != "" {
				if engine.kind != search.DefaultEngine {
					return usagef("--variant is a bm25 configuration; it does not go with --engine %s", engine.kind)
				}
				v, err := search.VariantNamed(*variant)
				if err != nil {
					return usagef("--variant: %v", err)
				}
				build = func(c *catalog.Catalog) (search.Engine, error) { return search.NewBM25Variant(c, v), nil }
				name = "bm25 variant " + *variant
			}
			if *folds != 0 && *folds < 2 {
				return usagef("--learn-folds must be at least 2, got %d", *folds)
			}
			if *minSim <= 0 || *minSim >= 1 || *weight <= 0 {
				return usagef("--learn-min-similarity must be between 0 and 1 and --learn-weight positive")
			}
			opts := &evaluate.Options{Limit: *limit, Misses: *misses, Learned: &search.LearnedOptions{MinSimilarity: *minSim, Weight: *weight, MinWords: *minWords}}
			var err error
			if opts.Answers, err = answersFor(*answers, *depth, *budget); err != nil {
				return err
			}
			switch *half {
			case -1:
			case 0, 1:
				h := *half
				opts.Queries = func(q evaluate.Query) bool { return evaluate.Half(q) == h }
			default:
				return usagef("--half must be 0 or 1, got %d", *half)
			}
			form, _ := shelf.ParseForm(*answers)
			return runEval(ctx, e, *dataset, name, build, opts, form, *companions, *folds, *asJSON)
		}
	},
}

// answersFor is what --answers, --depth and --budget ask to measure.
// The companions are found in the dataset's catalog, once it is loaded
// (withCompanions).
func answersFor(form, depth string, budget int) (*evaluate.Answers, error) {
	if form == "none" {
		return nil, nil
	}
	f, err := shelf.ParseForm(form)
	if err != nil {
		return nil, usagef("--answers: %v, or none", err)
	}
	if budget < 0 {
		return nil, usagef("--budget must be 0 (none) or more, got %d", budget)
	}
	a := &evaluate.Answers{Budget: budget,
		Cost: func(h search.Hit) int { return shelf.Tokens(shelf.MatchOf(h.Entry, f, false)) + 1 },
		// As search_tools: never more than the old whole definitions.
		Cap: shelf.WholeCost,
		// {"query":"...","matches":[...],"tools_searched":N} around them,
		// with a query of a few words.
		Overhead: shelf.Tokens(shelf.Match{Name: "find the tool for this request"}) + 8}
	if depth != "off" {
		ratio, min, ok := strings.Cut(depth, ",")
		d := search.Depth{}
		_, err1 := fmt.Sscan(ratio, &d.Ratio)
		_, err2 := fmt.Sscan(min, &d.Min)
		if !ok || err1 != nil || err2 != nil || d.Ratio < 0 || d.Ratio > 1 || d.Min < 1 {
			return nil, usagef("--depth %q: want RATIO,MIN (RATIO between 0 and 1, MIN at least 1), or off", depth)
		}
		a.Depth = &d
	}
	return a, nil
}

// withCompanions makes a's answers name the companions of each match in
// c, and pay for their names.
func withCompanions(a *evaluate.Answers, c *catalog.Catalog, form shelf.Form) {
	if a == nil {
		return
	}
	cs := search.NewCompanions(c)
	a.Companions = func(h search.Hit) []*catalog.Entry { return cs.Of(h.Entry, search.MaxCompanions) }
	a.Cost = func(h search.Hit) int {
		m := shelf.MatchOf(h.Entry, form, false)
		for _, e := range cs.Of(h.Entry, search.MaxCompanions) {
			m.Companions = append(m.Companions, e.Name)
		}
		return shelf.Tokens(m) + 1
	}
}

// variantHelp lists the variants --variant takes, one a line.
func variantHelp() string {
	var b strings.Builder
	for _, v := range search.Variants {
		fmt.Fprintf(&b, "  %-22s %s\n", v.Name, v.About)
	}
	return b.String()
}

func runEval(ctx context.Context, e *env, dir, engine string, build func(*catalog.Catalog) (search.Engine, error), opts *evaluate.Options, form shelf.Form, companions bool, folds int, asJSON bool) error {
	ds, err := loadDataset(dir)
	if err != nil {
		return err
	}
	if companions {
		withCompanions(opts.Answers, ds.Catalog, form)
	}
	r, err := evaluate.Run(ctx, ds, engine, build, opts)
	if err != nil {
		return err
	}
	var learned *evaluate.Report
	if folds > 0 {
		if learned, err = evaluate.RunFolds(ctx, ds, engine, build, folds, opts); err != nil {
			return err
		}
	}
	if asJSON {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		if learned != nil {
			return enc.Encode(map[string]*evaluate.Report{"withoutLearning": r, "withLearning": learned})
		}
		return enc.Encode(r)
	}
	writeReport(e.stdout, r)
	writeMisses(e.stdout, r.Misses)
	if learned != nil {
		fmt.Fprintln(e.stdout)
		writeReport(e.stdout, learned)
	}
	return nil
}

func writeReport(w io.Writer, r *evaluate.Report) {
	fmt.Fprintf(w, "dataset %s, engine %s: %d tools, index built in %.1f ms, query latency p50 %.0f µs, p99 %.0f µs\n",
		r.Dataset, r.Engine, r.Tools, r.IndexMS, r.Latency.P50, r.Latency.P99)
	if r.Errors > 0 {
		fmt.Fprintf(w, "%d queries were rejected by the engine and count as no hits\n", r.Errors)
	}
	fmt.Fprintln(w)
	labels := make([]string, 0, len(r.Subsets))
	for l := range r.Subsets {
		if l != "all" {
			labels = append(labels, l)
		}
	}
	sort.Strings(labels)
	labels = append([]string{"all"}, labels...)

	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "subset\tqueries\trecall@1\trecall@5\trecall@5 95%\trecall@10\tcomplete@10\tmrr@10\tndcg@10\tflagged weak\tabstained\tr@1000t\tr@2500t\ttokens\tmatches\tcomplete\t")
	for _, l := range labels {
		m := r.Subsets[l]
		abstain := "-"
		if m.Abstain != nil {
			abstain = fmt.Sprintf("%d/%d (%d empty)", max(m.Abstain.NoHits, m.Abstain.Weak), m.Abstain.Queries, m.Abstain.NoHits)
		}
		if m.Queries == 0 {
			fmt.Fprintf(tw, "%s\t0\t-\t-\t-\t-\t-\t-\t-\t-\t%s\t-\t-\t-\t-\t-\t\n", l, abstain)
			continue
		}
		answers := "-\t-\t-\t-\t-"
		if a := m.Answers; a != nil {
			answers = fmt.Sprintf("%.3f\t%.3f\t%d / %d\t%.1f\t%.3f", a.Recall1000, a.Recall2500, a.TokensP50, a.TokensP90, a.Matches, a.Complete)
		}
		interval := "-"
		if m.CI95 != nil {
			interval = fmt.Sprintf("%.3f–%.3f", m.CI95.Recall5[0], m.CI95.Recall5[1])
		}
		weak := fmt.Sprint(m.Weak)
		if m.Weak > 0 {
			weak = fmt.Sprintf("%d (%d missed)", m.Weak, m.WeakMissed)
		}
		fmt.Fprintf(tw, "%s\t%d\t%.3f\t%.3f\t%s\t%.3f\t%.3f\t%.3f\t%.3f\t%s\t%s\t%s\t\n",
			l, m.Queries, m.Recall1, m.Recall5, interval, m.Recall10, m.Complete10, m.MRR10, m.NDCG10, weak, abstain, answers)
	}
	tw.Flush()
}

// writeMisses prints the misses of a report (--misses): each request,
// the steps missed, and the hits down to the first tool of a missed step,
// each with the terms that scored it.
func writeMisses(w io.Writer, misses []*evaluate.Miss) {
	if len(misses) == 0 {
		return
	}
	fmt.Fprintf(w, "\n%d requests with a step not found in the top %d:\n", len(misses), evaluate.MissDepth)
	for _, m := range misses {
		fmt.Fprintf(w, "\n%s  %s", m.ID, m.Query)
		if len(m.Labels) > 0 {
			fmt.Fprintf(w, "  [%s]", strings.Join(m.Labels, " "))
		}
		fmt.Fprintln(w)
		for _, g := range m.Missed {
			fmt.Fprintf(w, "  wanted: %s\n", strings.Join(g, " | "))
		}
		for _, h := range m.Hits {
			mark := " "
			if h.Wanted {
				mark = "*"
			}
			weak := ""
			if h.Weak {
				weak = " weak"
			}
			fmt.Fprintf(w, " %s%3d. %s  %.2f%s  %s\n", mark, h.Rank, h.ID, h.Score, weak, matchesText(h.Matches))
		}
		if m.Found == 0 {
			fmt.Fprintf(w, "       (no tool of a missed step among the %d hits)\n", len(m.Hits))
		}
	}
}

// matchesText is a hit's matches as --explain prints them: term
// (fields) score, best first.
func matchesText(ms []search.Match) string {
	parts := make([]string, 0, len(ms))
	for _, m := range ms {
		parts = append(parts, fmt.Sprintf("%s(%s) %.2f", m.Term, strings.Join(m.Fields, ","), m.Score))
	}
	return strings.Join(parts, "  ")
}
