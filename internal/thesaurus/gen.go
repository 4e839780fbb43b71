//go:build ignore

// gen.go writes related.tsv.gz from WordNet's database files;
// scripts/thesaurus.sh runs it:
//
//	go run gen.go -dict DIR -o related.tsv.gz
//
// For every single English word among the built-in word vectors'
// vocabulary (package wordvec: the 40,000 commonest), it lists the single
// words WordNet relates to it in its -senses commonest senses of each
// part of speech: the other words of the same sense (synonyms), the words
// of the senses derived from it or it from them ("remember" gives
// "remembering", a sense whose words include "memory"), and the words of
// the sense one step more general ("save" → "keep"). A word is
// kept only when the word vectors, too, find it near (cosine at least
// -min-cos): WordNet lists rare senses ("fact" as "the deed"), and the
// vectors, trained on how words are used, drop most of them. The output
// is sorted, one line per word: the word, a tab, its related words
// separated by spaces, nearest first.
package main

import (
	"bufio"
	"compress/gzip"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/toolshelf/toolshelf/internal/wordvec"
)

type synset struct {
	words []string
	ptrs  []pointer
}

type pointer struct {
	symbol      string
	target      string // pos + offset
	source, dst int    // word numbers, 1-based; 0 for the whole synset
}

func main() {
	dict := flag.String("dict", "", "WordNet's dict folder (data.* and index.*)")
	senses := flag.Int("senses", 5, "how many of a word's senses per part of speech to follow")
	minCos := flag.Float64("min-cos", 0.3, "the least cosine of the word vectors for a related word to be kept")
	most := flag.Int("most", 8, "the most related words kept for a word")
	out := flag.String("o", "related.tsv.gz", "output file")
	flag.Parse()

	vecs := wordvec.Builtin()
	synsets := map[string]*synset{}
	index := map[string][]string{} // word → its synsets, commonest sense first per part of speech
	for _, pos := range []string{"noun", "verb", "adj", "adv"} {
		readData(filepath.Join(*dict, "data."+pos), synsets)
		readIndex(filepath.Join(*dict, "index."+pos), *senses, index)
	}

	vec := map[string][]float32{}
	embed := func(w string) []float32 {
		v, ok := vec[w]
		if !ok {
			v = vecs.Embed([]string{w})
			vec[w] = v
		}
		return v
	}
	known := func(w string) bool {
		for _, x := range embed(w) {
			if x != 0 {
				return true
			}
		}
		return false
	}

	var words []string
	for w := range index {
		if single(w) && known(w) {
			words = append(words, w)
		}
	}
	sort.Strings(words)

	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	zw, _ := gzip.NewWriterLevel(f, gzip.BestCompression)
	bw := bufio.NewWriter(zw)
	kept := 0
	for _, w := range words {
		type near struct {
			word    string
			cos     float64
			derived bool
		}
		seen := map[string]bool{w: true}
		var rel []near
		consider := func(r string, derived bool) {
			r = strings.ToLower(r)
			if seen[r] || !single(r) || !known(r) {
				return
			}
			seen[r] = true
			if c := cosine(embed(w), embed(r)); c >= *minCos {
				rel = append(rel, near{r, c, derived})
			}
		}
		for _, id := range index[w] {
			s := synsets[id]
			if s == nil {
				continue
			}
			me := 0
			for i, x := range s.words {
				if strings.ToLower(x) == w {
					me = i + 1
				}
				consider(x, false)
			}
			for _, p := range s.ptrs {
				t := synsets[p.target]
				if t == nil {
					continue
				}
				switch {
				case p.symbol == "+" && p.source == me:
					// The sense derived from it, all its words: "remember"
					// is derived into "remembering", whose sense is
					// also "memory". Marked, for search weighs them as
					// it weighs a word's other forms.
					for _, x := range t.words {
						consider(x, true)
					}
				case p.symbol == "@" || p.symbol == "@i":
					for _, x := range t.words {
						consider(x, false)
					}
				}
			}
		}
		if len(rel) == 0 {
			continue
		}
		// The words of a derived sense first: they name the same thing.
		sort.SliceStable(rel, func(i, j int) bool {
			if rel[i].derived != rel[j].derived {
				return rel[i].derived
			}
			return rel[i].cos > rel[j].cos
		})
		if len(rel) > *most {
			rel = rel[:*most]
		}
		fmt.Fprintf(bw, "%s\t", w)
		for i, r := range rel {
			if i > 0 {
				bw.WriteByte(' ')
			}
			if r.derived {
				bw.WriteByte('+')
			}
			bw.WriteString(r.word)
		}
		bw.WriteByte('\n')
		kept++
	}
	if err := bw.Flush(); err != nil {
		log.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		log.Fatal(err)
	}
	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	log.Printf("%s: %d words", *out, kept)
}

