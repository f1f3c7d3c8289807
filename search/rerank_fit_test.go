package search_test

import (
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/evalrun"
	"github.com/toolshed/toolshed/search"
)

// Fitting the re-rank's weights (rerank.go) on the tuning halves of the
// evaluation sets, never on the test halves (docs/SEARCH.md, "The
// protocol"):
//
//	go test -run '^TestFitRerank$' -v ./search -args -fit-rerank [-fit-eval DIR]
//
// prints the weights and, per set and catalog size, recall@5 on the
// tuning half of the base (-fit-base: the shipped ranking, or the plain
// score order) and with the fitted weights. -fit-hinge fits once per
// penalty for the points a cell loses beyond the rule's 0.5.
var (
	fitRerank = flag.Bool("fit-rerank", false, "fit the re-rank weights on the tuning halves")
	fitEval   = flag.String("fit-eval", "../../shared/eval", "a folder of labelled sets beside ../bench/testdata/eval")
	fitSizes  = flag.String("fit-sizes", "10000,30000", "padded catalog sizes")
	fitDepth  = flag.Int("fit-depth", 100, "how many tools per query the re-rank sees")
	fitShapes = flag.String("fit-shapes", "recombined,sentence", "distractor shapes of the padded catalogs")
	fitLoss   = flag.Float64("fit-loss", 3, "how much more a cell's loss counts than a gain")
	fitBase   = flag.String("fit-base", "default", "what the fit must beat: default (the shipped ranking, diversified top included) or bm25f (the plain score order)")
	fitHinge  = flag.String("fit-hinge", "0", "a further penalty per point a cell loses beyond 0.5 point against the base (the rule of docs/SEARCH.md); a comma-separated list fits once for each")
)

type fitQuery struct {
	names []string
	logS  []float64
	feats [][search.NumFeatures]float32
	right []bool
	want  int
	exact bool
	order []int
	base  float64 // recall@5 of the shipped ranking (Index.Search)
}

type fitCell struct {
	set   string
	tools int
	shape string
	qs    []fitQuery
}

func TestFitRerank(t *testing.T) {
	if !*fitRerank {
		t.Skip("fits the re-rank weights: -args -fit-rerank")
	}
	sets := loadFitSets(t)
	var sizes []int
	for _, s := range strings.Split(*fitSizes, ",") {
		var n int
		if _, err := fmt.Sscan(s, &n); err == nil && n > 0 {
			sizes = append(sizes, n)
		}
	}
	w0 := search.DefaultWeights
	w0.RerankDepth = *fitDepth // the features' data, with the re-rank's weights left as they are
	var cells []fitCell
	for _, s := range sets {
		qs := evalrun.Split(s.Queries, evalrun.Tune)
		cats := [][]manifest.Tool{s.Tools}
		caps := []int{1000}
		shapes := []string{""}
		if !s.Chinese {
			pool := evalrun.PadPool(s.Name, s.Queries, sets)
			for _, n := range sizes {
				for _, sh := range strings.Split(*fitShapes, ",") {
					shape := evalrun.Recombined
					if sh == "sentence" {
						shape = evalrun.Sentence
					}
					if n > len(s.Tools) {
						cats = append(cats, evalrun.Pad(s.Tools, pool, n, shape))
						caps = append(caps, 300)
						shapes = append(shapes, sh)
					}
				}
			}
		}
		for i, tools := range cats {
			sr, err := evalrun.BuildToolshed(tools, &search.Config{Weights: &w0})
			if err != nil {
				t.Fatal(err)
			}
			ix := sr.(evalrun.Toolshed).Index
			c := fitCell{set: s.Name, tools: len(tools), shape: shapes[i]}
			for _, q := range evalrun.Sample(qs, caps[i]) {
				names, scores, feats, exact := search.CandidateFeatures(ix, q.Query, *fitDepth)
				want := map[string]bool{}
				for _, x := range q.Tools {
					want[x] = true
				}
				fq := fitQuery{names: names, feats: feats, want: len(want), exact: exact}
				for j, n := range names {
					fq.right = append(fq.right, want[n])
					fq.logS = append(fq.logS, math.Log(max(scores[j], 1e-9)))
				}
				fq.order = make([]int, len(names))
				if res, err := ix.Search(q.Query, 5); err == nil && fq.want > 0 {
					found := 0
					for _, h := range res.Hits {
						if want[h.Name] {
							found++
						}
					}
					fq.base = float64(found) / float64(fq.want)
				}
				c.qs = append(c.qs, fq)
			}
			cells = append(cells, c)
			t.Logf("%s, %d tools: %d requests", c.set, c.tools, len(c.qs))
		}
	}
	var zero [search.NumFeatures]float64
	base := cellRecalls(cells, zero)
	if *fitBase == "default" {
		base = shippedRecalls(cells)
	}
	for _, hs := range strings.Split(*fitHinge, ",") {
		var hinge float64
		if _, err := fmt.Sscan(hs, &hinge); err != nil {
			t.Fatalf("-fit-hinge %q: %v", hs, err)
		}
		fitOnce(cells, base, hinge)
	}
}

