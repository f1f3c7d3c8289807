// Package text turns tool descriptions and queries into search terms.
//
// One Analyzer serves documents and queries alike, so that both sides of a
// match are cut the same way:
//
//   - full-width ASCII is folded to ASCII and Traditional Chinese to
//     Simplified (OpenCC's character table);
//   - runs of ASCII letters and digits are split at camelCase, PascalCase and
//     digit boundaries, and at every other character (_ - . / and spaces);
//     an identifier that splits also yields its joined form ("executeSql" →
//     execute, sql, executesql);
//   - English words are lowercased, stop words dropped and a light stemmer
//     folds plurals, -ing and -ed (see Stem);
//   - runs of Chinese characters are cut by gse (search mode) and also
//     yield their character bigrams, so that a word gse cuts differently in
//     a query and in a description still meets; Chinese stop words are
//     dropped;
//   - other letters (accented Latin, Cyrillic, …) form lowercased words.
package text

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxTermBytes bounds one term; longer ASCII words are cut there.
const MaxTermBytes = 64

// Analyzer turns text into terms. The zero value cuts Chinese into bigrams
// only; set Chinese to add gse's words.
//
// An Analyzer is safe for concurrent use once its fields are set.
type Analyzer struct {
	// Chinese, when not nil, segments runs of Chinese characters.
	Chinese *Segmenter
	// NoBigrams turns off Chinese character bigrams (for measurements).
	NoBigrams bool

	// memo holds the terms of ASCII runs seen while it was being filled
	// (index build); Freeze makes it read-only, after which concurrent use
	// is safe and misses are computed without being stored.
	memo   map[string][]string
	frozen bool
}

// Memoize starts recording the terms of every ASCII word analysed, so that
// a query repeating a document word skips the work. Call it before
// analysing documents, and Freeze before any concurrent use.
func (a *Analyzer) Memoize() {
	a.memo = make(map[string][]string, 1024)
	for w := range englishStop { // queries are full of them
		a.memo[w] = nil
	}
}

// Freeze stops recording; the Analyzer is then safe for concurrent use.
func (a *Analyzer) Freeze() { a.frozen = true }

// EachUnrecorded is Each reading the memo without adding to it: for text
// whose new words no query is expected to repeat (a memo entry lives as
// long as the index). Like the recording Each, not for concurrent use
// before Freeze.
func (a *Analyzer) EachUnrecorded(s string, emit func(term string)) {
	was := a.frozen
	a.frozen = true
	a.Each(s, emit)
	a.frozen = was
}

// Memo calls fn for every recorded ASCII word and its terms, in no order.
func (a *Analyzer) Memo(fn func(word string, terms []string)) {
	for w, ts := range a.memo {
		fn(w, ts)
	}
}

// ASCIIWords calls fn for each run of ASCII letters and digits of s, cut
// to MaxTermBytes, in order: for ASCII-only text, the words Each analyses.
func ASCIIWords(s string, fn func(word string)) {
	for i := 0; i < len(s); {
		if !isASCIIAlnum(rune(s[i])) {
			i++
			continue
		}
		j := i
		for j < len(s) && isASCIIAlnum(rune(s[j])) {
			j++
		}
		w := s[i:j]
		if len(w) > MaxTermBytes {
			w = w[:MaxTermBytes]
		}
		fn(w)
		i = j
	}
}

// IsASCII reports whether s is all ASCII.
func IsASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// Terms returns the terms of s in order of appearance; a term may repeat.
func (a *Analyzer) Terms(s string) []string {
	var out []string
	a.Each(s, func(t string) { out = append(out, t) })
	return out
}

// HasHan reports whether s holds any Chinese character.
func HasHan(s string) bool {
	for i := 0; i < len(s); {
		if s[i] < utf8.RuneSelf {
			i++
			continue
		}
		r, n := utf8.DecodeRuneInString(s[i:])
		if r >= 0x2E80 && IsHan(r) {
			return true
		}
		i += n
	}
	return false
}

// Each calls emit for every term of s, in order.
func (a *Analyzer) Each(s string, emit func(term string)) {
	a.EachFolded(Fold(s), emit)
}