// single reports whether w is one word of lower-case ASCII letters.
func single(w string) bool {
	if len(w) < 2 {
		return false
	}
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return true
}

func cosine(a, b []float32) float64 {
	var ab, aa, bb float64
	for i := range a {
		ab += float64(a[i]) * float64(b[i])
		aa += float64(a[i]) * float64(a[i])
		bb += float64(b[i]) * float64(b[i])
	}
	if aa == 0 || bb == 0 {
		return 0
	}
	return ab / math.Sqrt(aa*bb)
}

// eachLine calls fn with each line of a WordNet file but its licence
// (the lines that start with two spaces), and stops the program at the
// first line fn cannot read, naming the file and the line: a list built
// from a half-read database would be wrong without saying so.
func eachLine(path string, fn func(line string) error) {
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if line := sc.Text(); !strings.HasPrefix(line, "  ") {
			if err := fn(line); err != nil {
				log.Fatalf("%s:%d: %v", path, n, err)
			}
		}
	}
	if err := sc.Err(); err != nil {
		log.Fatal(err)
	}
}

// readData reads a data.POS file: offset lex_filenum ss_type w_cnt
// (word lex_id)… p_cnt (symbol offset pos source/target)… | gloss.
func readData(path string, into map[string]*synset) {
	eachLine(path, func(line string) error {
		body, _, _ := strings.Cut(line, " | ")
		fs := strings.Fields(body)
		if len(fs) < 4 {
			return fmt.Errorf("%d fields, want at least 4", len(fs))
		}
		n, err := strconv.ParseInt(fs[3], 16, 32)
		if err != nil || len(fs) < 5+2*int(n) {
			return fmt.Errorf("word count %q: %v", fs[3], err)
		}
		s := &synset{}
		i := 4
		for range n {
			w := fs[i]
			if j := strings.IndexByte(w, '('); j > 0 {
				w = w[:j] // an adjective's marker: "(a)", "(p)"
			}
			s.words = append(s.words, w)
			i += 2
		}
		np, err := strconv.Atoi(fs[i])
		if err != nil || len(fs) < i+1+4*np {
			return fmt.Errorf("pointer count %q: %v", fs[i], err)
		}
		i++
		for range np {
			st := fs[i+3]
			src, err1 := strconv.ParseUint(st[:min(2, len(st))], 16, 8)
			dst, err2 := strconv.ParseUint(st[min(2, len(st)):], 16, 8)
			if len(st) != 4 || err1 != nil || err2 != nil {
				return fmt.Errorf("pointer source/target %q", st)
			}
			s.ptrs = append(s.ptrs, pointer{symbol: fs[i], target: posLetter(fs[i+2]) + fs[i+1], source: int(src), dst: int(dst)})
			i += 4
		}
		into[posLetter(fs[2])+fs[0]] = s
		return nil
	})
}

// readIndex reads an index.POS file: lemma pos synset_cnt p_cnt
// symbol… sense_cnt tagsense_cnt offset…, the offsets commonest first.
func readIndex(path string, senses int, into map[string][]string) {
	eachLine(path, func(line string) error {
		fs := strings.Fields(line)
		if len(fs) < 6 {
			return fmt.Errorf("%d fields, want at least 6", len(fs))
		}
		np, err := strconv.Atoi(fs[3])
		if err != nil || len(fs) < 4+np+2 {
			return fmt.Errorf("pointer count %q: %v", fs[3], err)
		}
		for i, o := range fs[4+np+2:] {
			if i == senses {
				break
			}
			into[fs[0]] = append(into[fs[0]], posLetter(fs[1])+o)
		}
		return nil
	})
}

// posLetter folds an adjective satellite (s) into adjectives (a).
func posLetter(p string) string {
	if p == "s" {
		return "a"
	}
	return p
}
