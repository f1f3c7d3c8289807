package search

import (
	"fmt"
	"sort"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/toolshed/toolshed/search/internal/lexicon"
	"github.com/toolshed/toolshed/search/internal/text"
)

// Segmenter cuts Chinese text into words (gse). Its dictionary loads once,
// lazily or in the background; a process that never meets Chinese never
// loads it. A Segmenter is safe for concurrent use; share one.
type Segmenter struct {
	s *text.Segmenter
}

// NewSegmenter returns a segmenter using the dictionary file at path (gse's
// format, "word frequency [pos]" a line), or the embedded compact dictionary
// when path is empty.
func NewSegmenter(path string) *Segmenter {
	return &Segmenter{s: text.NewSegmenter(path, lexiconWords())}
}

// Preload starts loading the dictionary in the background.
func (s *Segmenter) Preload() { s.s.Preload() }

// Wait waits for the dictionary and returns its load error.
func (s *Segmenter) Wait() error { return s.s.Wait() }

var (
	defaultSegOnce sync.Once
	defaultSeg     *Segmenter
)

// DefaultSegmenter returns the process-wide segmenter with the embedded
// compact dictionary.
func DefaultSegmenter() *Segmenter {
	defaultSegOnce.Do(func() { defaultSeg = NewSegmenter("") })
	return defaultSeg
}

var (
	builtinOnce sync.Once
	builtinLex  []lexicon.Concept
)

func builtinLexicon() []lexicon.Concept {
	builtinOnce.Do(func() { builtinLex = lexicon.Builtin() })
	return builtinLex
}

// lexiconWords are the Chinese terms of the built-in lexicon, added to the
// segmenter's dictionary so a query cuts them as words.
func lexiconWords() []string {
	var out []string
	for _, c := range builtinLexicon() {
		out = append(out, c.Zh...)
	}
	return out
}

// target is an index term an expansion adds.
type target struct {
	id   int32
	term string
}

// enWord is what the lexicon knows of one English word: the concepts it
// names alone, and how many words the longest phrase it starts has.
type enWord struct {
	concepts []int32
	longest  int
	targets  []weighted // the terms its concepts add, in concept order
}

// weighted is a target with the weight an expansion gives it.
type weighted struct {
	target
	w float32
}

// expander maps query words to lexicon concepts and concepts to index terms.
type expander struct {
	zh         map[string][]int32 // folded Chinese term → concepts; a proper prefix of one → nil
	zhMaxRunes int
	en         map[string]enWord  // analysed English word → its concepts and phrases
	phrases    map[string][]int32 // analysed English phrase ("exchange rate") → concepts
	zhTargets  [][]target         // concept → its Chinese terms as index terms
	enTargets  [][]target         // concept → its English terms as index terms
	cross      float32            // weight of a term in the other language
	same       float32            // weight of a synonym in the query's language
}

