// Package evalrun measures tool search on a labelled data set: a catalog in
// JSON Lines (name, description, parameters, and optionally keywords and
// examples) and queries in JSON Lines (query, tools: the correct names).
//
// The catalog is indexed exactly as manifests are (catalog.Document), and a
// naive baseline (plain BM25 over name + description, whitespace and
// single-character tokens) can be run beside it in the same process.
package evalrun

import (
	"bufio"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime"
	"sort"
	"strings"
	"time"

	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/search"
)

// Query is one labelled query.
type Query struct {
	Query string   `json:"query"`
	Tools []string `json:"tools"`
}

// ReadTools reads a catalog in JSON Lines. Fields other than name,
// description, parameters, keywords and examples are ignored.
func ReadTools(path string) ([]manifest.Tool, error) {
	var out []manifest.Tool
	seen := map[string]int{}
	err := eachLine(path, func(line int, data []byte) error {
		var t manifest.Tool
		if err := json.Unmarshal(data, &t); err != nil {
			return err
		}
		if t.Name == "" {
			return fmt.Errorf("no name")
		}
		if prev, dup := seen[t.Name]; dup {
			return fmt.Errorf("tool %q already defined on line %d", t.Name, prev)
		}
		seen[t.Name] = line
		out = append(out, t)
		return nil
	})
	return out, err
}

// ReadQueries reads labelled queries in JSON Lines.
func ReadQueries(path string) ([]Query, error) {
	var out []Query
	err := eachLine(path, func(line int, data []byte) error {
		var q Query
		if err := json.Unmarshal(data, &q); err != nil {
			return err
		}
		if strings.TrimSpace(q.Query) == "" || len(q.Tools) == 0 {
			return fmt.Errorf("want a query and at least one correct tool")
		}
		out = append(out, q)
		return nil
	})
	return out, err
}

