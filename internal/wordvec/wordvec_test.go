package wordvec

import (
	"math"
	"runtime"
	"strings"
	"testing"
)

func cos(a, b []float32) float64 {
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

func TestBuiltin(t *testing.T) {
	m := Builtin()
	if m.Len() < 40000 || m.Dims() < 64 {
		t.Fatalf("built-in model: %d words of %d dimensions, want 40000 of 64", m.Len(), m.Dims())
	}
	vec := func(text string) []float32 { return m.Embed(strings.Fields(text)) }
	// Words of one meaning are nearer than words of different ones.
	for _, c := range []struct{ a, near, far string }{
		{"delete", "remove", "weather"},
		{"purchase", "buy", "temperature"},
		{"forecast", "weather", "invoice"},
		{"email", "mail", "earthquake"},
	} {
		if n, f := cos(vec(c.a), vec(c.near)), cos(vec(c.a), vec(c.far)); n <= f {
			t.Errorf("cos(%s, %s) = %.2f, not above cos(%s, %s) = %.2f", c.a, c.near, n, c.a, c.far, f)
		}
	}
	// Frequent words weigh little: "the weather" is about the weather.
	if got := cos(vec("the weather of the"), vec("weather")); got < 0.9 {
		t.Errorf("cos(the weather of the, weather) = %.2f, want ≥ 0.9", got)
	}
	for _, v := range vec("zzyzx qwfp") {
		if v != 0 {
			t.Fatalf("unknown words embed to %v, want zeros", vec("zzyzx qwfp"))
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	good := func() []byte {
		b := []byte(magic)
		b = append(b, 2, 0, 0, 0, 1, 0, 0, 0) // 2 words, 1 dimension
		b = append(b, 0, 0, 0x80, 0x3f)       // scale 1.0
		b = append(b, 1, 'a', 1, 'b')
		return append(b, 1, 2)
	}
	if m, err := decode(good()); err != nil || m.Len() != 2 || m.Embed([]string{"b"})[0] != 2 {
		t.Fatalf("decoding a good file: %v %v", m, err)
	}
	for name, b := range map[string][]byte{
		"empty":          nil,
		"bad magic":      append([]byte("TSWV9\n"), good()[len(magic):]...),
		"truncated":      good()[:len(good())-1],
		"duplicate word": append(append(good()[:len(good())-6], 1, 'a', 1, 'a'), 1, 2),
		"no dimensions":  append(append([]byte(magic), 2, 0, 0, 0, 0, 0, 0, 0), good()[len(magic)+8:]...),
	} {
		if _, err := decode(b); err == nil {
			t.Errorf("%s: decoded without an error", name)
		}
	}
}

// The model keeps little of its own: its words and vectors are read
// where the binary has them, through a table of ranks. (It held 4.7 MB of
// heap when it copied them into a map, a weight table and a vector
// table.)
func TestModelKeepsLittle(t *testing.T) {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	m, err := decode(vectorsBin)
	if err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	held := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("the built-in model holds %d KB of heap for %d words", held/1024, m.Len())
	if held > 1<<20 {
		t.Errorf("the built-in model holds %d KB of heap, want under 1 MB", held/1024)
	}
	runtime.KeepAlive(m)
}
