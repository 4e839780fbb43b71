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
)

//go:embed vectors.bin
var vectorsBin []byte

// Model is a table of word vectors. It is immutable and safe for
// concurrent use.
type Model struct {
	dims    int
	index   map[string]int32
	weights []float32 // smooth inverse frequency of each word
	vecs    []int8    // len(index) × dims
	scales  []float32 // per dimension
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

// decode reads a vectors file (see gen.go for the format).
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
	m := &Model{dims: dims, index: make(map[string]int32, n), weights: make([]float32, n), scales: make([]float32, dims)}
	for i := range m.scales {
		m.scales[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	b = b[4*dims:]
	for i := range n {
		if len(b) < 1 || len(b) < 1+int(b[0]) {
			return nil, fmt.Errorf("truncated at word %d", i)
		}
		w := string(b[1 : 1+int(b[0])])
		b = b[1+int(b[0]):]
		m.index[w] = int32(i)
		p := 0.1 / float64(i+1)
		m.weights[i] = float32(sifA / (sifA + p))
	}
	if len(m.index) != n {
		return nil, errors.New("a word is listed twice")
	}
	if len(b) != n*dims {
		return nil, fmt.Errorf("%d bytes of vectors, want %d", len(b), n*dims)
	}
	m.vecs = make([]int8, len(b))
	for i, x := range b {
		m.vecs[i] = int8(x)
	}
	return m, nil
}

// Dims returns the length of the model's vectors.
func (m *Model) Dims() int { return m.dims }

// Len returns the number of words the model knows.
func (m *Model) Len() int { return len(m.index) }

// Knows reports whether word (lower case) is one of the model's words.
func (m *Model) Knows(word string) bool {
	_, ok := m.index[word]
	return ok
}

// Rarity returns the weight Embed gives word: near 0 for the commonest
// English words ("the" 0.01, rank 100 0.5), near 1 for rare ones, and 1
// for words the model does not know.
func (m *Model) Rarity(word string) float64 {
	if i, ok := m.index[word]; ok {
		return float64(m.weights[i])
	}
	return 1
}

// Embed returns the weighted mean of the vectors of words (lower case),
// skipping those the model does not know; all zeros when it knows none.
func (m *Model) Embed(words []string) []float32 {
	out := make([]float32, m.dims)
	var total float32
	for _, w := range words {
		i, ok := m.index[w]
		if !ok {
			continue
		}
		wt := m.weights[i]
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