func newExpander(ix *Index, files []string, cross, same float64) (*expander, error) {
	concepts := append([]lexicon.Concept(nil), builtinLexicon()...)
	for _, f := range files {
		c, err := lexicon.ParseFile(f)
		if err != nil {
			return nil, fmt.Errorf("search: lexicon: %w", err)
		}
		concepts = append(concepts, c...)
	}
	e := &expander{zh: map[string][]int32{}, en: map[string]enWord{}, phrases: map[string][]int32{}, cross: float32(cross), same: float32(same)}
	// A term in a large share of the tools says little about which one is
	// wanted, and expanding into it costs a long postings list: such terms
	// are matched only when the query says them itself.
	maxDF := max(len(ix.docs)/8, 64)
	e.zhTargets = make([][]target, len(concepts))
	e.enTargets = make([][]target, len(concepts))
	for ci, c := range concepts {
		id := int32(ci)
		seen := map[string]bool{}
		addTo := func(list *[]target) func(string) {
			return func(t string) {
				if id, ok := ix.terms[t]; ok && !seen[t] && int(ix.start[id+1]-ix.start[id]) <= maxDF {
					seen[t] = true
					*list = append(*list, target{id, t})
				}
			}
		}
		for _, z := range c.Zh {
			z = text.Fold(z)
			e.zh[z] = append(e.zh[z], id)
			for i := range z { // its proper prefixes, so that a scan stops early
				if _, ok := e.zh[z[:i]]; !ok && i > 0 {
					e.zh[z[:i]] = nil
				}
			}
			if n := len([]rune(z)); n > e.zhMaxRunes {
				e.zhMaxRunes = n
			}
			if ix.hasHan {
				ix.an.Each(z, addTo(&e.zhTargets[ci]))
			}
		}
		for _, en := range c.En {
			words := englishWords(ix.an, en)
			if len(words) == 0 {
				continue
			}
			key := strings.Join(words, " ")
			first := e.en[words[0]]
			first.longest = max(first.longest, len(words))
			if len(words) == 1 {
				first.concepts = append(first.concepts, id)
			} else {
				e.phrases[key] = append(e.phrases[key], id)
			}
			e.en[words[0]] = first
			ix.an.Each(en, addTo(&e.enTargets[ci]))
		}
		// Deterministic order of expansion terms.
		byTerm := func(l []target) func(i, j int) bool { return func(i, j int) bool { return l[i].term < l[j].term } }
		sort.Slice(e.zhTargets[ci], byTerm(e.zhTargets[ci]))
		sort.Slice(e.enTargets[ci], byTerm(e.enTargets[ci]))
	}
	for w, ew := range e.en {
		for _, c := range ew.concepts {
			for _, t := range e.zhTargets[c] {
				ew.targets = append(ew.targets, weighted{t, e.cross})
			}
			if e.same > 0 {
				for _, t := range e.enTargets[c] {
					ew.targets = append(ew.targets, weighted{t, e.same})
				}
			}
		}
		e.en[w] = ew
	}
	return e, nil
}

// englishWords returns the analysed single words of an English phrase,
// without the joined forms the analyzer adds for identifiers.
func englishWords(an *text.Analyzer, phrase string) []string {
	var out []string
	for _, f := range strings.FieldsFunc(strings.ToLower(phrase), func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9')
	}) {
		out = append(out, an.Terms(f)...)
	}
	return out
}

// expand finds the lexicon concepts in a query and adds their terms.
// q is the query passed through text.Fold; own are its analysed terms, in
// order.
func (e *expander) expand(q string, own []string, add func(id int32, term string, w float32, source string)) {
	type hit struct {
		concept int32
		source  string
		zh      bool // found through a Chinese term
	}
	var hits []hit
	note := func(cs []int32, src string, zh bool) {
	next:
		for _, c := range cs {
			for _, h := range hits {
				if h.concept == c {
					continue next
				}
			}
			hits = append(hits, hit{c, src, zh})
		}
	}
	// Chinese: every lexicon term that occurs in a run of Chinese characters.
	if text.HasHan(q) {
		for i := 0; i < len(q); {
			r, size := utf8.DecodeRuneInString(q[i:])
			if r < utf8.RuneSelf || !text.IsHan(r) {
				i += size
				continue
			}
			for j, n := i, 0; n < e.zhMaxRunes && j < len(q); n++ {
				r2, s2 := utf8.DecodeRuneInString(q[j:])
				if !text.IsHan(r2) {
					break
				}
				j += s2
				cs, ok := e.zh[q[i:j]]
				if !ok {
					break
				}
				if cs != nil {
					note(cs, q[i:j], true)
				}
			}
			i += size
		}
	}
	// English: the phrases that start at each query word.
	var key []byte
	for i, w := range own {
		if w[0] >= utf8.RuneSelf { // English words are ASCII
			continue
		}
		ew, ok := e.en[w]
		if !ok {
			continue
		}
		for _, t := range ew.targets {
			add(t.id, t.term, t.w, w)
		}
		key = append(key[:0], w...)
		for n := 2; n <= ew.longest && i+n <= len(own); n++ {
			key = append(append(key, ' '), own[i+n-1]...)
			if cs, ok := e.phrases[string(key)]; ok {
				note(cs, string(key), false)
			}
		}
	}
	for _, h := range hits {
		other, same := e.enTargets[h.concept], e.zhTargets[h.concept]
		if !h.zh {
			other, same = same, other
		}
		for _, t := range other {
			add(t.id, t.term, e.cross, h.source)
		}
		if e.same > 0 {
			for _, t := range same {
				add(t.id, t.term, e.same, h.source)
			}
		}
	}
}
