package search

// DefaultCut is the relevance cut tool_search applies when the model does
// not ask for a number of tools: hits scoring under this share of the best
// hit's score are dropped (docs/SEARCH.md, "The relevance cut").
const DefaultCut = 0.2

// Cut keeps the hits that fit: the first (the best by score, or the exact
// name match) and every hit scoring at least ratio × the best score, in
// their order. Hits of a "select:" query (no score) are all kept. ratio 0
// or less keeps everything. The returned slice shares hits' array.
func Cut(hits []Hit, ratio float64) []Hit {
	if ratio <= 0 || len(hits) <= 1 {
		return hits
	}
	best := 0.0
	for _, h := range hits {
		best = max(best, h.Score)
	}
	if best == 0 {
		return hits
	}
	out := hits[:1]
	for _, h := range hits[1:] {
		if h.Score >= ratio*best {
			out = append(out, h)
		}
	}
	return out
}
