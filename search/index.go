package search

import (
	"encoding/binary"
	"runtime"
	"slices"
	"sync"

	"github.com/toolshelf/toolshelf/catalog"
	"github.com/toolshelf/toolshelf/internal/wordvec"
	"github.com/toolshelf/toolshelf/internal/zhdict"
)

// posting is one document in a term's list: the document's number and
// the fields it has the term in, packed in one word, and the term's
// weighted frequency there. Packed, a posting is 8 bytes, not 12 (most
// of the index's memory is its postings).
type posting struct {
	docFields uint32 // doc<<numFields | fields
	tf        float32
}

// MaxDocs is the most tools a BM25 index holds: a document's number
// has the bits of a posting's word that its fields leave.
const MaxDocs = 1 << (32 - numFields)

func newPosting(doc int, tf float32, fields fieldSet) posting {
	return posting{docFields: uint32(doc)<<numFields | uint32(fields), tf: tf}
}

func (p posting) doc() int32 { return int32(p.docFields >> numFields) }

func (p posting) fields() fieldSet { return fieldSet(p.docFields & (1<<numFields - 1)) }

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
	fHint
	numFields
)

var fieldBits = [numFields]fieldSet{inName, inTitle, inTool, inServer, inDescription, inParams, inParamDescs, inServerInfo, inGloss, inHint}

