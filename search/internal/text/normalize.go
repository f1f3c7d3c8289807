package text

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"
)

// foldRune maps full-width ASCII to ASCII and Traditional Chinese characters
// to Simplified ones, so that documents and queries written either way meet
// on the same terms.
func foldRune(r rune) rune {
	switch {
	case r >= 0xFF01 && r <= 0xFF5E: // full-width ASCII
		return r - 0xFEE0
	case r == 0x3000: // ideographic space
		return ' '
	case r < 0x3400:
		return r
	}
	i := sort.Search(len(t2sFrom), func(i int) bool { return t2sFrom[i] >= r })
	if i < len(t2sFrom) && t2sFrom[i] == r {
		return t2sTo[i]
	}
	return r
}

// Fold returns s with full-width ASCII made half-width and Traditional
// Chinese characters replaced by their Simplified forms. It does not change
// case. Invalid UTF-8 bytes are replaced by spaces.
func Fold(s string) string {
	var b strings.Builder
	changed := false
	for i, r := range s {
		if r == utf8.RuneError {
			if _, size := utf8.DecodeRuneInString(s[i:]); size == 1 {
				if !changed {
					b.Grow(len(s))
					b.WriteString(s[:i])
					changed = true
				}
				b.WriteByte(' ')
				continue
			}
		}
		f := foldRune(r)
		if f != r && !changed {
			b.Grow(len(s))
			b.WriteString(s[:i])
			changed = true
		}
		if changed {
			b.WriteRune(f)
		}
	}
	if !changed {
		return s
	}
	return b.String()
}

// IsHan reports whether r is a CJK ideograph.
func IsHan(r rune) bool {
	return unicode.Is(unicode.Han, r)
}
