package bigcatalog

import (
	"bytes"
	"testing"

	"github.com/toolshelf/toolshelf/internal/builtin"
)

// Sizes mean what they say, and the same size gives the same catalog.
func TestMake(t *testing.T) {
	base := builtin.Catalog()
	for _, n := range []int{1, base.Len() - 1, base.Len(), 3*base.Len() + 7, 10000} {
		c, err := Make(base, n)
		if err != nil {
			t.Fatal(err)
		}
		if c.Len() != n {
			t.Errorf("Make(%d) has %d distinct tools", n, c.Len())
		}
	}
	a, _ := Make(base, 2000)
	b, _ := Make(base, 2000)
	var ja, jb bytes.Buffer
	if err := a.Encode(&ja); err != nil {
		t.Fatal(err)
	}
	if err := b.Encode(&jb); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(ja.Bytes(), jb.Bytes()) {
		t.Error("two catalogs of the same size differ")
	}
}
