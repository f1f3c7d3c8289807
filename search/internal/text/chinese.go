package text

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/go-ego/gse"
)

// compactDict is the embedded Chinese dictionary: the most frequent words
// of gse's Simplified dictionary (see gen/dict.go), gzip-compressed.
//
//go:embed zh_dict.txt.gz
var compactDict []byte

// chineseStop are function words and request fillers that say nothing about
// which tool is wanted. Text is folded to Simplified before it is looked up.
var chineseStop = setOf(`的 了 吗 呢 吧 啊 呀 哦 嘛 么 着 过 地 得 之 其 而 且 并 及 与 和 或 跟 同
我 你 您 他 她 它 我们 你们 他们 她们 它们 咱们 自己 大家 俺
这 那 这个 那个 这些 那些 这里 那里 这儿 那儿 这样 那样 这么 那么 此 该
是 有 在 为 被 把 给 让 对 从 向 往 于 以 用于 将 就 也 都 还 又 再 才 只 很 太 更 最 非常
请 请问 麻烦 帮 帮我 帮忙 一下 下 能 能否 能不能 可以 可不可以 可否 会 要 想 想要 需要 得要 希望
什么 怎么 怎样 如何 为什么 哪 哪个 哪些 哪里 谁 多少 几 吗 呢
个 一个 一些 些 点 一点 一点儿
就是 然后 还有 以及 或者 还是 但是 因为 所以 如果 虽然
我要 我想 我需要 你能 你可以 给我 帮我查 告诉 告诉我 看看 一起`)

// Segmenter cuts runs of Chinese text into words: gse's search mode without
// its HMM (a dictionary DAG, the most probable route through it, then the
// dictionary words inside each long word), computed over a character trie
// of the dictionary (trie.go) so that a cut allocates nothing. Its output
// is gse's CutSearch(run, false) word for word (TestSegmenterMatchesGse).
//
// The dictionary is loaded once, in the background from the first call to
// Preload or synchronously on the first cut, so that a process that never
// meets Chinese text never pays for it.
//
// A Segmenter is safe for concurrent use.
type Segmenter struct {
	dictPath string // empty: the embedded compact dictionary
	extra    []string

	once     sync.Once
	done     chan struct{}
	dict     *wordTrie
	unknown  float64 // the route weight of a character the dictionary lacks: ln(1/total)
	err      error
	loadTime time.Duration
}

// notWord marks a dictionary key that is only the prefix of longer words.
// Word weights are logarithms of frequencies at most the total: never positive.
const notWord = 1.0

// NewSegmenter returns a segmenter that loads the dictionary file at path
// (gse's text format: "word frequency [part-of-speech]" per line), or the
// embedded compact dictionary when path is empty. Words in extra are added
// to the dictionary so that they are always cut as one word.
func NewSegmenter(path string, extra []string) *Segmenter {
	return &Segmenter{dictPath: path, extra: extra, done: make(chan struct{})}
}

// Preload starts loading the dictionary in the background and returns at once.
func (s *Segmenter) Preload() {
	go s.load()
}

// Wait blocks until the dictionary is loaded and returns the load error, if any.
func (s *Segmenter) Wait() error {
	s.load()
	return s.err
}

// LoadTime reports how long loading the dictionary took (zero before it is loaded).
func (s *Segmenter) LoadTime() time.Duration {
	select {
	case <-s.done:
		return s.loadTime
	default:
		return 0
	}
}

func (s *Segmenter) load() {
	s.once.Do(func() {
		defer close(s.done)
		start := time.Now()
		var dict string
		if s.dictPath == "" {
			zr, err := gzip.NewReader(bytes.NewReader(compactDict))
			if err != nil {
				s.err = fmt.Errorf("embedded Chinese dictionary: %w", err)
				return
			}
			b, err := io.ReadAll(zr)
			if err != nil {
				s.err = fmt.Errorf("embedded Chinese dictionary: %w", err)
				return
			}
			dict = string(b)
		} else {
			b, err := os.ReadFile(s.dictPath)
			if err != nil {
				s.err = fmt.Errorf("Chinese dictionary: %w", err)
				return
			}
			dict = string(b)
		}
		var extra strings.Builder
		for _, w := range s.extra {
			if w = strings.TrimSpace(w); w != "" && !strings.ContainsAny(w, " \n\t") {
				extra.WriteString(w + " 1000 n\n")
			}
		}
		s.dict, s.unknown = buildDict(dict, extra.String())
		s.loadTime = time.Since(start)
	})
	<-s.done
}

