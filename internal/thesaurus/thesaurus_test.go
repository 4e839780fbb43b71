package thesaurus

import (
	"slices"
	"testing"
)

func TestRelated(t *testing.T) {
	for word, want := range map[string]string{
		"forget": "omit",
		"junk":   "trash",
		"soaked": "wet",
		"save":   "keep",
	} {
		if got := Related(word); !slices.Contains(got, Word{Text: want}) {
			t.Errorf("Related(%q) = %v, want %q among them", word, got, want)
		}
	}
	for _, word := range []string{"", "zzyzx", "Forget", "forget\tomit", "aaaaa"} {
		if got := Related(word); got != nil {
			t.Errorf("Related(%q) = %v, want nil", word, got)
		}
	}
	if got := Related("remember"); !slices.Contains(got, Word{Text: "memory", Derived: true}) {
		t.Errorf("Related(remember) = %v, want memory, derived", got)
	}
	if n := Len(); n < 10000 {
		t.Errorf("the list has %d words, want over 10,000", n)
	}
}
