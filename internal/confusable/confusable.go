// Package confusable folds text written to look like Latin letters into
// them: compatibility forms (fullwidth letters, ligatures) by NFKC, and
// letters of other scripts that look like Latin ones (Cyrillic "а",
// Greek "ο"). The second wall and the poisoning check read text folded,
// so that "Іgnore аll" reads as "Ignore all".
package confusable

import (
	"strings"

	"golang.org/x/text/unicode/norm"
)

// lookalikes are letters of other scripts that look like Latin ones.
var lookalikes = map[rune]rune{
	'а': 'a', 'е': 'e', 'о': 'o', 'р': 'p', 'с': 'c', 'у': 'y', 'х': 'x', 'і': 'i', 'ј': 'j', 'ѕ': 's', 'һ': 'h', 'ԁ': 'd', 'ԛ': 'q', 'ԝ': 'w', 'ɡ': 'g', 'ɑ': 'a', 'ı': 'i',
	'А': 'A', 'В': 'B', 'Е': 'E', 'К': 'K', 'М': 'M', 'Н': 'H', 'О': 'O', 'Р': 'P', 'С': 'C', 'Т': 'T', 'Х': 'X', 'І': 'I', 'Ј': 'J', 'Ѕ': 'S', 'Ү': 'Y',
	'α': 'a', 'ο': 'o', 'ν': 'v', 'ρ': 'p', 'τ': 't', 'υ': 'u', 'ι': 'i', 'κ': 'k',
	'Α': 'A', 'Β': 'B', 'Ε': 'E', 'Ζ': 'Z', 'Η': 'H', 'Ι': 'I', 'Κ': 'K', 'Μ': 'M', 'Ν': 'N', 'Ο': 'O', 'Ρ': 'P', 'Τ': 'T', 'Υ': 'Y', 'Χ': 'X',
	'ℓ': 'l',
}

// Fold returns s with compatibility forms folded and look-alike letters
// made Latin; s itself when it is ASCII.
func Fold(s string) string {
	ascii := true
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			ascii = false
			break
		}
	}
	if ascii {
		return s
	}
	return strings.Map(func(r rune) rune {
		if l, ok := lookalikes[r]; ok {
			return l
		}
		return r
	}, norm.NFKC.String(s))
}
