package main

import (
	"math"
	"sort"
	"strings"
	"unicode"

	"github.com/toolshed/toolshed/host/manifest"
)

// The naive BM25 baseline of `toolshed eval --baseline` (docs/SEARCH.md):
// plain BM25 (k1 1.2, b 0.75) over one field, name + description,
// lowercased and cut at whitespace, punctuation and lower-to-upper case
// changes, every Chinese character a token. No stemming, stop words, field
// weights or expansion. The main module keeps it internal
// (internal/evalrun), so this is a copy of the same rules; its figures
// match `toolshed eval --baseline` on the same data.

func baselineEngine() engineSpec {
	return engineSpec{"naive BM25", func(tools []manifest.Tool, _ bool) (engine, error) {
		return buildBaseline(tools), nil
	}}
}

type baseline struct {
	names    []string
	postings map[string][]bpost
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

func buildBaseline(tools []manifest.Tool) *baseline {
	const k1, b = 1.2, 0.75
	bl := &baseline{postings: map[string][]bpost{}}
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
	for i, m := range tfs {
		for term, tf := range m {
			idf := math.Log(1 + (n-float64(df[term])+0.5)/(float64(df[term])+0.5))
			f := float64(tf)
			w := idf * f * (k1 + 1) / (f + k1*(1-b+b*float64(lens[i])/avg))
			bl.postings[term] = append(bl.postings[term], bpost{i, w})
		}
	}
	return bl
}

// top returns the best k tools: score descending, then name.
func (bl *baseline) top(q string, k int) []string {
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
		best = insertTop(best, d, k, better)
	}
	out := make([]string, len(best))
	for i, d := range best {
		out[i] = bl.names[d]
	}
	return out
}

// insertTop adds d to best, at most k items sorted by less (best first).
func insertTop[T any](best []T, d T, k int, less func(a, b T) bool) []T {
	if len(best) == k && !less(d, best[k-1]) {
		return best
	}
	i := sort.Search(len(best), func(i int) bool { return less(d, best[i]) })
	var zero T
	best = append(best, zero)
	copy(best[i+1:], best[i:])
	best[i] = d
	if len(best) > k {
		best = best[:k]
	}
	return best
}
