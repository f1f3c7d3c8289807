package evalrun

import (
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/tokens"
	"github.com/toolshed/toolshed/search"
)

// CandidateReport measures the list tool_search sends a selection model
// (search.Index.Candidates within a token budget), over the queries whose
// keyword top 5 holds no correct tool: the ones HYBRID exists for.
type CandidateReport struct {
	Budget  int `json:"budget_tokens"`
	Queries int `json:"queries"` // queries whose keyword top 5 misses
	// Recall is the share of those queries with a correct tool in the list.
	Recall float64 `json:"recall"`
	// MeanTools and MeanTokens are the list's mean size.
	MeanTools  float64 `json:"mean_tools"`
	MeanTokens float64 `json:"mean_tokens"`
}

// Candidates runs the queries against ix and measures the candidate lists
// of at most maxTools tools and budget tokens, each tool a
// search.CandidateLine as tool_search writes it.
func Candidates(ix *search.Index, tools []manifest.Tool, queries []Query, maxTools, budget int) (CandidateReport, error) {
	desc := make(map[string]string, len(tools))
	for _, t := range tools {
		desc[t.Name] = t.Description
	}
	r := CandidateReport{Budget: budget}
	for _, q := range queries {
		want := map[string]bool{}
		for _, t := range q.Tools {
			want[t] = true
		}
		if hit(Toolshed{Index: ix}.Top(q.Query, 5), want) {
			continue
		}
		r.Queries++
		var list []string
		used := 0
		var err error
		ix.Candidates(q.Query, func(name string) bool {
			n, e := tokens.Count(search.CandidateLine(name, desc[name]))
			if e != nil {
				err = e
				return false
			}
			if len(list) >= maxTools || used+n > budget {
				return false
			}
			used += n
			list = append(list, name)
			return true
		})
		if err != nil {
			return r, err
		}
		if hit(list, want) {
			r.Recall++
		}
		r.MeanTools += float64(len(list))
		r.MeanTokens += float64(used)
	}
	if r.Queries > 0 {
		n := float64(r.Queries)
		r.Recall, r.MeanTools, r.MeanTokens = round(r.Recall/n), round(r.MeanTools/n), round(r.MeanTokens/n)
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