// buildDict reads dictionaries in gse's text format the way gse's
// LoadDictStr does: a line is "word frequency [pos]" split at single
// spaces; a line without a frequency, with one that does not parse or with
// one under 2 is skipped; a one-character word counts 2; the first line of
// a word wins. It returns the Han words and their Han prefixes with the
// route weights gse gives them, and the weight of an unknown character.
func buildDict(texts ...string) (*wordTrie, float64) {
	type word struct {
		text string
		freq float64
	}
	lines := 0
	for _, t := range texts {
		lines += strings.Count(t, "\n") + 1
	}
	words := make([]word, 0, lines)
	seen := make(map[string]bool, lines)
	var split gse.Segmenter // only its text splitting, which lowercases letters
	total := 0.0
	for _, t := range texts {
		for len(t) > 0 {
			line, rest, _ := strings.Cut(t, "\n")
			t = rest
			w, rest, ok := strings.Cut(line, " ")
			if !ok {
				continue
			}
			f, _, _ := strings.Cut(rest, " ")
			w = strings.TrimSpace(w)
			freq, err := strconv.ParseFloat(strings.TrimSpace(f), 64)
			if err != nil || freq < 2 {
				continue
			}
			if utf8.RuneCountInString(w) < 2 {
				freq = 2
			}
			key := w
			if !allHan(w) {
				key = gse.Join(split.SplitTextToWords([]byte(w)))
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			total += freq
			words = append(words, word{key, freq})
		}
	}
	logTotal := math.Log(total)
	entries := make([]dictWord, 0, len(words))
	for _, w := range words {
		// Every Han prefix on a character boundary is a path of gse's trie,
		// also of a word with letters in it.
		end := 0
		for i, r := range w.text {
			if !IsHan(r) {
				break
			}
			end = i + utf8.RuneLen(r)
		}
		switch {
		case end == len(w.text) && end > 0:
			entries = append(entries, dictWord{w.text, math.Log(w.freq) - logTotal})
		case end > 0:
			entries = append(entries, dictWord{w.text[:end], notWord})
		}
	}
	return newWordTrie(entries), math.Log(1.0) - logTotal
}

func allHan(s string) bool {
	for _, r := range s {
		if !IsHan(r) {
			return false
		}
	}
	return s != ""
}

// maxInlineRunes is the run length a cut handles without allocating.
const maxInlineRunes = 48

// cut calls emit with gse's search-mode words for one run of Han
// characters, in gse's order; it does nothing when the dictionary failed to
// load (the caller still has bigrams). Words are substrings of run.
func (s *Segmenter) cut(run string, emit func(string)) {
	s.load()
	if s.err != nil {
		return
	}
	var offBuf [maxInlineRunes + 1]int32
	var runeBuf [maxInlineRunes]rune
	var routeBuf [maxInlineRunes + 1]route
	var wordsBuf [maxInlineRunes]uint8
	off, rs := offBuf[:0], runeBuf[:0]
	for i, r := range run {
		off, rs = append(off, int32(i)), append(rs, r)
	}
	n := len(off)
	off = append(off, int32(len(run)))
	routes, words := routeBuf[:0], wordsBuf[:0]
	if n > maxInlineRunes {
		routes, words = make([]route, 0, n+1), make([]uint8, 0, n)
	}
	routes, words = routes[:n+1], words[:n]
	// The most probable route, from the right (gse's calc over its DAG).
	// words[k] notes whether the two and the three characters from k are
	// words, for the search-mode pass below.
	routes[n] = route{}
	d := s.dict
	for k := n - 1; k >= 0; k-- {
		found := false
		node := d.child(0, rs[k])
		for i := k; node >= 0; {
			if v := d.nodes[node].weight; v != notWord {
				if l := i - k + 1; l == 2 || l == 3 {
					words[k] |= 1 << (l - 2)
				}
				s.consider(routes, k, i, v, found)
				found = true
			}
			if i++; i >= n {
				break
			}
			node = d.child(node, rs[i])
		}
		if !found {
			// No word starts here: the character alone, as gse weighs it
			// (a character that only begins words weighs ln 0).
			v := s.unknown
			if d.child(0, rs[k]) >= 0 {
				v = math.Inf(-1)
			}
			s.consider(routes, k, k, v, false)
		}
	}
	// Walk the route. gse would send a stretch of single characters the
	// dictionary does not know through its HMM to guess new words; here
	// they stay single characters, whose bigrams the analyzer adds anyway
	// (the HMM cost a third of a query's time and found nothing the
	// bigrams do not: docs/SEARCH.md). Search mode: before a word longer
	// than two characters come the dictionary words of two, then of three
	// characters inside it.
	for x := 0; x < n; {
		y := routes[x].index + 1
		for l := 2; l <= 3; l++ {
			if y-x <= l {
				break
			}
			for i := x; i+l <= y; i++ {
				if words[i]&(1<<(l-2)) != 0 {
					emit(run[off[i]:off[i+l]])
				}
			}
		}
		emit(run[off[x]:off[y]])
		x = y
	}
}

type route struct {
	weight float64
	index  int
}

// consider offers the word of characters k..i, weighing v, as the route
// from k, the way gse's calc compares candidates (a later one wins a tie).
func (s *Segmenter) consider(routes []route, k, i int, v float64, have bool) {
	r := route{weight: v + routes[i+1].weight, index: i}
	if !have {
		routes[k] = r
		return
	}
	if cur := routes[k]; cur.weight < r.weight || cur.weight == r.weight && cur.index < r.index {
		routes[k] = r
	}
}
