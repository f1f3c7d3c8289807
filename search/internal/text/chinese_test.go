package text

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/go-ego/gse"
)

// hanRuns returns the runs of Han characters of s, folded as the analyzer
// folds them.
func hanRuns(s string) []string {
	var out []string
	s = Fold(s)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if !IsHan(r) {
			i += n
			continue
		}
		j := i
		for j < len(s) {
			r2, n2 := utf8.DecodeRuneInString(s[j:])
			if !IsHan(r2) {
				break
			}
			j += n2
		}
		out = append(out, s[i:j])
		i = j
	}
	return out
}

// TestSegmenterMatchesGse: the segmenter cuts every run exactly as gse's
// CutSearch(run, false) does over the same dictionary: the Chinese
// evaluation queries, the lexicon, and random runs of dictionary words and
// characters.
func TestSegmenterMatchesGse(t *testing.T) {
	extra := []string{"表结构", "汇率换算", "数据可视化"}
	ours := NewSegmenter("", extra)
	if err := ours.Wait(); err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(compactDict))
	if err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	dict := string(raw)
	for _, w := range extra {
		dict += "\n" + w + " 1000 n"
	}
	var ref gse.Segmenter
	ref.SkipLog, ref.NotLoadHMM = true, true
	if err := ref.LoadDictStr(dict); err != nil {
		t.Fatal(err)
	}

	var runs []string
	for _, f := range []string{"../../testdata/zh-eval/queries.jsonl", "../lexicon/zh_en.txt"} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		runs = append(runs, hanRuns(string(b))...)
	}
	var words, chars []string
	for _, line := range strings.Split(dict, "\n") {
		if w, _, ok := strings.Cut(line, " "); ok && allHan(w) {
			words = append(words, w)
			if utf8.RuneCountInString(w) == 1 {
				chars = append(chars, w)
			}
		}
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for range 3000 {
		var b strings.Builder
		for range 1 + rng.IntN(8) {
			if rng.IntN(3) == 0 {
				b.WriteString(chars[rng.IntN(len(chars))])
			} else {
				b.WriteString(words[rng.IntN(len(words))])
			}
		}
		runs = append(runs, b.String())
	}
	// Long runs take the allocating path.
	runs = append(runs, strings.Repeat("天气预报数据可视化", 12))
	if len(runs) < 3500 {
		t.Fatalf("only %d runs", len(runs))
	}
	bad := 0
	for _, run := range runs {
		var got []string
		ours.cut(run, func(w string) { got = append(got, w) })
		if want := ref.CutSearch(run, false); !reflect.DeepEqual(got, want) {
			if bad++; bad <= 10 {
				t.Errorf("%s: got %q, gse %q", run, got, want)
			}
		}
	}
	if bad > 0 {
		t.Errorf("%d of %d runs differ", bad, len(runs))
	}
}

// TestDictMatchesGse: the dictionary holds the words gse holds, with gse's
// total frequency, including words with letters and repeated lines.
func TestDictMatchesGse(t *testing.T) {
	text := "天气 100 n\n天气 5 n\n卡拉OK 30 n\n卡拉ok 7 n\n天 3 n\n坏行\n坏 x n\n低 1\n预报 0.5 n\n天气预报 40\r\n"
	dict, unknown := buildDict(text)
	var ref gse.Segmenter
	ref.SkipLog, ref.NotLoadHMM = true, true
	if err := ref.LoadDictStr(text); err != nil {
		t.Fatal(err)
	}
	if want := -math.Log(ref.Dict.TotalFreq()); unknown != want {
		t.Errorf("unknown weight %v, want %v", unknown, want)
	}
	for _, w := range []string{"天气", "天", "天气预报"} {
		freq, _, ok := ref.Find(w)
		if !ok || freq == 0 {
			t.Fatalf("gse lacks %q", w)
		}
		if got, _ := dict.find(w); got != math.Log(freq)-math.Log(ref.Dict.TotalFreq()) {
			t.Errorf("%s: weight %v, want %v", w, got, math.Log(freq)-math.Log(ref.Dict.TotalFreq()))
		}
	}
	for _, p := range []string{"卡", "卡拉", "天气预"} {
		if v, ok := dict.find(p); !ok || v != notWord {
			t.Errorf("prefix %q: %v %v", p, v, ok)
		}
	}
	for _, w := range []string{"预报", "坏", "坏行", "低"} {
		if _, ok := dict.find(w); ok {
			t.Errorf("%q should have been skipped", w)
		}
	}
}

func TestSortWords(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 200 {
		n := rng.IntN(40)
		var ws []dictWord
		for range n {
			ws = append(ws, dictWord{text: string(rune('甲' + rng.IntN(6))), weight: float64(rng.IntN(3))})
		}
		head := rng.IntN(n + 1)
		slices.SortFunc(ws[:head], func(a, b dictWord) int { return strings.Compare(a.text, b.text) })
		got := sortWords(slices.Clone(ws))
		want := slices.Clone(ws)
		slices.SortStableFunc(want, func(a, b dictWord) int { return strings.Compare(a.text, b.text) })
		same := len(got) == len(want)
		for i := 0; same && i < len(got); i++ {
			same = got[i].text == want[i].text
		}
		if !same {
			t.Fatalf("sortWords(%v) = %v", ws, got)
		}
	}
}
