package evalrun

import (
	"math"
	"strings"
	"unicode"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/topk"
)

// Baseline is the naive reference: plain BM25 (k1 1.2, b 0.75) over one
// field, name + description, lowercased and cut at whitespace and
// punctuation and at lower-to-upper case changes (so a camelCase name
// yields its words), every Chinese character a token of its own. No
// stemming, no stop words, no field weights, no expansion.
type Baseline struct {
	names    []string
	postings map[string][]bpost
	idf      map[string]float64
}

type bpost struct {
	doc int
	w   float64
}

func baselineTokens(s string) []string {
	var out []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			out = append(out, cur.String())
			cur.Reset()
		}
	}
	prevLower := false
	for _, r := range s {
		if unicode.IsUpper(r) && prevLower {
			flush()
		}
		prevLower = unicode.IsLower(r)
		r = unicode.ToLower(r)
		switch {
		case unicode.Is(unicode.Han, r):
			flush()
			out = append(out, string(r))
		case unicode.IsLetter(r) || unicode.IsNumber(r):
			cur.WriteRune(r)
		default:
			flush()
		}
	}
	flush()
	return out
}

// BuildBaseline indexes tools for the baseline.
func BuildBaseline(tools []manifest.Tool) (Searcher, error) {
	const k1, b = 1.2, 0.75
	bl := &Baseline{postings: map[string][]bpost{}, idf: map[string]float64{}}
	tfs := make([]map[string]int, len(tools))
	lens := make([]int, len(tools))
	total := 0
	df := map[string]int{}
	for i, t := range tools {
		bl.names = append(bl.names, t.Name)
		tfs[i] = map[string]int{}
		for _, tok := range baselineTokens(t.Name + " " + t.Description) {
			if tfs[i][tok] == 0 {
				df[tok]++
			}
			tfs[i][tok]++
			lens[i]++
		}
		total += lens[i]
	}
	n := float64(len(tools))
	avg := float64(total) / math.Max(n, 1)
	for term, d := range df {
		bl.idf[term] = math.Log(1 + (n-float64(d)+0.5)/(float64(d)+0.5))
	}
	for i, m := range tfs {
		for term, tf := range m {
			f := float64(tf)
			w := bl.idf[term] * f * (k1 + 1) / (f + k1*(1-b+b*float64(lens[i])/avg))
			bl.postings[term] = append(bl.postings[term], bpost{i, w})
		}
	}
	return bl, nil
}

// Top returns the names of the best k tools: score descending, then name.
func (bl *Baseline) Top(q string, k int) []string {
	score := make([]float64, len(bl.names))
	var touched []int
	for _, tok := range baselineTokens(q) {
		for _, p := range bl.postings[tok] {
			if score[p.doc] == 0 {
				touched = append(touched, p.doc)
			}
			score[p.doc] += p.w
		}
	}
	better := func(a, b int) bool {
		if score[a] != score[b] {
			return score[a] > score[b]
		}
		return bl.names[a] < bl.names[b]
	}
	var best []int
	for _, d := range touched {
		best = topk.Insert(best, d, k, better)
	}
	out := make([]string, len(best))
	for i, d := range best {
		out[i] = bl.names[d]
	}
	return out
}
