package evalrun

import (
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/tokens"
	"github.com/toolshed/toolshed/search"
)

// CandidateReport measures the list tool_search sends a selection model
// (search.Index.FitCandidates within a token budget), over the queries whose
// keyword top 5 holds no correct tool: the ones HYBRID exists for.
type CandidateReport struct {
	Budget  int `json:"budget_tokens"`
	Queries int `json:"queries"` // queries whose keyword top 5 misses
	// Recall is the share of those queries with a correct tool in the list.
	Recall float64 `json:"recall"`
	// RecallAll is the share of all the queries with a correct tool in
	// the list (All is their number).
	RecallAll float64 `json:"recall_all"`
	All       int     `json:"all"`
	// MeanTools, MeanLines and MeanTokens are the list's mean size (tools
	// sharing a first sentence share a line); MeanFull is how many of its
	// lines are full (the others short).
	MeanTools  float64 `json:"mean_tools"`
	MeanLines  float64 `json:"mean_lines"`
	MeanFull   float64 `json:"mean_full_lines"`
	MeanTokens float64 `json:"mean_tokens"`
}

// Candidates runs the queries against ix and measures the candidate lists
// of at most maxTools tools and budget tokens as tool_search builds them
// (search.Index.FitCandidates): over the queries keyword search misses,
// and over all of them. semantic, when not nil, is the semantic stage: a
// query's tools, nearest first.
func Candidates(ix *search.Index, tools []manifest.Tool, queries []Query, maxTools, budget int, semantic func(q string) ([]string, error)) (CandidateReport, error) {
	desc := make(map[string]string, len(tools))
	for _, t := range tools {
		desc[t.Name] = t.Description
	}
	describe := func(name string) (string, bool) {
		d, ok := desc[name]
		return d, ok
	}
	cost := map[string]int{} // a line's tokens
	count := func(line string) (int, error) {
		n, ok := cost[line]
		if !ok {
			var err error
			if n, err = tokens.Count(line); err != nil {
				return 0, err
			}
			cost[line] = n
		}
		return n, nil
	}
	r := CandidateReport{Budget: budget, All: len(queries)}
	for _, q := range queries {
		want := map[string]bool{}
		for _, t := range q.Tools {
			want[t] = true
		}
		missed := !hit(Toolshed{Index: ix}.Top(q.Query, 5), want)
		if missed {
			r.Queries++
		}
		var near []string
		if semantic != nil {
			var err error
			if near, err = semantic(q.Query); err != nil {
				return r, err
			}
		}
		l, err := ix.FitCandidates(q.Query, near, maxTools, budget, describe, count)
		if err != nil {
			return r, err
		}
		in := hit(l.Names, want)
		if in {
			r.RecallAll++
		}
		if !missed {
			continue
		}
		if in {
			r.Recall++
		}
		r.MeanTools += float64(len(l.Names))
		r.MeanLines += float64(l.Lines)
		r.MeanFull += float64(l.Full)
		r.MeanTokens += float64(l.Tokens)
	}
	if r.Queries > 0 {
		n := float64(r.Queries)
		r.Recall, r.MeanTools, r.MeanLines, r.MeanFull, r.MeanTokens = round(r.Recall/n), round(r.MeanTools/n), round(r.MeanLines/n), round(r.MeanFull/n), round(r.MeanTokens/n)
	}
	if r.All > 0 {
		r.RecallAll = round(r.RecallAll / float64(r.All))
	}
	return r, nil
}

func hit(got []string, want map[string]bool) bool {
	for _, g := range got {
		if want[g] {
			return true
		}
	}
	return false
}
