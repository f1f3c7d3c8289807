package main

import (
	"fmt"
	"math"
	"runtime"
	"sort"
	"time"

	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/evalrun"
)

// query is one labelled query: the request and the names of its correct
// tools.
type query = evalrun.Query

// dataset is a catalog and its labelled queries; Chinese ones get bleve's
// CJK analyzer.
type dataset = evalrun.NamedSet

// readDataset reads tools.jsonl and queries.jsonl from dir, in the format
// of `toolshed eval` (docs/SEARCH.md), with its readers.
func readDataset(name, dir string, chinese bool) (*dataset, error) {
	tools, err := evalrun.ReadTools(dir + "/tools.jsonl")
	if err != nil {
		return nil, err
	}
	qs, err := evalrun.ReadQueries(dir + "/queries.jsonl")
	if err != nil {
		return nil, err
	}
	return &dataset{Name: name, Tools: tools, Queries: qs, Chinese: chinese}, nil
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
		s, err := evalrun.BuildToolshed(tools, nil)
		if err != nil {
			return nil, err
		}
		return searcher{s}, nil
	}}
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

// heapInUse is the live heap after full collections.
var heapInUse = evalrun.HeapInUse

// measure builds an engine (timing it and the live heap it adds) and runs
// every query twice, timing the second run so one-time costs are not
// counted as query latency. Ranks are read from the top 10.
func measure(spec engineSpec, tools []manifest.Tool, queries []query, chinese bool) (quality, error) {
	q, _, err := measureEngine(spec, tools, queries, chinese)
	return q, err
}

// measureEngine is measure, and also returns the engine it built.
func measureEngine(spec engineSpec, tools []manifest.Tool, queries []query, chinese bool) (quality, engine, error) {
	q := quality{Engine: spec.name, Queries: len(queries), Tools: len(tools)}
	h0 := heapInUse()
	start := time.Now()
	e, err := spec.build(tools, chinese)
	q.Build = time.Since(start)
	if err != nil {
		return q, nil, fmt.Errorf("%s: %w", spec.name, err)
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
	return q, e, nil
}

func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(math.Ceil(p*float64(len(sorted)))) - 1
	return sorted[max(i, 0)]
}
