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
	case r < 0x3400 || r >= 0x3400+rune(len(t2sHas))*64 || t2sHas[(r-0x3400)/64]&(1<<((r-0x3400)%64)) == 0:
		return r
	}
	i := sort.Search(len(t2sFrom), func(i int) bool { return t2sFrom[i] >= r })
	if i < len(t2sFrom) && t2sFrom[i] == r {
		return t2sTo[i]
	}
	return r
}

// t2sHas is a bitmap over the Han code points from U+3400: which of them
// t2sFrom holds, so that most characters skip the search.
var t2sHas = func() []uint64 {
	m := make([]uint64, (t2sFrom[len(t2sFrom)-1]-0x3400)/64+1)
	for _, r := range t2sFrom {
		if r >= 0x3400 {
			m[(r-0x3400)/64] |= 1 << ((r - 0x3400) % 64)
		}
	}
	return m
}()

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
	if r >= 0x4E00 && r <= 0x9FFF { // the unified ideographs block: all Han
		return true
	}
	return r >= 0x2E80 && unicode.Is(unicode.Han, r)
}
