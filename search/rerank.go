package search

import (
	"math"
	"sort"
	"strings"
	"unicode"
)

// A learned re-rank of the top of a ranking.
//
// BM25F scores each query term on its own. What it cannot see is how a
// tool matches the request as a whole: whether it covers the request's
// rare words or only its common ones, whether its name is made of the
// request's words or carries words the request never used (a variant, a
// combination of two tools), whether its score rests on one word. The
// re-rank computes a handful of such features for the best
// Weights.RerankDepth tools and multiplies each one's score by
// exp(Σ Rerank[i]·feature[i]); the weights are fitted on the tuning halves
// of the evaluation sets (docs/SEARCH.md) and are all zero by default
// unless they earned their place there. Every feature is a ratio within
// the query or the tool, so the same weights mean the same thing for a
// catalog of a hundred tools and of a hundred thousand.

// The features.
const (
	// ftCover: the share of the query's own terms, weighted by IDF, that
	// the tool matched.
	ftCover = iota
	// ftNameCover: the share of the tool name's terms that are terms of
	// the query.
	ftNameCover
	// ftNameHit: the share of the query's own terms, weighted by IDF,
	// found in the tool's name.
	ftNameHit
	// ftLength: log of the tool's length in terms over the mean length.
	ftLength
	// ftExpanded: the share of the score that expansions gave.
	ftExpanded
	// ftPeak: the share of the score that the tool's best term gave.
	ftPeak
	// ftNameBehind: the tool's name cover less the best name cover among
	// the candidates whose names match one of the query words its own
	// name matches (0 for the best of such a group, or a name matching
	// none): a copy that adds words to a name the request spelt out falls
	// behind that name, and a tool whose name shares no word with the
	// request keeps its place.
	ftNameBehind
	// NumFeatures is the number of re-rank features (Weights.Rerank).
	NumFeatures
)

// FeatureNames name the re-rank features, in Weights.Rerank's order.
var FeatureNames = [NumFeatures]string{"cover", "name_cover", "name_hit", "length", "expanded", "peak", "name_behind"}

// features computes the re-rank features of the candidates top for the
// query terms qs (score and mask as accumulated by search). out must hold
// len(top) rows. With all false, a feature whose weight is 0 may be left
// 0 (those that read the postings or the IDFs are).
func (ix *Index) features(top []int32, qs []queryTerm, score []float32, mask []uint32, sc *scratch, out [][NumFeatures]float32, all bool) {
	w := &ix.rerankW
	postings := all || w[ftCover] != 0 || w[ftExpanded] != 0 || w[ftPeak] != 0
	idfs := postings || w[ftNameHit] != 0
	postingTerms := 0 // how many of qs the per-candidate postings loop reads
	if postings {
		postingTerms = len(qs)
	}
	n := float64(len(ix.docs))
	// Each query term's IDF, once; the query's own terms marked on their
	// term ids (slot is all zero on entry and is left so).
	idf := sc.idf[:0]
	var ownIDF float32
	slot := sc.slot
	for qi, t := range qs {
		v := float32(1)
		if idfs {
			df := float64(ix.start[t.id+1] - ix.start[t.id])
			v = float32(math.Log(1 + (n-df+0.5)/(df+0.5)))
		}
		idf = append(idf, v)
		if t.source == "" {
			ownIDF += v
			slot[t.id] = int32(qi + 1)
		}
	}
	sc.idf = idf
	defer func() {
		for _, t := range qs {
			slot[t.id] = 0
		}
	}()
	if ownIDF == 0 {
		ownIDF = 1
	}
	for i, d := range top {
		f := &out[i]
		*f = [NumFeatures]float32{}
		raw := score[d]
		var cover, expanded, peak float32
		for qi, t := range qs[:postingTerms] {
			if qi >= maskTerms || mask[d]&(1<<uint(qi)) == 0 {
				continue
			}
			c := t.weight * ix.postingWeight(t.id, d)
			peak = max(peak, c)
			if t.source == "" {
				cover += idf[qi]
			} else {
				expanded += c
			}
		}
		f[ftCover] = cover / ownIDF
		if raw > 0 {
			f[ftExpanded] = expanded / raw
			f[ftPeak] = peak / raw
		}
		names := ix.nameTerms[ix.nameStart[d]:ix.nameStart[d+1]]
		var inQuery int
		var nameIDF float32
		for j, t := range names {
			if k := slot[t]; k > 0 {
				inQuery++
				if !containsTerm(names[:j], t) { // a name word twice counts once
					nameIDF += idf[k-1]
				}
			}
		}
		if len(names) > 0 {
			f[ftNameCover] = float32(inQuery) / float32(len(names))
		}
		f[ftNameHit] = nameIDF / ownIDF
		if all || w[ftLength] != 0 {
			f[ftLength] = float32(math.Log(float64(ix.docLen[d]+1) / (ix.avgLen + 1)))
		}
	}
	if all || w[ftNameBehind] != 0 {
		ix.nameBehind(top, qs, slot, sc, out)
	}
}

