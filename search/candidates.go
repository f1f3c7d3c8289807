package search

import (
	"sort"
	"strings"
)

// CandidateDepth is how many keyword hits lead a candidate list (a list
// is cut at its token budget before, on a large catalog).
const CandidateDepth = 1000

// The bounds of a candidate list by default (tool_search's MaxCandidates
// and CandidateTokens): tools, and o200k_base tokens.
const (
	DefaultCandidateTools  = 1000
	DefaultCandidateTokens = 6000
)

// Candidates lists tools for a language model to choose from, drawn from
// the whole index: first the query's keyword hits (up to CandidateDepth,
// by score, no cut and no diversified top), taken in turn with the tools
// of semantic (a ranking from a semantic stage, nearest first; nil when
// there is none), then every other tool, taking one tool from each plugin
// in turn (plugins by name, tools in index order), so that a list cut
// short still shows every group. take is called with each name in that
// order and returns false to stop (when a token budget is spent); a query
// that keyword search cannot match still gets a list. Names of semantic
// the index does not hold are skipped. The order is deterministic.
func (ix *Index) Candidates(q string, semantic []string, take func(name string) bool) {
	seen := make([]bool, len(ix.docs))
	var hits []int32
	if res, err := ix.search(q, CandidateDepth, false); err == nil {
		for _, h := range res.Hits {
			hits = append(hits, ix.exact[foldName(h.Name)])
		}
	}
	var near []int32
	for _, name := range semantic {
		if d, ok := ix.exact[foldName(name)]; ok && ix.docs[d].name == name {
			near = append(near, d)
		}
	}
	for i := 0; i < len(hits) || i < len(near); i++ {
		for _, from := range [2][]int32{hits, near} {
			if i >= len(from) || seen[from[i]] {
				continue
			}
			seen[from[i]] = true
			if !take(ix.docs[from[i]].name) {
				return
			}
		}
	}
	groups := map[string][]int32{}
	var plugins []string
	for d := range ix.docs {
		p := ix.docs[d].plugin
		if _, ok := groups[p]; !ok {
			plugins = append(plugins, p)
		}
		if !seen[d] {
			groups[p] = append(groups[p], int32(d))
		}
	}
	sort.Strings(plugins)
	for more := true; more; {
		more = false
		for _, p := range plugins {
			g := groups[p]
			if len(g) == 0 {
				continue
			}
			more = true
			groups[p] = g[1:]
			if !take(ix.docs[g[0]].name) {
				return
			}
		}
	}
}

// CandidateLine is one tool as a selection model reads it in a candidate
// list: "name: first sentence of the description\n" (a list's tail may
// get CandidateShortLine instead: FitCandidates).
func CandidateLine(name, description string) string {
	return name + ": " + FirstSentence(description) + "\n"
}

// FirstSentence is a description's first sentence, at most 160 runes.
func FirstSentence(s string) string {
	s = strings.TrimSpace(s)
	for _, sep := range []string{". ", "。", "\n"} {
		if i := strings.Index(s, sep); i > 0 {
			s = s[:i+len(strings.TrimSpace(sep))]
			break
		}
	}
	if r := []rune(s); len(r) > 160 {
		s = string(r[:159]) + "…"
	}
	return s
}
