package search

import (
	"runtime"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/wordvec"
	"github.com/toolshelf/toolshelf/internal/zhdict"
)

type posting struct {
	doc    int32
	tf     float32
	fields fieldSet
}

// fieldSet is a set of indexed fields, for explanations.
type fieldSet uint16

const (
	inName fieldSet = 1 << iota
	inTitle
	inTool
	inServer
	inDescription
	inParams
	inHint
	inParamDescs
	inServerInfo
	inGloss
)

var fieldNames = []struct {
	bit  fieldSet
	name string
}{
	{inName, FieldName}, {inTitle, FieldTitle}, {inTool, FieldTool},
	{inServer, FieldServer}, {inHint, FieldHint}, {inDescription, FieldDescription},
	{inParams, FieldParams}, {inParamDescs, FieldParamDescs}, {inServerInfo, FieldServerInfo},
	{inGloss, FieldGloss},
}

// The indexed fields, in the order of bm25Config.fields.
const (
	fName = iota
	fTitle
	fTool
	fServer
	fDescription
	fParams
	fParamDescs
	fServerInfo
	fGloss
	numFields
)

var fieldBits = [numFields]fieldSet{inName, inTitle, inTool, inServer, inDescription, inParams, inParamDescs, inServerInfo, inGloss}

// fieldTexts calls text with each text of each indexed field of e: one
// text per field, but one per parameter for the parameter fields.
func fieldTexts(c *catalog.Catalog, e *catalog.Entry, text func(f int, s string)) {
	text(fName, e.Name)
	text(fTitle, e.Title)
	text(fTool, e.Tool)
	text(fServer, e.Server)
	desc := summary(e)
	text(fDescription, desc)
	text(fGloss, zhdict.Gloss(desc))
	for _, p := range e.Params {
		text(fParams, p.Name)
		text(fParamDescs, p.Description)
	}
	if srv, ok := c.Server(e.Server); ok {
		text(fServerInfo, srv.Description)
		text(fServerInfo, srv.Instructions)
	}
}

// newBM25 builds the index in two passes: the first measures every
// field's length, the second weighs each term occurrence by its field's
// weight over the field's length norm (BM25F), so that a long description
// or many parameters do not dilute a match in the name. (Recording counts
// in one pass instead was no faster and took twice the memory.) Large
// catalogs are split into contiguous shards indexed in parallel and
// merged in order.
func newBM25(c *catalog.Catalog, cfg bm25Config) *BM25 {
	n := c.Len()
	x := &BM25{cfg: cfg, cat: c, scratch: make(chan *scratch, 4)}
	if cfg.rarity {
		x.words = wordvec.Builtin()
	}
	shards := 1
	if n >= minParallel {
		shards = min(runtime.GOMAXPROCS(0), n/(minParallel/2))
	}
	bounds := func(s int) (int, int) { return s * n / shards, (s + 1) * n / shards }

	lens := make([][numFields]float64, n)
	sums := make([][numFields]float64, shards)
	parallel(shards, func(s int) {
		lo, hi := bounds(s)
		for i := lo; i < hi; i++ {
			fieldTexts(c, c.Entry(i), func(f int, text string) {
				if cfg.fields[f].w != 0 {
					k := float64(countTokens(text))
					lens[i][f] += k
					sums[s][f] += k
				}
			})
		}
	})
	var avg [numFields]float64
	for _, sum := range sums {
		for f := range avg {
			avg[f] += sum[f]
		}
	}
	for f := range avg {
		avg[f] = max(avg[f]/float64(max(n, 1)), 1)
	}

	parts := make([]map[string][]posting, shards)
	parallel(shards, func(s int) {
		lo, hi := bounds(s)
		parts[s] = indexRange(c, cfg, lens, avg, lo, hi)
	})
	x.postings = mergePostings(parts)
	x.rerankFacts()
	if cfg.stems > 0 {
		x.stemmed = map[string][]string{}
		for t := range x.postings {
			if k := stemKey(t); k != "" {
				x.stemmed[k] = append(x.stemmed[k], t)
			}
		}
	}
	return x
}

// mergePostings joins the shards' postings, in document order, into one
// array of exactly their size: the lists grown by appending held up to
// twice their entries, and the index is most of a search engine's memory.
func mergePostings(parts []map[string][]posting) map[string][]posting {
	n := 0
	for _, p := range parts {
		for _, ps := range p {
			n += len(ps)
		}
	}
	arena := make([]posting, 0, n)
	merged := make(map[string][]posting, len(parts[0]))
	for s, p := range parts {
		for t := range p {
			if _, done := merged[t]; done {
				continue
			}
			// No earlier shard has t: it would have been merged there.
			start := len(arena)
			for _, q := range parts[s:] {
				arena = append(arena, q[t]...)
			}
			merged[t] = arena[start:len(arena):len(arena)]
		}
	}
	return merged
}

// minParallel is the catalog size from which indexing is parallel.
const minParallel = 2000

// parallel runs f(0) … f(n-1) concurrently and waits for them.
func parallel(n int, f func(int)) {
	if n == 1 {
		f(0)
		return
	}
	var wg sync.WaitGroup
	for s := range n {
		wg.Go(func() { f(s) })
	}
	wg.Wait()
}

// indexRange builds the postings of documents lo to hi. Each distinct
// term gets a number the first time it is seen, so that a token costs one
// map lookup: the document's accumulator is found through arrays indexed
// by that number, and the postings are appended to a list by number.
func indexRange(c *catalog.Catalog, cfg bm25Config, lens [][numFields]float64, avg [numFields]float64, lo, hi int) map[string][]posting {
	type acc struct {
		tf     float64
		fields fieldSet
	}
	ids := make(map[string]int32)
	var (
		terms []string    // number → term
		lists [][]posting // number → postings
		seen  []int32     // number → the last document (+1) that had it
		slot  []int32     // number → its accumulator in that document
		doc   []acc
		inDoc []int32 // the numbers of the document's terms, in order
		toks  []string
	)
	for i := lo; i < hi; i++ {
		doc, inDoc = doc[:0], inDoc[:0]
		stamp := int32(i + 1)
		fieldTexts(c, c.Entry(i), func(f int, s string) {
			fc := cfg.fields[f]
			if fc.w == 0 {
				return
			}
			w := fc.w / (1 - fc.b + fc.b*lens[i][f]/avg[f])
			toks = appendTokens(toks[:0], s)
			for _, t := range toks {
				t = foldPlural(t)
				id, ok := ids[t]
				if !ok {
					id = int32(len(terms))
					ids[t] = id
					terms = append(terms, t)
					lists = append(lists, nil)
					seen = append(seen, 0)
					slot = append(slot, 0)
				}
				if seen[id] != stamp {
					seen[id] = stamp
					slot[id] = int32(len(doc))
					doc = append(doc, acc{})
					inDoc = append(inDoc, id)
				}
				k := slot[id]
				doc[k].tf += w
				doc[k].fields |= fieldBits[f]
			}
		})
		for k, id := range inDoc {
			lists[id] = append(lists[id], posting{doc: int32(i), tf: float32(doc[k].tf), fields: doc[k].fields})
		}
	}
	postings := make(map[string][]posting, len(terms))
	for id, t := range terms {
		postings[t] = lists[id]
	}
	return postings
}

// summary is the description text indexed for a tool: the whole
// description of an MCP tool, the first 200 characters of other tools'.
func summary(e *catalog.Entry) string {
	if e.IsMCP() {
		return e.Description
	}
	if r := []rune(e.Description); len(r) > 200 {
		return string(r[:200])
	}
	return e.Description
}