// nameBehind sets ftNameBehind (see there); slot marks the query's own
// terms (slot[t] is 1 + t's place in qs). Per query term, the best cover
// among the candidates whose names match it; then per candidate, the best
// over its matched terms: linear in the candidates.
func (ix *Index) nameBehind(top []int32, qs []queryTerm, slot []int32, sc *scratch, out [][NumFeatures]float32) {
	best := sc.best[:0]
	for range qs {
		best = append(best, 0)
	}
	sc.best = best
	for i, d := range top {
		c := out[i][ftNameCover]
		for _, t := range ix.nameTerms[ix.nameStart[d]:ix.nameStart[d+1]] {
			if k := slot[t]; k > 0 {
				best[k-1] = max(best[k-1], c)
			}
		}
	}
	for i, d := range top {
		c := out[i][ftNameCover]
		b := c
		for _, t := range ix.nameTerms[ix.nameStart[d]:ix.nameStart[d+1]] {
			if k := slot[t]; k > 0 {
				b = max(b, best[k-1])
			}
		}
		out[i][ftNameBehind] = c - b
	}
}

// nameWords spells a tool name as words: "getWeather_v2" → "get Weather v2".
func nameWords(name string) string {
	var b strings.Builder
	prev := rune(0)
	for _, r := range name {
		switch {
		case r == '_' || r == '-' || r == '.' || r == '/':
			r = ' '
		case unicode.IsUpper(r) && (unicode.IsLower(prev) || unicode.IsDigit(prev)):
			b.WriteByte(' ')
		}
		b.WriteRune(r)
		prev = r
	}
	return b.String()
}

func containsTerm(ts []int32, t int32) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// rerank re-orders top (best first by score; the exact-name match, if
// any, first) by the learned model and rewrites the candidates' scores in
// score with the model's, so that what follows (the diversified top, the
// hits' scores) works on them. sc.mult is left holding each returned
// candidate's multiplier, in the returned order.
func (ix *Index) rerank(top []int32, qs []queryTerm, score []float32, mask []uint32, exactFirst bool, sc *scratch) []int32 {
	if cap(sc.feat) < len(top) {
		sc.feat = make([][NumFeatures]float32, len(top))
	}
	feat := sc.feat[:len(top)]
	ix.features(top, qs, score, mask, sc, feat, false)
	cs := sc.cands[:0]
	for range top {
		cs = append(cs, rerankCand{})
	}
	sc.cands = cs
	for i, d := range top {
		var z float32
		for k, w := range ix.rerankW {
			z += w * feat[i][k]
		}
		m := float32(math.Exp(float64(z)))
		score[d] *= m
		cs[i] = rerankCand{d, m}
	}
	rest := cs
	if exactFirst && len(cs) > 0 {
		rest = cs[1:]
	}
	sort.SliceStable(rest, func(i, j int) bool {
		a, b := rest[i].d, rest[j].d
		if score[a] != score[b] {
			return score[a] > score[b]
		}
		return ix.docs[a].name < ix.docs[b].name
	})
	sc.mult = sc.mult[:0]
	for i, c := range cs {
		top[i] = c.d
		sc.mult = append(sc.mult, c.mult)
	}
	return top
}

type rerankCand struct {
	d    int32
	mult float32
}

// candidateFeatures is the re-rank's input for one query, for fitting its
// weights: the best depth tools by score (the exact-name match first),
// their scores and features. The index must have been built with a
// re-rank weight or depth set (nothing is returned otherwise).
func (ix *Index) candidateFeatures(query string, depth int) (names []string, scores []float64, feats [][NumFeatures]float32, exactFirst bool) {
	if !ix.hasFeatures {
		return nil, nil, nil, false // built without the re-rank's data
	}
	q := strings.TrimSpace(query)
	sc := ix.scratch.Get().(*scratch) // back to the pool by put; dropped on a panic
	qs, exact, hasExact := ix.accumulate(q, sc)
	if len(qs) == 0 && !hasExact {
		ix.put(sc)
		return nil, nil, nil, false
	}
	top := ix.topK(sc.score, depth, exact, hasExact, sc)
	feats = make([][NumFeatures]float32, len(top))
	ix.features(top, qs, sc.score, sc.mask, sc, feats, true)
	for _, d := range top {
		names = append(names, ix.docs[d].name)
		scores = append(scores, float64(sc.score[d]))
	}
	ix.put(sc)
	return names, scores, feats, hasExact
}
