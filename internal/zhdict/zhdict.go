// Package zhdict gives the English meanings of the Chinese words in a
// text, from CC-CEDICT (the words of two to four characters, with their
// first one or two short meanings): search indexes them beside a tool's
// Chinese description, so that a request in English finds a tool its
// server describes only in Chinese. The word list is built by
// scripts/zhdict.sh and read the first time a Chinese text asks for it.
//
// CC-CEDICT is the work of MDBG and its contributors, under the Creative
// Commons Attribution-ShareAlike 4.0 licence
// (https://creativecommons.org/licenses/by-sa/4.0/); the word list
// embedded here is an adaptation of it, under the same licence.
package zhdict

import (
	"bufio"
	"bytes"
	"compress/gzip"
	_ "embed"
	"strings"
	"sync"
	"unicode"
)

//go:embed cedict.tsv.gz
var compressed []byte

var words struct {
	once sync.Once
	m    map[string]string
}

func load() {
	words.m = map[string]string{}
	r, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		return
	}
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		if w, meaning, ok := strings.Cut(sc.Text(), "\t"); ok {
			words.m[w] = meaning
		}
	}
}

// maxWord is the longest word of the list, in characters.
const maxWord = 4

// Gloss returns the English meanings of the Chinese words of text, in
// order, found by longest match (four characters, then three, then two);
// "" when text has no Chinese.
func Gloss(text string) string {
	if !HasHan(text) {
		return ""
	}
	words.once.Do(load)
	var b strings.Builder
	rs := []rune(text)
	for i := 0; i < len(rs); {
		n := hanRun(rs[i:], maxWord)
		for ; n >= 2; n-- {
			if m, ok := words.m[string(rs[i:i+n])]; ok {
				b.WriteString(m)
				b.WriteString("; ")
				break
			}
		}
		i += max(n, 1)
	}
	return b.String()
}

// hanRun is how many of the first max runes are Chinese characters.
func hanRun(rs []rune, max int) int {
	n := 0
	for n < len(rs) && n < max && unicode.Is(unicode.Han, rs[n]) {
		n++
	}
	return n
}

// HasHan reports whether text has a Chinese character.
func HasHan(text string) bool {
	for _, r := range text {
		if r >= 0x2E80 && unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}
