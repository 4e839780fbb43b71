//go:build ignore

// gen.go writes vectors.bin from a teacher model's vectors of single
// words; scripts/wordvec.sh runs it:
//
//	go run gen.go -words words.txt -vectors teacher.f32 -dims 64 -o vectors.bin
//
// words.txt lists the vocabulary, most frequent word first (the order
// gives the smooth-inverse-frequency weights); teacher.f32 holds one
// little-endian float32 vector per word, in the same order. The vectors
// are centred, projected on their top -dims principal components, and
// quantized to signed bytes with a scale per dimension.
//
// vectors.bin is, little-endian:
//
//	"TSWV1\n"
//	uint32 words, uint32 dims
//	float32 scale[dims]
//	words × (uint8 length, the word's bytes)
//	words × dims int8, row by row
package main

import (
	"bufio"
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math"
	"os"
	"sort"
	"strings"
)

func main() {
	wordsFile := flag.String("words", "", "vocabulary, one word per line, most frequent first")
	vecFile := flag.String("vectors", "", "the teacher's float32 vectors, one per word")
	dims := flag.Int("dims", 64, "dimensions to keep")
	out := flag.String("o", "vectors.bin", "output file")
	flag.Parse()

	raw, err := os.ReadFile(*wordsFile)
	if err != nil {
		log.Fatal(err)
	}
	words := strings.Fields(string(raw))
	data, err := os.ReadFile(*vecFile)
	if err != nil {
		log.Fatal(err)
	}
	if len(data)%(4*len(words)) != 0 {
		log.Fatalf("%d bytes of vectors for %d words", len(data), len(words))
	}
	n := len(data) / 4 / len(words)
	vecs := make([][]float64, len(words))
	for i := range vecs {
		vecs[i] = make([]float64, n)
		for j := range n {
			vecs[i][j] = float64(math.Float32frombits(binary.LittleEndian.Uint32(data[4*(i*n+j):])))
		}
	}

	mean, comps, kept := pca(vecs, *dims)
	log.Printf("%d words, %d → %d dimensions, %.1f%% of the variance kept", len(words), n, *dims, 100*kept)
	proj := make([][]float64, len(words))
	maxAbs := make([]float64, *dims)
	for i, v := range vecs {
		proj[i] = make([]float64, *dims)
		for c, comp := range comps {
			var s float64
			for j, x := range v {
				s += (x - mean[j]) * comp[j]
			}
			proj[i][c] = s
			maxAbs[c] = max(maxAbs[c], math.Abs(s))
		}
	}

	w := bufio.NewWriter(must(os.Create(*out)))
	w.WriteString("TSWV1\n")
	binary.Write(w, binary.LittleEndian, [2]uint32{uint32(len(words)), uint32(*dims)})
	scales := make([]float32, *dims)
	for c := range scales {
		scales[c] = float32(maxAbs[c] / 127)
	}
	binary.Write(w, binary.LittleEndian, scales)
	for _, word := range words {
		if len(word) > 255 {
			log.Fatalf("word too long: %q", word)
		}
		w.WriteByte(byte(len(word)))
		w.WriteString(word)
	}
	for _, p := range proj {
		for c, x := range p {
			w.WriteByte(byte(int8(math.Round(x / float64(scales[c])))))
		}
	}
	if err := w.Flush(); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "wrote %s\n", *out)
}

// pca returns the mean of vecs, the top k principal components (unit
// vectors), and the share of the variance they keep.
func pca(vecs [][]float64, k int) (mean []float64, comps [][]float64, kept float64) {
	n := len(vecs[0])
	mean = make([]float64, n)
	for _, v := range vecs {
		for j, x := range v {
			mean[j] += x / float64(len(vecs))
		}
	}
	cov := make([]float64, n*n)
	d := make([]float64, n)
	for _, v := range vecs {
		for j, x := range v {
			d[j] = x - mean[j]
		}
		for i := range n {
			row := cov[i*n : (i+1)*n]
			for j := i; j < n; j++ {
				row[j] += d[i] * d[j]
			}
		}
	}
	for i := range n {
		for j := range i {
			cov[i*n+j] = cov[j*n+i]
		}
	}
	vals, vs := eigen(cov, n)
	var total float64
	for i, v := range vals {
		total += v
		if i < k {
			kept += v
		}
	}
	return mean, vs[:k], kept / total
}

// eigen diagonalises the symmetric n×n matrix a (row-major, overwritten)
// by cyclic Jacobi rotations, and returns its eigenvalues, largest first,
// and the matching unit eigenvectors.
func eigen(a []float64, n int) ([]float64, [][]float64) {
	v := make([]float64, n*n)
	for i := range n {
		v[i*n+i] = 1
	}
	for range 50 {
		var off float64
		for p := range n {
			for q := p + 1; q < n; q++ {
				off += a[p*n+q] * a[p*n+q]
			}
		}
		if off < 1e-18 {
			break
		}
		for p := range n {
			for q := p + 1; q < n; q++ {
				apq := a[p*n+q]
				if math.Abs(apq) < 1e-15 {
					continue
				}
				theta := (a[q*n+q] - a[p*n+p]) / (2 * apq)
				t := 1 / (math.Abs(theta) + math.Sqrt(theta*theta+1))
				if theta < 0 {
					t = -t
				}
				c := 1 / math.Sqrt(t*t+1)
				s := t * c
				for k := range n { // columns p and q
					akp, akq := a[k*n+p], a[k*n+q]
					a[k*n+p], a[k*n+q] = c*akp-s*akq, s*akp+c*akq
				}
				for k := range n { // rows p and q
					apk, aqk := a[p*n+k], a[q*n+k]
					a[p*n+k], a[q*n+k] = c*apk-s*aqk, s*apk+c*aqk
				}
				for k := range n {
					vkp, vkq := v[k*n+p], v[k*n+q]
					v[k*n+p], v[k*n+q] = c*vkp-s*vkq, s*vkp+c*vkq
				}
			}
		}
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(i, j int) bool { return a[order[i]*n+order[i]] > a[order[j]*n+order[j]] })
	vals := make([]float64, n)
	vecs := make([][]float64, n)
	for r, i := range order {
		vals[r] = a[i*n+i]
		vecs[r] = make([]float64, n)
		for k := range n {
			vecs[r][k] = v[k*n+i]
		}
	}
	return vals, vecs
}

func must[T any](v T, err error) T {
	if err != nil {
		log.Fatal(err)
	}
	return v
}