// fitOnce fits the weights by coordinate ascent from zero and prints them
// with each cell's recall beside the base's.
func fitOnce(cells []fitCell, base []float64, hinge float64) {
	// The objective: the mean change over the cells, a loss counting
	// -fit-loss times more than a gain of the same size, and each point a
	// cell loses beyond the rule's 0.5 costing hinge more.
	objective := func(w [search.NumFeatures]float64) float64 {
		var s float64
		for i, r := range cellRecalls(cells, w) {
			d := r - base[i]
			if d < 0 {
				if d < -0.005 {
					s -= hinge * (-d - 0.005)
				}
				d *= 1 + *fitLoss
			}
			s += d
		}
		return s / float64(len(cells))
	}
	var w [search.NumFeatures]float64
	best := objective(w)
	for step := 1.0; step >= 0.05; step /= 2 {
		for improved := true; improved; {
			improved = false
			for k := range w {
				for _, d := range []float64{-step, step} {
					try := w
					try[k] += d
					if m := objective(try); m > best+1e-5 {
						best, w, improved = m, try, true
					}
				}
			}
		}
	}
	fitted := cellRecalls(cells, w)
	fmt.Printf("\nbase: %s, loss ×%g, hinge %g; weights (%s): %v\n", *fitBase, 1+*fitLoss, hinge, strings.Join(search.FeatureNames[:], ", "), w)
	fmt.Printf("%-18s %8s %-10s %8s %8s %7s\n", "set", "tools", "shape", "base", "fitted", "Δ pt")
	for i, c := range cells {
		fmt.Printf("%-18s %8d %-10s %8.4f %8.4f %+7.1f\n", c.set, c.tools, c.shape, base[i], fitted[i], 100*(fitted[i]-base[i]))
	}
	worst := 0.0
	for i := range cells {
		worst = min(worst, fitted[i]-base[i])
	}
	fmt.Printf("mean over %d cells: %.4f → %.4f; worst cell %+.1f points\n", len(cells), mean(base), mean(fitted), 100*worst)
}

// shippedRecalls is recall@5 per cell of the shipped ranking.
func shippedRecalls(cells []fitCell) []float64 {
	out := make([]float64, len(cells))
	for i, c := range cells {
		var sum float64
		for _, q := range c.qs {
			sum += q.base
		}
		out[i] = sum / float64(max(len(c.qs), 1))
	}
	return out
}

func mean(xs []float64) float64 {
	var s float64
	for _, x := range xs {
		s += x
	}
	return s / float64(max(len(xs), 1))
}

// cellRecalls is recall@5 per cell with the re-rank weights w.
func cellRecalls(cells []fitCell, w [search.NumFeatures]float64) []float64 {
	out := make([]float64, len(cells))
	key := make([]float64, 0, 512)
	for i, c := range cells {
		var sum float64
		for qi := range c.qs {
			q := &c.qs[qi]
			key = key[:0]
			for j := range q.names {
				z := q.logS[j]
				for k, wk := range w {
					z += wk * float64(q.feats[j][k])
				}
				key = append(key, z)
				q.order[j] = j
			}
			rest := q.order
			if q.exact && len(rest) > 0 {
				rest = rest[1:]
			}
			sort.SliceStable(rest, func(a, b int) bool {
				if key[rest[a]] != key[rest[b]] {
					return key[rest[a]] > key[rest[b]]
				}
				return q.names[rest[a]] < q.names[rest[b]]
			})
			found := 0
			for _, j := range q.order[:min(5, len(q.order))] {
				if q.right[j] {
					found++
				}
			}
			if q.want > 0 {
				sum += float64(found) / float64(q.want)
			}
		}
		out[i] = sum / float64(max(len(c.qs), 1))
	}
	return out
}

func loadFitSets(t *testing.T) []evalrun.NamedSet {
	var sets []evalrun.NamedSet
	seen := map[string]bool{}
	for _, root := range []string{*fitEval, "../bench/testdata/eval"} {
		ents, err := os.ReadDir(root)
		if err != nil {
			t.Logf("%s: %v (skipped)", root, err)
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
			sets = append(sets, readFitSet(t, e.Name(), dir))
			seen[e.Name()] = true
		}
	}
	sort.Slice(sets, func(i, j int) bool { return sets[i].Name < sets[j].Name })
	zh := readFitSet(t, "zh-eval", "testdata/zh-eval")
	zh.Chinese = true
	return append(sets, zh)
}

func readFitSet(t *testing.T, name, dir string) evalrun.NamedSet {
	tools, err := evalrun.ReadTools(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	qs, err := evalrun.ReadQueries(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	return evalrun.NamedSet{Name: name, Tools: tools, Queries: qs, Chinese: evalrun.MostlyChinese(qs)}
}
