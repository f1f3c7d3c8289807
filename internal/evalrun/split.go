package evalrun

import (
	"hash/fnv"
	"strings"
)

// Half names one of the two fixed halves of a labelled set.
type Half string

const (
	// Tune is the half that weights, features and thresholds are chosen
	// on.
	Tune Half = "tune"
	// Test is the half that figures are reported on. Nothing is chosen on
	// it.
	Test Half = "test"
	// All is both halves.
	All Half = "all"
)

// ParseHalf reads a half's name ("tune", "test" or "all"; "" is all).
func ParseHalf(s string) (Half, bool) {
	switch Half(s) {
	case Tune, Test:
		return Half(s), true
	case All, "":
		return All, true
	}
	return "", false
}

// HalfOf says which half a request belongs to. The split is fixed by the
// request's own text, so it does not depend on the order of a file, on
// which other requests it holds, or on the catalog: the 64-bit FNV-1a hash
// of the request with surrounding white space removed; an even hash is
// the tuning half, an odd one the test half. The same request lands in
// the same half in every set and every run.
func HalfOf(query string) Half {
	h := fnv.New64a()
	h.Write([]byte(strings.TrimSpace(query)))
	if h.Sum64()%2 == 0 {
		return Tune
	}
	return Test
}

// Split keeps the queries of one half (every query for All), in their
// order.
func Split(qs []Query, half Half) []Query {
	if half == All || half == "" {
		return qs
	}
	var out []Query
	for _, q := range qs {
		if HalfOf(q.Query) == half {
			out = append(out, q)
		}
	}
	return out
}
