package main

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

// query is one labelled query: the request and the names of its correct
// tools.
type query struct {
	Query string   `json:"query"`
	Tools []string `json:"tools"`
}

// dataset is a catalog and its labelled queries.
type dataset struct {
	Name    string
	Tools   []manifest.Tool
	Queries []query
	Chinese bool // the catalog or the queries are Chinese: bleve gets its CJK analyzer
}

// readDataset reads tools.jsonl and queries.jsonl from dir, in the format
// of `toolshed eval` (docs/SEARCH.md).
func readDataset(name, dir string, chinese bool) (*dataset, error) {
	d := &dataset{Name: name, Chinese: chinese}
	seen := map[string]bool{}
	err := eachLine(dir+"/tools.jsonl", func(b []byte) error {
		var t manifest.Tool
		if err := json.Unmarshal(b, &t); err != nil {
			return err
		}
		if t.Name == "" || seen[t.Name] {
			return fmt.Errorf("tool name %q empty or repeated", t.Name)
		}
		seen[t.Name] = true
		d.Tools = append(d.Tools, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	err = eachLine(dir+"/queries.jsonl", func(b []byte) error {
		var q query
		if err := json.Unmarshal(b, &q); err != nil {
			return err
		}
		if strings.TrimSpace(q.Query) == "" || len(q.Tools) == 0 {
			return fmt.Errorf("want a query and at least one correct tool")
		}
		d.Queries = append(d.Queries, q)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

func eachLine(path string, fn func([]byte) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		if len(strings.TrimSpace(sc.Text())) == 0 {
			continue
		}
		if err := fn(sc.Bytes()); err != nil {
			return fmt.Errorf("%s:%d: %w", path, n, err)
		}
	}
	return sc.Err()
}

// engine ranks tool names for a query.
type engine interface {
	top(q string, k int) []string
}

// engineSpec names an engine and builds it over a catalog.
type engineSpec struct {
	name  string
	build func(tools []manifest.Tool, chinese bool) (engine, error)
}

func toolshedEngine() engineSpec {
	return engineSpec{"Toolshed", func(tools []manifest.Tool, _ bool) (engine, error) {
		docs := make([]search.Document, len(tools))
		for i, t := range tools {
			docs[i] = catalog.Document(t, "bench")
		}
		ix, err := search.Build(docs, nil)
		if err != nil {
			return nil, err
		}
		return toolshed{ix}, nil
	}}
}

type toolshed struct{ ix *search.Index }

func (t toolshed) top(q string, k int) []string {
	res, err := t.ix.Search(q, k)
	if err != nil {
		return nil
	}
	out := make([]string, len(res.Hits))
	for i, h := range res.Hits {
		out[i] = h.Name
	}
	return out
}

// quality is one engine's figures on one set.
type quality struct {
	Engine            string
	Recall5, Recall10 float64
	Hit5, MRR         float64
	Build             time.Duration
	HeapMiB           float64
	P50, P99          time.Duration
	Queries, Tools    int
}

// heapInUse is the live heap after two full collections.
func heapInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// measure builds an engine (timing it and the live heap it adds) and runs
// every query twice, timing the second run so one-time costs are not
// counted as query latency. Ranks are read from the top 10.
func measure(spec engineSpec, tools []manifest.Tool, queries []query, chinese bool) (quality, error) {
	q := quality{Engine: spec.name, Queries: len(queries), Tools: len(tools)}
	h0 := heapInUse()
	start := time.Now()
	e, err := spec.build(tools, chinese)
	q.Build = time.Since(start)
	if err != nil {
		return q, fmt.Errorf("%s: %w", spec.name, err)
	}
	q.HeapMiB = max(0, (float64(heapInUse())-float64(h0))/(1<<20))
	lat := make([]float64, len(queries))
	for i, qu := range queries {
		e.top(qu.Query, 10)
		t0 := time.Now()
		got := e.top(qu.Query, 10)
		d := time.Since(t0)
		lat[i] = float64(d)
		want := map[string]bool{}
		for _, t := range qu.Tools {
			want[t] = true
		}
		found5, found10 := 0, 0
		first := 0
		for j, g := range got {
			if !want[g] {
				continue
			}
			if first == 0 {
				first = j + 1
			}
			if j < 5 {
				found5++
			}
			found10++
		}
		q.Recall5 += float64(found5) / float64(len(want))
		q.Recall10 += float64(found10) / float64(len(want))
		if found5 > 0 {
			q.Hit5++
		}
		if first > 0 {
			q.MRR += 1 / float64(first)
		}
	}
	n := math.Max(1, float64(len(queries)))
	q.Recall5 /= n
	q.Recall10 /= n
	q.Hit5 /= n
	q.MRR /= n
	sort.Float64s(lat)
	q.P50 = time.Duration(percentile(lat, 0.50))
	q.P99 = time.Duration(percentile(lat, 0.99))
	runtime.KeepAlive(e)
	return q, nil
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}
