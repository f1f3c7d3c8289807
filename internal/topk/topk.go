// Package topk keeps the best k items of a stream in order.
package topk

import "sort"

// Insert adds d to best, a slice of at most k items sorted by less (best
// first), and returns the slice: d is dropped when k items are held and
// none is worse than it.
func Insert[T any](best []T, d T, k int, less func(a, b T) bool) []T {
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
