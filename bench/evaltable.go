package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/evalrun"
	"github.com/toolshed/toolshed/search"
)

// The evaluation table (`make eval`): every labelled set, at its own size
// and over catalogs padded to larger sizes, Toolshed beside bleve and the
// naive BM25 in one run, on one half of each set's requests (the test
// half unless told otherwise; docs/SEARCH.md, "The protocol").

// evalOptions say what the table measures.
type evalOptions struct {
	dirs    []string // folders whose subfolders hold tools.jsonl + queries.jsonl
	zhDir   string   // the Chinese set
	half    evalrun.Half
	sizes   []int // padded catalog sizes (English sets)
	shapes  []evalrun.Shape
	native  int // at most this many requests per set at its own size (0: all)
	padded  int // at most this many per set on a padded catalog
	weights *search.Weights
	sets    map[string]bool // only these sets (nil: all)
	engines map[string]bool // only these engines (nil: all)
	// embedder, when set, adds the semantic stage to the candidate list
	// (English sets; -embed): the CandSem columns.
	embedder *diskEmbedder
}

// evalSet is one labelled set.
type evalSet struct {
	*dataset
	Dir string
}

// loadEvalSets reads every set under the folders, sorted by name; the
// Chinese set last. -sets does not filter them: every set pads the
// others' catalogs, so a set measured alone is padded as in a full run.
func loadEvalSets(o evalOptions, log func(string)) ([]evalSet, error) {
	var sets []evalSet
	seen := map[string]bool{}
	for _, root := range o.dirs {
		ents, err := os.ReadDir(root)
		if err != nil {
			log(fmt.Sprintf("eval: %s: %v (skipped)", root, err))
			continue
		}
		for _, e := range ents {
			dir := filepath.Join(root, e.Name())
			if !e.IsDir() || seen[e.Name()] {
				continue
			}
			if _, err := os.Stat(filepath.Join(dir, "tools.jsonl")); err != nil {
				continue
			}
			d, err := readDataset(e.Name(), dir, false)
			if err != nil {
				return nil, err
			}
			d.Chinese = evalrun.MostlyChinese(d.Queries)
			seen[e.Name()] = true
			sets = append(sets, evalSet{d, dir})
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
	if o.zhDir != "" {
		d, err := readDataset("zh-eval", o.zhDir, true)
		if err != nil {
			return nil, err
		}
		sets = append(sets, evalSet{d, o.zhDir})
	}
	return sets, nil
}

// padPool is what a set's catalog is padded with (evalrun.PadPool).
func padPool(s evalSet, sets []evalSet) []manifest.Tool {
	others := make([]evalrun.NamedSet, len(sets))
	for i, o := range sets {
		others[i] = *o.dataset
	}
	return evalrun.PadPool(s.Name, s.Queries, others)
}

// evalRow is one set at one catalog size.
type evalRow struct {
	Set     string
	Tools   int
	Shape   string // "" at the set's own size
	Queries int
	Recall5 map[string]float64 // by engine
	P50     map[string]time.Duration
	// Cand is Toolshed's candidate list for the selection model at
	// tool_search's defaults (6,000 tokens, 1,000 tools): the share of the
	// requests with a correct tool in it, over all and over those whose
	// keyword top 5 holds none (CandMissed of them); over those, the
	// list's mean size in tools and in lines, and how many lines are full.
	Cand, CandMiss                 float64
	CandMissed                     int
	CandTools, CandLines, CandFull float64
	// CandSem and CandSemMiss are Cand and CandMiss with the semantic
	// stage (-embed; -1 when not measured).
	CandSem, CandSemMiss float64
}

var evalEngineOrder = []string{"Toolshed", "bleve", "naive BM25"}

func evalEngines(o evalOptions) []engineSpec {
	ts := engineSpec{"Toolshed", func(tools []manifest.Tool, _ bool) (engine, error) {
		s, err := evalrun.BuildToolshed(tools, &search.Config{Weights: o.weights})
		if err != nil {
			return nil, err
		}
		return searcher{s}, nil
	}}
	all := []engineSpec{ts, bleve3Engine(), baselineEngine()}
	all[2].name = "naive BM25"
	var out []engineSpec
	for _, e := range all {
		if o.engines == nil || o.engines[e.name] {
			out = append(out, e)
		}
	}
	return out
}

// evalTable measures every set at its own size and, for English sets, over
// catalogs padded with the other sets' real tools and distractors.
func evalTable(o evalOptions, log func(string)) ([]evalRow, error) {
	sets, err := loadEvalSets(o, log)
	if err != nil {
		return nil, err
	}
	if len(sets) == 0 {
		return nil, fmt.Errorf("no evaluation sets found in %s", strings.Join(o.dirs, ", "))
	}
	for name := range o.sets {
		if !slices.ContainsFunc(sets, func(s evalSet) bool { return s.Name == name }) {
			return nil, fmt.Errorf("-sets: no set %q", name)
		}
	}
	engines := evalEngines(o)
	var rows []evalRow
	for _, s := range sets {
		if o.sets != nil && !o.sets[s.Name] {
			continue
		}
		pool := padPool(s, sets)
		qs := evalrun.Split(s.Queries, o.half)
		type cat struct {
			tools []manifest.Tool
			shape string
			cap   int
		}
		cats := []cat{{s.Tools, "", o.native}}
		if !s.Chinese {
			for _, n := range o.sizes {
				if n <= len(s.Tools) {
					continue
				}
				for _, sh := range o.shapes {
					cats = append(cats, cat{evalrun.Pad(s.Tools, pool, n, sh), sh.String(), o.padded})
				}
			}
		}
		for _, c := range cats {
			q := sample(qs, c.cap)
			row := evalRow{Set: s.Name, Tools: len(c.tools), Shape: c.shape, Queries: len(q), Recall5: map[string]float64{}, P50: map[string]time.Duration{}}
			row.Cand, row.CandSem, row.CandSemMiss = -1, -1, -1
			for _, e := range engines {
				m, built, err := measureEngine(e, c.tools, q, s.Chinese)
				if err != nil {
					return nil, fmt.Errorf("%s, %d tools: %w", s.Name, len(c.tools), err)
				}
				row.Recall5[e.name], row.P50[e.name] = m.Recall5, m.P50
				if ts, ok := toolshedIndex(built); ok {
					cr, err := evalrun.Candidates(ts.Index, c.tools, q, search.DefaultCandidateTools, search.DefaultCandidateTokens, nil)
					if err != nil {
						return nil, fmt.Errorf("%s, %d tools: candidates: %w", s.Name, len(c.tools), err)
					}
					row.Cand, row.CandMiss, row.CandMissed = cr.RecallAll, cr.Recall, cr.Queries
					row.CandTools, row.CandLines, row.CandFull = cr.MeanTools, cr.MeanLines, cr.MeanFull
					if o.embedder != nil && !s.Chinese {
						near, err := evalrun.Semantic(context.Background(), o.embedder, c.tools, q)
						if err != nil {
							return nil, fmt.Errorf("%s, %d tools: semantic stage: %w", s.Name, len(c.tools), err)
						}
						cs, err := evalrun.Candidates(ts.Index, c.tools, q, search.DefaultCandidateTools, search.DefaultCandidateTokens, near)
						if err != nil {
							return nil, fmt.Errorf("%s, %d tools: candidates: %w", s.Name, len(c.tools), err)
						}
						row.CandSem, row.CandSemMiss = cs.RecallAll, cs.Recall
						log(fmt.Sprintf("eval: %s, %d tools: candidate share %.4f → %.4f with the semantic stage (keyword misses %.4f → %.4f of %d)", s.Name, row.Tools, cr.RecallAll, cs.RecallAll, cr.Recall, cs.Recall, cr.Queries))
					}
				}
			}
			log(fmt.Sprintf("eval: %s, %d tools %s: %v", s.Name, row.Tools, c.shape, fmtRecalls(row)))
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// toolshedIndex is the Toolshed searcher inside an engine, if it is one.
func toolshedIndex(e engine) (evalrun.Toolshed, bool) {
	s, ok := e.(searcher)
	if !ok {
		return evalrun.Toolshed{}, false
	}
	ts, ok := s.Searcher.(evalrun.Toolshed)
	return ts, ok
}

func fmtRecalls(r evalRow) string {
	var parts []string
	for _, e := range evalEngineOrder {
		if v, ok := r.Recall5[e]; ok {
			parts = append(parts, fmt.Sprintf("%s %.4f", e, v))
		}
	}
	return strings.Join(parts, ", ")
}

func evalTableOf(rows []evalRow, half evalrun.Half) table {
	t := table{head: []string{"set (" + string(half) + " half)", "tools", "distractors", "requests"}}
	var engs []string
	for _, e := range evalEngineOrder {
		if len(rows) > 0 {
			if _, ok := rows[0].Recall5[e]; ok {
				engs = append(engs, e)
			}
		}
	}
	for _, e := range engs {
		t.head = append(t.head, e+" recall@5")
	}
	hasTS, hasBleve := slices.Contains(engs, "Toolshed"), slices.Contains(engs, "bleve")
	if hasTS && hasBleve {
		t.head = append(t.head, "Toolshed − bleve", "p50 Toolshed", "p50 bleve", "speed-up")
	}
	if hasTS {
		t.head = append(t.head, "LLM list holds a correct tool: all", "keyword misses", "list: tools on lines (full)")
	}
	hasSem := hasTS && slices.ContainsFunc(rows, func(r evalRow) bool { return r.CandSem >= 0 })
	if hasSem {
		t.head = append(t.head, "with the semantic stage: all / keyword misses")
	}
	for _, r := range rows {
		shape := r.Shape
		if shape == "" {
			shape = "none (the set's own catalog)"
		}
		cells := []string{r.Set, thousands(r.Tools), shape, thousands(r.Queries)}
		best := ""
		for _, e := range engs {
			if best == "" || r.Recall5[e] > r.Recall5[best] {
				best = e
			}
		}
		for _, e := range engs {
			cells = append(cells, bold(f4(r.Recall5[e]), e == best))
		}
		if hasTS && hasBleve {
			d := 100 * (r.Recall5["Toolshed"] - r.Recall5["bleve"])
			cells = append(cells, fmt.Sprintf("%+.1f pt", d), fmtDur(r.P50["Toolshed"]), fmtDur(r.P50["bleve"]),
				ratio(float64(r.P50["bleve"])/float64(max(r.P50["Toolshed"], 1))))
		}
		if hasTS {
			list := "—"
			if r.CandMissed > 0 {
				list = fmt.Sprintf("%.0f on %.0f (%.0f)", r.CandTools, r.CandLines, r.CandFull)
			}
			cells = append(cells, f4(r.Cand), fmt.Sprintf("%s of %d", f4(r.CandMiss), r.CandMissed), list)
			if hasSem {
				sem := "—"
				if r.CandSem >= 0 {
					sem = fmt.Sprintf("%s / %s", f4(r.CandSem), f4(r.CandSemMiss))
				}
				cells = append(cells, sem)
			}
		}
		t.add(cells...)
	}
	return t
}

// printEval prints the table, and its rows as JSON Lines to jsonOut when
// it is not nil (for comparing runs).
func printEval(w io.Writer, rows []evalRow, half evalrun.Half, jsonOut io.Writer) {
	fmt.Fprintln(w, "== Tool search: recall@5 on every set and catalog size, Toolshed vs bleve vs naive BM25")
	evalTableOf(rows, half).text(w)
	if jsonOut != nil {
		enc := json.NewEncoder(jsonOut)
		for _, r := range rows {
			enc.Encode(r)
		}
	}
}

// parse reads the eval flags.
func (o *evalOptions) parse(half, sizes, shapes, weights, sets, engines string) error {
	h, ok := evalrun.ParseHalf(half)
	if !ok {
		return fmt.Errorf("-half %q: want tune, test or all", half)
	}
	o.half = h
	o.sizes = nil
	for _, f := range splitList(sizes) {
		var n int
		if _, err := fmt.Sscan(f, &n); err != nil || n <= 0 {
			return fmt.Errorf("-sizes: %q is not a size", f)
		}
		o.sizes = append(o.sizes, n)
	}
	o.shapes = nil
	for _, f := range splitList(shapes) {
		switch f {
		case "recombined":
			o.shapes = append(o.shapes, evalrun.Recombined)
		case "sentence":
			o.shapes = append(o.shapes, evalrun.Sentence)
		default:
			return fmt.Errorf("-shapes: no shape %q (recombined, sentence)", f)
		}
	}
	if weights != "" {
		w := search.DefaultWeights
		dec := json.NewDecoder(strings.NewReader(weights))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&w); err != nil {
			return fmt.Errorf("-weights: %w", err)
		}
		o.weights = &w
	}
	if l := splitList(sets); len(l) > 0 {
		o.sets = map[string]bool{}
		for _, s := range l {
			o.sets[s] = true
		}
	}
	if l := splitList(engines); len(l) > 0 {
		o.engines = map[string]bool{}
		for _, e := range l {
			if !slices.Contains(evalEngineOrder, e) {
				return fmt.Errorf("-engines: no engine %q (%s)", e, strings.Join(evalEngineOrder, ", "))
			}
			o.engines[e] = true
		}
	}
	return nil
}

func splitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
