package search

import (
	"cmp"
	"slices"
)

// Diversifying the top of a ranking.
//
// A request often asks for several things at once ("get the quote, then
// create an administrator, then …"), and a catalog often holds several
// tools that match one of those things equally well (near-duplicates,
// variants, a family of tools sharing their words). Plain BM25 fills the
// top k with that family and pushes the tools for the request's other
// parts out. The re-rank below is greedy: each next hit is the candidate
// with the most score once the query terms already matched by the hits
// above it count for less (Weights.Overlap per earlier hit that matched
// them). A tool matching the parts of the request nothing above covers
// rises; a second copy of the first hit falls.

// diversify re-orders top (best first by raw score; the exact-name match,
// if any, first) and keeps at most k. qs are the query's terms; mask the
// per-document bit set of the terms matched (the first maskTerms);
// score the scores; scale, when not nil, what the re-rank multiplied each
// candidate's score by (its term contributions are scaled alike).
func (ix *Index) diversify(top []int32, scale []float32, qs []queryTerm, score []float32, mask []uint32, k int, exactFirst bool, sc *scratch) []int32 {
	if len(top) <= 1 || k <= 1 {
		return top[:min(k, len(top))]
	}
	// Only the terms some candidate matched take part (an expanded query
	// has many that match none of them): act lists them, and contrib is
	// kept per candidate over act alone.
	var union uint32
	for _, d := range top {
		union |= mask[d]
	}
	var act [maskTerms]int8
	n := 0
	for qi := 0; qi < min(len(qs), maskTerms); qi++ {
		if union&(1<<uint(qi)) != 0 {
			act[n] = int8(qi)
			n++
		}
	}
	// Each candidate's contribution per matched query term (the rest of
	// its score is never discounted).
	m := len(top)
	contrib := sc.contrib[:0]
	for range m * n {
		contrib = append(contrib, 0)
	}
	// The candidates in document order, so that each term's postings
	// (also in document order) are walked once, forward.
	order := sc.order[:0]
	for i := range top {
		order = append(order, int32(i))
	}
	slices.SortFunc(order, func(a, b int32) int { return cmp.Compare(top[a], top[b]) })
	sc.order = order
	for j, qi := range act[:n] {
		t, bit := qs[qi].id, uint32(1)<<uint(qi)
		at, end := ix.start[t], ix.start[t+1]
		for _, i := range order {
			d := top[i]
			if mask[d]&bit == 0 {
				continue
			}
			at = ix.seek(at, end, d) // d is there: the mask says it matched t
			if at == end || ix.pDoc[at] != d {
				continue // (were the mask ever out of step, no weight rather than another's)
			}
			c := qs[qi].weight * ix.pW[at]
			if scale != nil {
				c *= scale[i]
			}
			contrib[int(i)*n+j] = c
		}
	}
	sc.contrib = contrib
	// key is a candidate's score with the covered terms discounted; novel
	// what the terms no hit above matched give it. Both are updated as
	// hits are taken, term by term.
	key, novel := sc.key[:0], sc.novel[:0]
	for i, d := range top {
		var nv float32
		for _, c := range contrib[i*n : (i+1)*n] {
			nv += c
		}
		key, novel = append(key, score[d]), append(novel, nv)
	}
	sc.key, sc.novel = key, novel
	var mult, seen [maskTerms]float32 // seen: how many hits above matched the term
	for i := range mult {
		mult[i] = 1
	}
	free, gamma := float32(ix.siblings), ix.overlap
	used := sc.used[:0]
	for range top {
		used = append(used, false)
	}
	sc.used = used
	out := top[:0:0]
	// A candidate is a new intent when the terms no hit above matched give
	// it at least Weights.Novel of the best raw score; only new intents
	// move up. The others keep their raw order, so a request for one thing
	// whose tools share its words is ranked as before.
	novelMin := ix.novel * score[top[0]]
	for len(out) < k {
		best := -1
		if exactFirst && len(out) == 0 {
			best = 0 // the exact-name match stays first
		} else {
			redundant, fresh := -1, -1
			for i := 0; i < m; i++ {
				if used[i] {
					continue
				}
				if novel[i] >= novelMin {
					if fresh < 0 || key[i] > key[fresh] { // ties keep the raw order
						fresh = i
					}
				} else if redundant < 0 {
					redundant = i // the best by raw score
				}
			}
			best = redundant
			if fresh >= 0 && (redundant < 0 || key[fresh] > key[redundant]) {
				best = fresh
			}
		}
		if best < 0 {
			break
		}
		used[best] = true
		out = append(out, top[best])
		for qi, c := range contrib[best*n : (best+1)*n] {
			if c == 0 {
				continue
			}
			first := seen[qi] == 0
			seen[qi]++
			drop := float32(0)
			if seen[qi] >= free {
				drop = mult[qi] * (1 - gamma)
				mult[qi] -= drop
			}
			for i := 0; i < m; i++ {
				ci := contrib[i*n+qi]
				if first {
					novel[i] -= ci
				}
				key[i] -= ci * drop
			}
		}
	}
	return out
}

// seek returns the first place in pDoc[at:end] (in document order) that
// holds document d or a later one: a galloping search forward from at.
func (ix *Index) seek(at, end, d int32) int32 {
	step := int32(1)
	lo := at
	for at < end && ix.pDoc[at] < d {
		lo = at + 1
		at += step
		step <<= 1
	}
	hi := min(at+1, end)
	for lo < hi {
		m := int32(uint32(lo+hi) >> 1)
		if ix.pDoc[m] < d {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// postingWeight is term t's weight in document d (0 if d lacks it).
func (ix *Index) postingWeight(t, d int32) float32 {
	end := ix.start[t+1]
	if at := ix.seek(ix.start[t], end, d); at < end && ix.pDoc[at] == d {
		return ix.pW[at]
	}
	return 0
}