func eachLine(path string, fn func(line int, data []byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	n := 0
	for sc.Scan() {
		n++
		b := sc.Bytes()
		if len(strings.TrimSpace(string(b))) == 0 {
			continue
		}
		if err := fn(n, b); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		return fmt.Errorf("%s:%d: %w", path, n+1, err)
	}
	return nil
}

// Searcher is what an evaluation runs: a ranked list of tool names.
type Searcher interface {
	Top(query string, k int) []string
}

// Report holds the figures of one run.
type Report struct {
	Engine   string             `json:"engine"`
	Tools    int                `json:"tools"`
	Queries  int                `json:"queries"`
	Recall   map[string]float64 `json:"recall"`    // "1","5","10": mean share of the correct tools in the top k
	Hit      map[string]float64 `json:"hit"`       // "1","5": share of queries with any correct tool in the top k
	AllFound float64            `json:"all_found"` // share of queries with every correct tool in the top 10
	MRR      float64            `json:"mrr"`       // mean reciprocal rank of the first correct tool (top 10)
	// Found5 is the mean number of tools a search of 5 returns (what
	// tool_search would discover); Precision5 the mean share of them that
	// are correct.
	Found5     float64    `json:"found5"`
	Precision5 float64    `json:"precision5"`
	IndexMS    float64    `json:"index_ms"`
	HeapMB     float64    `json:"heap_mb"` // live heap growth from building the index
	QueryUSP50 float64    `json:"query_us_p50"`
	QueryUSP99 float64    `json:"query_us_p99"`
	PerQuery   []PerQuery `json:"per_query,omitempty"`
}

// PerQuery is one query's outcome.
type PerQuery struct {
	Query    string   `json:"query"`
	Expected []string `json:"expected"`
	Got      []string `json:"got"`
}

// HeapInUse returns the live heap after a full collection.
func HeapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// Build times and measures building a searcher.
func Build(build func() (Searcher, error)) (Searcher, time.Duration, float64, error) {
	h0 := HeapInUse()
	start := time.Now()
	s, err := build()
	d := time.Since(start)
	if err != nil {
		return nil, d, 0, err
	}
	h1 := HeapInUse()
	runtime.KeepAlive(s)
	heap := (float64(h1) - float64(h0)) / (1 << 20)
	if heap < 0 {
		heap = 0
	}
	return s, d, heap, nil
}

// Run evaluates s on the queries. Each query is run twice; the second run
// is timed, so one-time costs (a dictionary load) are not counted as query
// latency.
func Run(s Searcher, queries []Query) Report {
	r := Report{Queries: len(queries), Recall: map[string]float64{}, Hit: map[string]float64{}}
	lat := make([]float64, len(queries))
	for i, q := range queries {
		s.Top(q.Query, 10)
		start := time.Now()
		got := s.Top(q.Query, 10)
		lat[i] = float64(time.Since(start).Nanoseconds()) / 1e3
		want := map[string]bool{}
		for _, t := range q.Tools {
			want[t] = true
		}
		for _, k := range []int{1, 5, 10} {
			found := 0
			for j := 0; j < k && j < len(got); j++ {
				if want[got[j]] {
					found++
				}
			}
			r.Recall[fmt.Sprint(k)] += float64(found) / float64(len(want))
			if k <= 5 && found > 0 {
				r.Hit[fmt.Sprint(k)]++
			}
			if k == 10 && found == len(want) {
				r.AllFound++
			}
		}
		top5 := got[:min(5, len(got))]
		r.Found5 += float64(len(top5))
		if len(top5) > 0 {
			right := 0
			for _, g := range top5 {
				if want[g] {
					right++
				}
			}
			r.Precision5 += float64(right) / float64(len(top5))
		}
		for j, g := range got {
			if want[g] {
				r.MRR += 1 / float64(j+1)
				break
			}
		}
		r.PerQuery = append(r.PerQuery, PerQuery{Query: q.Query, Expected: q.Tools, Got: got})
	}
	n := float64(len(queries))
	if n == 0 {
		n = 1
	}
	for k := range r.Recall {
		r.Recall[k] = round(r.Recall[k] / n)
	}
	for k := range r.Hit {
		r.Hit[k] = round(r.Hit[k] / n)
	}
	if _, ok := r.Hit["1"]; !ok {
		r.Hit["1"] = 0
	}
	if _, ok := r.Hit["5"]; !ok {
		r.Hit["5"] = 0
	}
	r.AllFound = round(r.AllFound / n)
	r.MRR = round(r.MRR / n)
	r.Found5, r.Precision5 = round(r.Found5/n), round(r.Precision5/n)
	sort.Float64s(lat)
	r.QueryUSP50 = round(percentile(lat, 0.50))
	r.QueryUSP99 = round(percentile(lat, 0.99))
	return r
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	if i < 0 {
		i = 0
	}
	return sorted[i]
}

func round(f float64) float64 { return math.Round(f*1e4) / 1e4 }

// Toolshed is the searcher over a Toolshed index.
type Toolshed struct {
	Index *search.Index
	// Cut applies search.Cut with this ratio to the hits (0: none), as
	// tool_search does when the model gives no limit.
	Cut float64
}

// Top returns the names of the best k tools.
func (t Toolshed) Top(q string, k int) []string {
	res, err := t.Index.Search(q, k)
	if err != nil {
		return nil
	}
	res.Hits = search.Cut(res.Hits, t.Cut)
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.Name
	}
	return out
}

// BuildToolshed indexes tools as the catalog indexes manifests.
func BuildToolshed(tools []manifest.Tool, cfg *search.Config) (Searcher, error) {
	return BuildToolshedCut(tools, cfg, 0)
}

// BuildToolshedCut is BuildToolshed with the relevance cut at ratio.
func BuildToolshedCut(tools []manifest.Tool, cfg *search.Config, ratio float64) (Searcher, error) {
	docs := make([]search.Document, len(tools))
	for i, t := range tools {
		docs[i] = catalog.Document(t, "eval")
	}
	ix, err := search.Build(docs, cfg)
	if err != nil {
		return nil, err
	}
	return Toolshed{Index: ix, Cut: ratio}, nil
}
