package main

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"

	"github.com/toolshed/toolshed/bench/echo"
	"github.com/toolshed/toolshed/host/catalog"
	"github.com/toolshed/toolshed/host/manifest"
	"github.com/toolshed/toolshed/search"
)

// synthCatalog returns a catalog of n tools made from Seal-Tools. Up to
// the set's size it is the set's first n tools; past it, the whole set
// plus tools recombined from two of its entries: the first's name with
// the second's last name word and a number, both descriptions, both
// parameter lists. The same n gives the same catalog.
func synthCatalog(seal []manifest.Tool, n int) []manifest.Tool {
	if n <= len(seal) {
		return seal[:n]
	}
	out := append(make([]manifest.Tool, 0, n), seal...)
	r := rand.New(rand.NewPCG(1, uint64(n)))
	for i := len(seal); i < n; i++ {
		a, b := seal[r.IntN(len(seal))], seal[r.IntN(len(seal))]
		t := manifest.Tool{
			Name:        a.Name + lastWord(b.Name) + strconv.Itoa(i),
			Description: a.Description + ". " + b.Description,
			Parameters:  mergeParams(a.Parameters, b.Parameters),
		}
		out = append(out, t)
	}
	return out
}

// lastWord is the last camelCase word of a name, capitalised.
func lastWord(name string) string {
	i := strings.LastIndexFunc(name, unicode.IsUpper)
	if i < 0 {
		i = 0
	}
	w := []rune(name[i:])
	if len(w) > 0 {
		w[0] = unicode.ToUpper(w[0])
	}
	return string(w)
}

// mergeParams joins two object schemas' properties.
func mergeParams(a, b json.RawMessage) json.RawMessage {
	type schema struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
	}
	var sa, sb schema
	json.Unmarshal(a, &sa)
	json.Unmarshal(b, &sb)
	m := schema{Type: "object", Properties: map[string]json.RawMessage{}}
	for k, v := range sb.Properties {
		m.Properties[k] = v
	}
	for k, v := range sa.Properties {
		m.Properties[k] = v
	}
	out, _ := json.Marshal(m)
	return out
}

// scaleRow is one catalog size and engine.
type scaleRow struct {
	Tools   int
	Engine  string
	Build   time.Duration
	HeapMiB float64
	P50     time.Duration
	P99     time.Duration
	Recall5 float64 // on the Seal-Tools queries, when every set tool is in the catalog
}

// scaleSearch measures each engine on catalogs of each size with the same
// queries (a sample of Seal-Tools' queries).
func scaleSearch(seal *dataset, sizes []int, queries int, engines []engineSpec, log func(string)) ([]scaleRow, error) {
	qs := sample(seal.Queries, queries)
	var rows []scaleRow
	for _, n := range sizes {
		tools := synthCatalog(seal.Tools, n)
		for _, e := range engines {
			q, err := measure(e, tools, qs, false)
			if err != nil {
				return nil, err
			}
			row := scaleRow{Tools: n, Engine: e.name, Build: q.Build, HeapMiB: q.HeapMiB, P50: q.P50, P99: q.P99, Recall5: -1}
			if n >= len(seal.Tools) {
				row.Recall5 = q.Recall5
			}
			log(fmt.Sprintf("scale: %d tools, %s: build %s, p50 %s", n, e.name, q.Build.Round(time.Millisecond), q.P50))
			rows = append(rows, row)
		}
	}
	return rows, nil
}

// sample takes n queries spread evenly over qs.
func sample(qs []query, n int) []query {
	if n >= len(qs) {
		return qs
	}
	out := make([]query, n)
	for i := range out {
		out[i] = qs[i*len(qs)/n]
	}
	return out
}

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
// (The Seal-Tools tools have no code, so every session calls echo.)
func sessions(e *echoPlugin, tmp string, seal *dataset, workers int, d time.Duration, call bool) (throughputRow, error) {
	ctx := context.Background()
	docs := make([]search.Document, len(seal.Tools))
	for i, t := range seal.Tools {
		docs[i] = catalog.Document(t, "seal")
	}
	ix, err := search.Build(docs, nil)
	if err != nil {
		return throughputRow{}, err
	}
	rt, err := newRuntime(tmp, 0)
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
	row := throughputRow{What: what, Duration: elapsed, Workers: workers, Sessions: len(all), PerSecond: float64(len(all)) / elapsed.Seconds(), P50: st.P50, P99: st.P99, PoolHitRate: -1}
	if call {
		s := rt.Stats()
		row.PoolHitRate = float64(s.PoolHits) / float64(s.PoolHits+s.PoolMisses)
	}
	return row, nil
}

// memoryRow is what live sessions cost, each holding its instance.
type memoryRow struct {
	Sessions       int
	HeapPerSession float64 // MiB of Go heap
	RSSPerSession  float64 // MiB of resident memory (Linux; -1 elsewhere)
}

func sessionMemory(e *echoPlugin, tmp string, n int) (memoryRow, error) {
	ctx := context.Background()
	rt, err := newRuntime(tmp, -1)
	if err != nil {
		return memoryRow{}, err
	}
	defer rt.Close(ctx)
	args := json.RawMessage(echo.Example)
	warm := rt.NewSession() // compile, and one instance, before measuring
	if _, err := warm.Call(ctx, e.tool, args); err != nil {
		return memoryRow{}, err
	}
	h0, r0 := heapInUse(), rss()
	open := make([]interface{ Close(context.Context) error }, 0, n)
	for i := 0; i < n; i++ {
		s := rt.NewSession()
		if _, err := s.Call(ctx, e.tool, args); err != nil {
			return memoryRow{}, err
		}
		open = append(open, s)
	}
	h1, r1 := heapInUse(), rss()
	row := memoryRow{Sessions: n, HeapPerSession: (float64(h1) - float64(h0)) / float64(n) / (1 << 20), RSSPerSession: -1}
	if r0 > 0 && r1 > 0 {
		row.RSSPerSession = (float64(r1) - float64(r0)) / float64(n) / (1 << 20)
	}
	for _, s := range open {
		s.Close(ctx)
	}
	warm.Close(ctx)
	runtime.KeepAlive(open)
	return row, nil
}

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
