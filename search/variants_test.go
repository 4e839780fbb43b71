package search

import "testing"

// The default engine is the variant docs/search-quality.md reports as the
// default: a change to one must be measured in the other.
func TestDefaultIsTheMeasuredVariant(t *testing.T) {
	v, err := VariantNamed("default")
	if err != nil {
		t.Fatal(err)
	}
	if v.config() != defaultBM25 {
		t.Errorf("defaultBM25 = %+v, the measured default is %+v", defaultBM25, v.config())
	}
	if _, err := VariantNamed("nope"); err == nil {
		t.Error("an unknown variant was accepted")
	}
}
