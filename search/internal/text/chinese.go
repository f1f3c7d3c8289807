package text

import (
	"bytes"
	"compress/gzip"
	_ "embed"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

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

// Segmenter cuts runs of Chinese text into words with gse. Its dictionary is
// loaded once, in the background from the first call to Preload or
// synchronously on the first Cut, so that a process that never meets Chinese
// text never pays for it.
//
// A Segmenter is safe for concurrent use.
type Segmenter struct {
	dictPath string // empty: the embedded compact dictionary
	extra    []string

	once     sync.Once
	done     chan struct{}
	seg      gse.Segmenter
	err      error
	loadTime time.Duration
}

// hmmOnce guards gse's HMM model, which gse keeps in package variables:
// only the first segmenter may (re)load it, or readers would race.
var hmmOnce sync.Once

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
		s.seg.SkipLog = true
		hmmFirst := false
		hmmOnce.Do(func() { hmmFirst = true })
		s.seg.NotLoadHMM = !hmmFirst
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
		if len(s.extra) > 0 {
			var b strings.Builder
			b.WriteString(dict)
			for _, w := range s.extra {
				if w = strings.TrimSpace(w); w != "" && !strings.ContainsAny(w, " \n\t") {
					b.WriteString("\n" + w + " 1000 n")
				}
			}
			dict = b.String()
		}
		if err := s.seg.LoadDictStr(dict); err != nil {
			s.err = fmt.Errorf("Chinese dictionary: %w", err)
			return
		}
		s.loadTime = time.Since(start)
	})
	<-s.done
}

// cut returns gse's search-mode words for one run of Han characters, or nil
// when the dictionary failed to load (the caller still has bigrams).
func (s *Segmenter) cut(run string) []string {
	s.load()
	if s.err != nil {
		return nil
	}
	return s.seg.CutSearch(run, true)
}