// fieldTexts calls text with each text of each indexed field of e: one
// text per field, but one per parameter for the parameter fields.
func fieldTexts(c *catalog.Catalog, e *catalog.Entry, text func(f int, s string)) {
	text(fName, e.Name)
	text(fTitle, e.Title)
	text(fTool, e.Tool)
	text(fServer, e.Server)
	desc := summary(e)
	text(fDescription, desc)
	text(fHint, e.SearchHint)
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
// field's length and numbers each shard's terms, counting the documents
// that have each; the second weighs each term occurrence by its field's
// weight over the field's length norm (BM25F), so that a long description
// or many parameters do not dilute a match in the name, and writes the
// postings into one array of exactly their number (growing each term's
// list by appending was over a third of the time at 100,000 tools, and
// held up to twice the entries). Large catalogs are split into contiguous
// shards indexed in parallel, each writing its part of every list.
func newBM25(c *catalog.Catalog, cfg bm25Config) *BM25 {
	n := c.Len()
	if n > MaxDocs {
		panic(checkSize(n)) // New returns the error; NewBM25 says it holds MaxDocs
	}
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
	vocab := make([]*shardTerms, shards)
	parallel(shards, func(s int) {
		lo, hi := bounds(s)
		vocab[s] = countRange(c, cfg, lens, &sums[s], lo, hi)
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

	// Every term of every shard gets a place in one array of postings:
	// its list, and in it each shard's part, in shard (document) order.
	gids := make(map[string]int32)
	var terms []string
	var total []int32
	local := make([][]int32, shards) // a shard's number of a term → its number here
	for s, v := range vocab {
		local[s] = make([]int32, len(v.terms))
		for id, t := range v.terms {
			g, ok := gids[t]
			if !ok {
				g = int32(len(terms))
				gids[t] = g
				terms = append(terms, t)
				total = append(total, 0)
			}
			local[s][id] = g
			total[g] += v.df[id]
		}
	}
	start := make([]int32, len(terms)+1)
	for g, df := range total {
		start[g+1] = start[g] + df
	}
	all := make([]posting, start[len(terms)])
	filled := slices.Clone(start[:len(terms)])
	next := make([][]int32, shards) // a shard's number of a term → where its next posting goes
	for s, v := range vocab {
		next[s] = make([]int32, len(v.terms))
		for id, g := range local[s] {
			next[s][id] = filled[g]
			filled[g] += v.df[id]
		}
	}
	parallel(shards, func(s int) {
		lo, hi := bounds(s)
		indexRange(cfg, vocab[s], next[s], all, lens, avg, lo, hi)
	})
	x.postings = make(map[string][]posting, len(terms))
	for g, t := range terms {
		x.postings[t] = all[start[g]:start[g+1]:start[g+1]]
	}
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

// shardTerms is what the first pass learns of a shard's documents: a
// number for each term, how many documents have it, and each document's
// texts as term numbers, so that the second pass reads numbers instead
// of tokenising and looking up every text again.
type shardTerms struct {
	ids   map[string]int32
	terms []string // number → term
	df    []int32  // number → documents
	// texts holds, for each indexed text of each document in order, its
	// field (a byte), its number of tokens k and the k term numbers
	// (uvarints: a term numbered early, a common one, takes a byte); the
	// texts of the shard's document j end at ends[j].
	texts []byte
	ends  []int32
}

// countRange is the first pass over documents lo to hi: it adds each
// field's length to lens and sum, and numbers and counts the terms.
func countRange(c *catalog.Catalog, cfg bm25Config, lens [][numFields]float64, sum *[numFields]float64, lo, hi int) *shardTerms {
	v := &shardTerms{ids: make(map[string]int32), ends: make([]int32, 0, hi-lo)}
	// The texts as term numbers are most of what the build allocates:
	// sized from the texts' bytes before they are filled (a word is about
	// five bytes with its space, and its number one or two; 0.22 to 0.29
	// bytes a byte of text measured), not grown by doubling.
	size := 0
	for i := lo; i < hi; i++ {
		e := c.Entry(i)
		n := len(e.Name) + len(e.Title) + len(e.Tool) + len(e.Server) + len(e.Description) + len(e.SearchHint)
		for _, p := range e.Params {
			n += len(p.Name) + len(p.Description) + 2
		}
		size += 2*numFields + n*3/10
	}
	v.texts = make([]byte, 0, size)
	var seen []int32 // number → the last document (+1) that had it
	var toks []string
	for i := lo; i < hi; i++ {
		stamp := int32(i + 1)
		fieldTexts(c, c.Entry(i), func(f int, text string) {
			if cfg.fields[f].w == 0 {
				return
			}
			toks = appendTokens(toks[:0], text)
			lens[i][f] += float64(len(toks))
			sum[f] += float64(len(toks))
			v.texts = binary.AppendUvarint(append(v.texts, byte(f)), uint64(len(toks)))
			for _, t := range toks {
				t = foldPlural(t)
				id, ok := v.ids[t]
				if !ok {
					id = int32(len(v.terms))
					v.ids[t] = id
					v.terms = append(v.terms, t)
					v.df = append(v.df, 0)
					seen = append(seen, 0)
				}
				if seen[id] != stamp {
					seen[id] = stamp
					v.df[id]++
				}
				v.texts = binary.AppendUvarint(v.texts, uint64(id))
			}
		})
		v.ends = append(v.ends, int32(len(v.texts)))
	}
	return v
}

// indexRange is the second pass over documents lo to hi, whose texts v
// holds as term numbers: it writes their postings into all, a term's
// next one at next[its number].
func indexRange(cfg bm25Config, v *shardTerms, next []int32, all []posting, lens [][numFields]float64, avg [numFields]float64, lo, hi int) {
	type acc struct {
		tf     float64
		fields fieldSet
	}
	var (
		seen  = make([]int32, len(v.terms)) // number → the last document (+1) that had it
		slot  = make([]int32, len(v.terms)) // number → its accumulator in that document
		doc   []acc
		inDoc []int32 // the numbers of the document's terms, in order
	)
	pos := int32(0)
	for i := lo; i < hi; i++ {
		doc, inDoc = doc[:0], inDoc[:0]
		stamp := int32(i + 1)
		for end := v.ends[i-lo]; pos < end; {
			f := v.texts[pos]
			k, n := binary.Uvarint(v.texts[pos+1:])
			pos += 1 + int32(n)
			fc := cfg.fields[f]
			w := fc.w / (1 - fc.b + fc.b*lens[i][f]/avg[f])
			for range k {
				id := int32(v.texts[pos])
				if id < 0x80 {
					pos++
				} else {
					u, n := binary.Uvarint(v.texts[pos:])
					id, pos = int32(u), pos+int32(n)
				}
				if seen[id] != stamp {
					seen[id] = stamp
					slot[id] = int32(len(doc))
					doc = append(doc, acc{})
					inDoc = append(inDoc, id)
				}
				d := &doc[slot[id]]
				d.tf += w
				d.fields |= fieldBits[f]
			}
		}
		for k, id := range inDoc {
			all[next[id]] = newPosting(i, float32(doc[k].tf), doc[k].fields)
			next[id]++
		}
	}
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