// EachFolded is Each for text already passed through Fold.
func (a *Analyzer) EachFolded(s string, emit func(term string)) {
	i := 0
	for i < len(s) {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r >= 0x2E80 && IsHan(r):
			j := i
			for j < len(s) {
				r2, n := utf8.DecodeRuneInString(s[j:])
				if !IsHan(r2) {
					break
				}
				j += n
			}
			a.han(s[i:j], emit)
			i = j
		case isASCIIAlnum(r) || unicode.IsLetter(r) || unicode.IsNumber(r):
			// A word: letters, digits and combining marks, Chinese excepted.
			j, ascii := i, true
			for j < len(s) {
				r2, n := utf8.DecodeRuneInString(s[j:])
				if isASCIIAlnum(r2) {
					j += n
					continue
				}
				if IsHan(r2) || !(unicode.IsLetter(r2) || unicode.IsNumber(r2) || unicode.Is(unicode.Mn, r2)) {
					break
				}
				ascii = false
				j += n
			}
			if ascii {
				a.ascii(s[i:j], emit)
			} else {
				w := strings.ToLower(s[i:j])
				if len(w) > MaxTermBytes {
					w = truncUTF8(w, MaxTermBytes)
				}
				emit(w)
			}
			i = j
		default:
			i += size
		}
	}
}

func truncUTF8(s string, n int) string {
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

func isASCIIAlnum(r rune) bool {
	return r < utf8.RuneSelf && (r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
}

// ascii handles one run of ASCII letters and digits.
func (a *Analyzer) ascii(run string, emit func(string)) {
	if len(run) > MaxTermBytes {
		run = run[:MaxTermBytes]
	}
	if a.memo != nil {
		if terms, ok := a.memo[run]; ok {
			for _, t := range terms {
				emit(t)
			}
			return
		}
		if !a.frozen {
			var terms []string
			a.asciiTerms(run, func(t string) { terms = append(terms, t) })
			a.memo[run] = terms
			for _, t := range terms {
				emit(t)
			}
			return
		}
	}
	a.asciiTerms(run, emit)
}

func (a *Analyzer) asciiTerms(run string, emit func(string)) {
	if allDigits(run) {
		emit(run)
		return
	}
	lower := asciiLower(run)
	parts := 0
	splitIdentifier(run, func(start, end int) {
		parts++
		w := lower[start:end]
		if englishStop[w] || (len(w) == 1 && w[0] >= 'a') {
			return
		}
		emit(Stem(w))
	})
	if parts > 1 && !englishStop[lower] {
		// The joined identifier, so "executesql" or "execute_sql" typed as
		// one word still meets executeSql.
		emit(lower)
	}
}

// han handles one run of Chinese characters (already folded to Simplified).
// Every term is a substring of run.
func (a *Analyzer) han(run string, emit func(string)) {
	var offBuf [maxInlineRunes + 1]int
	off := offBuf[:0]
	for i := range run {
		off = append(off, i)
	}
	n := len(off)
	off = append(off, len(run))
	if n == 1 {
		if !chineseStop[run] {
			emit(run)
		}
		return
	}
	if a.Chinese != nil {
		a.Chinese.cut(run, func(w string) { // w: a non-empty substring of run
			if !chineseStop[w] {
				emit(w)
			}
		})
	}
	if a.NoBigrams {
		if a.Chinese == nil {
			for k := 0; k < n; k++ {
				if c := run[off[k]:off[k+1]]; !chineseStop[c] {
					emit(c)
				}
			}
		}
		return
	}
	for k := 0; k+1 < n; k++ {
		if stopChar(run[off[k]:off[k+1]]) || stopChar(run[off[k+1]:off[k+2]]) {
			continue
		}
		emit(run[off[k]:off[k+2]])
	}
}

// stopChar reports characters that glue words together; a bigram that holds
// one says nothing. c is one character.
func stopChar(c string) bool {
	r, _ := utf8.DecodeRuneInString(c)
	switch r {
	case '的', '了', '吗', '呢', '吧', '啊', '呀', '么', '着', '和', '与', '或', '把', '给', '请', '帮', '我', '你', '您', '是', '在', '一', '个', '这', '那':
		return true
	}
	return false
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}
