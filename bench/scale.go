package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/toolshed/toolshed/bench/echo"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/internal/evalrun"
	"github.com/toolshed/toolshed/internal/names"
	"github.com/toolshed/toolshed/internal/procmem"
	"github.com/toolshed/toolshed/search"
)

// synthCatalog returns a catalog of n tools made from Seal-Tools
// (evalrun.Synth: the set, then recombined distractors).
var synthCatalog = evalrun.Synth

// scaleRow is one catalog size and engine.
type scaleRow struct {
	Tools   int
	Engine  string
	Build   time.Duration
	HeapMiB float64
	P50     time.Duration
	P99     time.Duration
	Recall5 float64 // on the Seal-Tools queries, when every set tool is in the catalog
	// Natural is recall@5 of natural requests (the natural sets' test
	// halves) over a catalog of this size made of their tools padded with
	// Seal-Tools' and distractors (-1: not measured).
	Natural float64
}

// scaleSearch measures each engine on catalogs of each size with the same
// queries (a sample of Seal-Tools' queries), and, where natural is not
// nil and the size holds its tools, on its requests over its own padded
// catalog.
func scaleSearch(seal, natural *dataset, sizes []int, queries int, engines []engineSpec, log func(string)) ([]scaleRow, error) {
	qs := sample(evalrun.Split(seal.Queries, evalrun.Test), queries)
	var nqs []query
	if natural != nil {
		nqs = sample(evalrun.Split(natural.Queries, evalrun.Test), queries)
	}
	var rows []scaleRow
	for _, n := range sizes {
		tools := synthCatalog(seal.Tools, n)
		var natTools []manifest.Tool
		if natural != nil && n >= len(natural.Tools) {
			natTools = evalrun.Pad(natural.Tools, seal.Tools, n, evalrun.Recombined)
		}
		for _, e := range engines {
			q, err := measure(e, tools, qs, false)
			if err != nil {
				return nil, err
			}
			row := scaleRow{Tools: n, Engine: e.name, Build: q.Build, HeapMiB: q.HeapMiB, P50: q.P50, P99: q.P99, Recall5: -1, Natural: -1}
			if n >= len(seal.Tools) {
				row.Recall5 = q.Recall5
			}
			if natTools != nil {
				nq, err := measure(e, natTools, nqs, false)
				if err != nil {
					return nil, err
				}
				row.Natural = nq.Recall5
			}
			log(fmt.Sprintf("scale: %d tools, %s: build %s, p50 %s", n, e.name, q.Build.Round(time.Millisecond), q.P50))
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// naturalSet merges the English sets of natural requests found in the
// folders (stabletoolbench and bfcl of the public sets, and every
// converted set in bench/testdata/eval but the Chinese ones) into one
// catalog and one list of requests; a tool whose folded name is already
// there is left out and the labels naming it are read as the first's.
// nil when none is found.
func naturalSet(dirs []string) (*dataset, error) {
	o := evalOptions{dirs: dirs}
	sets, err := loadEvalSets(o, func(string) {})
	if err != nil {
		return nil, err
	}
	out := &dataset{Name: "natural requests"}
	kept := map[string]string{} // folded name → the name kept
	for _, s := range sets {
		if s.Chinese || s.Name == "seal-tools" || s.Name == "metatool" {
			continue
		}
		for _, t := range s.Tools {
			k := names.Fold(t.Name)
			if _, dup := kept[k]; !dup {
				kept[k] = t.Name
				out.Tools = append(out.Tools, t)
			}
		}
		for _, q := range s.Queries {
			l := make([]string, len(q.Tools))
			for i, t := range q.Tools {
				l[i] = kept[names.Fold(t)]
			}
			out.Queries = append(out.Queries, query{Query: q.Query, Tools: l})
		}
	}
	if len(out.Tools) == 0 {
		return nil, nil
	}
	return out, nil
}

// sample takes n queries spread evenly over qs.
var sample = evalrun.Sample

// throughputRow is sessions per second for one kind of session.
type throughputRow struct {
	What        string
	Duration    time.Duration
	Workers     int
	Sessions    int
	PerSecond   float64
	P50, P99    time.Duration
	PoolHitRate float64 // -1 when no plugin is called
}

// sessions runs sessions from workers goroutines for d: each searches the
// Seal-Tools index (4,076 tools) with the next query, then, when call is
// set, opens a plugin session, calls the echo tool once and closes it.
// (The Seal-Tools tools have no code, so every session calls echo.) fresh
// turns snapshots off.
func sessions(e *echoPlugin, tmp string, seal *dataset, workers int, d time.Duration, call, fresh bool) (throughputRow, error) {
	ctx := context.Background()
	docs := make([]search.Document, len(seal.Tools))
	for i, t := range seal.Tools {
		docs[i] = catalog.Document(t, "seal")
	}
	ix, err := search.Build(docs, nil)
	if err != nil {
		return throughputRow{}, err
	}
	rt, err := newRuntime(tmp, 0, fresh)
	if err != nil {
		return throughputRow{}, err
	}
	defer rt.Close(ctx)
	p, err := rt.Plugin(e.tool.Plugin)
	if err != nil {
		return throughputRow{}, err
	}
	if err := p.Warm(ctx); err != nil {
		return throughputRow{}, err
	}
	waitInstances(rt, 2)
	args := json.RawMessage(echo.Example)
	var next atomic.Int64
	var failed atomic.Value
	lats := make([][]time.Duration, workers)
	stop := time.Now().Add(d)
	var wg sync.WaitGroup
	start := time.Now()
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for time.Now().Before(stop) {
				q := seal.Queries[int(next.Add(1))%len(seal.Queries)]
				t0 := time.Now()
				if _, err := ix.Search(q.Query, 5); err != nil {
					failed.Store(err)
					return
				}
				if call {
					s := rt.NewSession()
					_, err := s.Call(ctx, e.tool, args)
					s.Close(ctx)
					if err != nil {
						failed.Store(err)
						return
					}
				}
				lats[w] = append(lats[w], time.Since(t0))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	if err, _ := failed.Load().(error); err != nil {
		return throughputRow{}, err
	}
	var all []time.Duration
	for _, l := range lats {
		all = append(all, l...)
	}
	st := stats("", all)
	what := "search only"
	if call {
		what = "search + one plugin call"
	}
	if fresh {
		what += ", fresh instances"
	}
	row := throughputRow{What: what, Duration: elapsed, Workers: workers, Sessions: len(all), PerSecond: float64(len(all)) / elapsed.Seconds(), P50: st.P50, P99: st.P99, PoolHitRate: -1}
	if call {
		s := rt.Stats()
		row.PoolHitRate = float64(s.PoolHits) / float64(s.PoolHits+s.PoolMisses)
	}
	return row, nil
}

// memoryRow is what live sessions cost, each holding its instance.
type memoryRow struct {
	What           string // "" for the default instances
	Sessions       int
	HeapPerSession float64 // MiB of Go heap
	RSSPerSession  float64 // MiB of resident memory (Linux; -1 elsewhere)
	// PSSPerSession is MiB of proportional resident memory: a page
	// shared by k mappings counts 1/k in each (Linux; -1 elsewhere).
	// Restored instances share their snapshot's pages, which RSS counts
	// once per instance.
	PSSPerSession float64
}

func sessionMemory(e *echoPlugin, tmp string, n int, fresh bool) (memoryRow, error) {
	ctx := context.Background()
	rt, err := newRuntime(tmp, -1, fresh)
	if err != nil {
		return memoryRow{}, err
	}
	defer rt.Close(ctx)
	args := json.RawMessage(echo.Example)
	warm := rt.NewSession() // compile, and one instance, before measuring
	if _, err := warm.Call(ctx, e.tool, args); err != nil {
		return memoryRow{}, err
	}
	// Freed heap returned to the OS first, so that resident memory moves
	// with what the sessions hold, not with the collector's timing.
	debug.FreeOSMemory()
	h0, r0, p0 := heapInUse(), rss(), pss()
	open := make([]interface{ Close(context.Context) error }, 0, n)
	for i := 0; i < n; i++ {
		s := rt.NewSession()
		if _, err := s.Call(ctx, e.tool, args); err != nil {
			return memoryRow{}, err
		}
		open = append(open, s)
	}
	debug.FreeOSMemory()
	h1, r1, p1 := heapInUse(), rss(), pss()
	row := memoryRow{Sessions: n, HeapPerSession: (float64(h1) - float64(h0)) / float64(n) / (1 << 20), RSSPerSession: -1, PSSPerSession: -1}
	if fresh {
		row.What = "fresh instances"
	}
	if r0 > 0 && r1 > 0 {
		row.RSSPerSession = (float64(r1) - float64(r0)) / float64(n) / (1 << 20)
	}
	if p0 > 0 && p1 > 0 {
		row.PSSPerSession = (float64(p1) - float64(p0)) / float64(n) / (1 << 20)
	}
	for _, s := range open {
		s.Close(ctx)
	}
	warm.Close(ctx)
	runtime.KeepAlive(open)
	return row, nil
}

// pss is the proportional set size in bytes from /proc (0 where there is
// none).
func pss() uint64 { return procmem.PSS() }

// rss is the resident set size in bytes from /proc (0 where there is none).
func rss() uint64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b))
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseUint(f[1], 10, 64)
	return pages * uint64(os.Getpagesize())
}
