// Package wordvec holds toolshelf's built-in word vectors: 64 numbers for
// each of the 40,000 most frequent English words, distilled from a
// sentence encoder so that search can match meaning, not only words,
// with no model server and no network.
//
// Each word's vector is what the Universal Sentence Encoder (lite) makes
// of the word alone, reduced from 512 to 64 dimensions by principal
// component analysis and stored as signed bytes with a scale per
// dimension (the Model2Vec recipe, with a smaller teacher). A text is
// embedded as the mean of its words' vectors, each weighted by how rare
// the word is in English (smooth inverse frequency), so that "the" and
// "of" count for almost nothing. The same rarity weights serve the
// lexical engine, which weighs query words by them (Rarity).
//
// Regenerate vectors.bin with scripts/wordvec.sh; gen.go documents the
// file format.
package wordvec

import (
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

//go:embed vectors.bin
var vectorsBin []byte

// Model is a table of word vectors. It is immutable and safe for
// concurrent use. It keeps next to nothing of its own: its words and
// vectors are read where the file has them (the binary's own data, for
// the built-in model) through a table of ranks by hash, so that an engine
// that never embeds pays a few hundred kilobytes for knowing English
// words, not megabytes.
type Model struct {
	dims   int
	words  []byte    // the file's words: a length byte, then the word
	start  []int32   // where word i starts in words, by frequency rank
	slots  []int32   // an open-addressing table of rank+1 by the word's hash (0: empty)
	vecs   []int8    // len(start) × dims, a view of the file's bytes
	scales []float32 // per dimension
}

// Builtin returns the built-in model, decoded on first use.
var Builtin = sync.OnceValue(func() *Model {
	m, err := decode(vectorsBin)
	if err != nil {
		panic("wordvec: built-in vectors: " + err.Error()) // checked by the package's tests
	}
	return m
})

// magic starts a vectors file.
const magic = "TSWV1\n"

// sifA is the smooth inverse frequency constant: a word of probability p
// weighs a/(a+p). The word at frequency rank r is taken to have
// probability 0.1/r (Zipf's law), so the most frequent words weigh about
// 0.01, rank 100 weighs 0.5 and rank 10,000 0.99.
const sifA = 1e-3

// decode reads a vectors file (see gen.go for the format). The model
// refers to b, which must not change.
func decode(b []byte) (*Model, error) {
	if len(b) < len(magic)+8 || string(b[:len(magic)]) != magic {
		return nil, errors.New("not a word vectors file")
	}
	b = b[len(magic):]
	n, dims := int(binary.LittleEndian.Uint32(b)), int(binary.LittleEndian.Uint32(b[4:]))
	b = b[8:]
	if dims <= 0 || n <= 0 || len(b) < 4*dims {
		return nil, fmt.Errorf("bad header: %d words of %d dimensions", n, dims)
	}
	m := &Model{dims: dims, start: make([]int32, n), scales: make([]float32, dims)}
	for i := range m.scales {
		m.scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	b = b[4*dims:]
	at := 0
	for i := range n {
		if len(b) < at+1 || len(b) < at+1+int(b[at]) {
			return nil, fmt.Errorf("truncated at word %d", i)
		}
		m.start[i] = int32(at)
		at += 1 + int(b[at])
	}
	m.words, b = b[:at], b[at:]
	// A table at most half full: a lookup reads one or two slots.
	size := 1
	for size < 2*n {
		size <<= 1
	}
	m.slots = make([]int32, size)
	for i := range int32(n) {
		w := m.word(i)
		if _, dup := m.rank(w); dup {
			return nil, fmt.Errorf("the word %q is listed twice", w)
		}
		j := hash(w) & uint32(size-1)
		for m.slots[j] != 0 {
			j = (j + 1) & uint32(size-1)
		}
		m.slots[j] = i + 1
	}
	if len(b) != n*dims {
		return nil, fmt.Errorf("%d bytes of vectors, want %d", len(b), n*dims)
	}
	m.vecs = unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
	return m, nil
}

// word is the word of rank i, a view of the file's bytes.
func (m *Model) word(i int32) string {
	at := m.start[i]
	return unsafe.String(&m.words[at+1], int(m.words[at]))
}

// rank finds a word's frequency rank.
func (m *Model) rank(w string) (int32, bool) {
	mask := uint32(len(m.slots) - 1)
	for j := hash(w) & mask; m.slots[j] != 0; j = (j + 1) & mask {
		if i := m.slots[j] - 1; m.word(i) == w {
			return i, true
		}
	}
	return 0, false
}

// hash is FNV-1a of w.
func hash(w string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(w); i++ {
		h = (h ^ uint32(w[i])) * 16777619
	}
	return h
}

// weight is the smooth inverse frequency of the word of rank i.
func weight(i int32) float32 {
	p := 0.1 / float64(i+1)
	return float32(sifA / (sifA + p))
}

// Dims returns the length of the model's vectors.
func (m *Model) Dims() int { return m.dims }

// Len returns the number of words the model knows.
func (m *Model) Len() int { return len(m.start) }

// Knows reports whether word (lower case) is one of the model's words.
func (m *Model) Knows(word string) bool {
	_, ok := m.rank(word)
	return ok
}

// Rarity returns the weight Embed gives word: near 0 for the commonest
// English words ("the" 0.01, rank 100 0.5), near 1 for rare ones, and 1
// for words the model does not know.
func (m *Model) Rarity(word string) float64 {
	if i, ok := m.rank(word); ok {
		return float64(weight(i))
	}
	return 1
}

// Embed returns the weighted mean of the vectors of words (lower case),
// skipping those the model does not know; all zeros when it knows none.
func (m *Model) Embed(words []string) []float32 {
	out := make([]float32, m.dims)
	var total float32
	for _, w := range words {
		i, ok := m.rank(w)
		if !ok {
			continue
		}
		wt := weight(i)
		total += wt
		for d, x := range m.vecs[int(i)*m.dims : int(i+1)*m.dims] {
			out[d] += wt * float32(x)
		}
	}
	if total != 0 {
		for d := range out {
			out[d] *= m.scales[d] / total
		}
	}
	return out
}
