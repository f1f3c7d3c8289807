package search

// CandidateFeatures exposes the re-rank's input to the tests that fit its
// weights (rerank_fit_test.go).
func CandidateFeatures(ix *Index, query string, depth int) ([]string, []float64, [][NumFeatures]float32, bool) {
	return ix.candidateFeatures(query, depth)
}
