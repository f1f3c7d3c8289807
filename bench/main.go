// Command bench measures Toolshed against its peers, every side in the
// same run on the same data, and writes the report (docs/BENCHMARKS.md and
// its charts):
//
//  1. search: Toolshed's keyword search against bleve (BM25, its English
//     and CJK analyzers) and a naive BM25 on Seal-Tools, MetaTool and the
//     Chinese set;
//  2. context saved: tool-definition tokens per round with every tool
//     always on against Toolshed's tiers, for catalogs of 10 to 4,076
//     tools;
//  3. plugin call cost: the same tool logic natively, in a warm wasm
//     instance, as a session's first call, and as a process per call;
//  4. scale: sessions per second, memory per session, and search latency
//     from 100 to 100,000 tools;
//  5. hot reload latency (the catalog package's own test);
//  6. eval: every labelled set at its own size and padded to 5,000 -
//     100,000 tools, on the test half of its requests, Toolshed beside
//     bleve and the naive BM25 (`make eval` runs this section alone).
//
// It lives in its own module so that the peers it compares against never
// enter Toolshed's. Run it with `make bench` (or `go run .` here).
package main

import (
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/toolshed/toolshed/internal/evalrun"
)

type options struct {
	evalDir  string // Seal-Tools and MetaTool
	zhDir    string // the Chinese set
	docs     string // where the report and charts go ("" : print only)
	quick    bool   // small samples, for tests
	only     map[string]bool
	scaleMax int
	eval     evalOptions
	evalJSON string // write the eval rows here as JSON Lines
}

// sections of the suite, in order.
var sections = []string{"search", "context", "calls", "scale", "reload", "eval"}

func (o options) runs(section string) bool { return len(o.only) == 0 || o.only[section] }

func main() {
	var o options
	flag.StringVar(&o.evalDir, "eval", "../../shared/eval", "directory with seal-tools/ and metatool/ (tools.jsonl, queries.jsonl)")
	flag.StringVar(&o.zhDir, "zh", "../search/testdata/zh-eval", "the Chinese evaluation set")
	flag.StringVar(&o.docs, "docs", "../docs", "write BENCHMARKS.md and the charts here (empty: print the tables only)")
	flag.BoolVar(&o.quick, "quick", false, "small samples (a smoke test, not for the report)")
	only := flag.String("only", "", "run only these sections, comma-separated ("+strings.Join(sections, ", ")+"); implies -docs ''")
	flag.IntVar(&o.scaleMax, "scale-max", 100_000, "largest synthetic catalog")
	extraSets := flag.String("sets-dir", "testdata/eval", "more sets (each a folder with tools.jsonl, queries.jsonl), beside -eval's")
	half := flag.String("half", "test", "eval: the half of each set's requests to measure (tune, test or all; docs/SEARCH.md)")
	sizes := flag.String("sizes", "5000,10000,30000,100000", "eval: padded catalog sizes, comma-separated (empty: none)")
	shapes := flag.String("shapes", "recombined", "eval: distractor shapes, comma-separated (recombined, sentence)")
	weights := flag.String("weights", "", "eval: search.Weights as JSON over the defaults (for tuning, on the tune half)")
	onlySets := flag.String("sets", "", "eval: only these sets, comma-separated")
	engines := flag.String("engines", "", "eval: only these engines, comma-separated (Toolshed, bleve, naive BM25)")
	flag.IntVar(&o.eval.native, "native-max", 2000, "eval: at most this many requests per set on its own catalog (0: all)")
	flag.IntVar(&o.eval.padded, "padded-max", 300, "eval: at most this many requests per set on a padded catalog")
	flag.StringVar(&o.evalJSON, "eval-json", "", "eval: also write the rows as JSON Lines to this file")
	embedURL := flag.String("embed", "", "eval: an OpenAI-compatible embeddings API (base URL, e.g. http://127.0.0.1:8090/v1) for the candidate list's semantic stage; several, comma-separated, share the work")
	embedModel := flag.String("embed-model", "universal-sentence-encoder-lite", "eval: the -embed model")
	embedCache := flag.String("embed-cache", ".cache/embeddings.bin", "eval: the -embed vectors are kept in this file across runs")
	flag.Parse()
	o.eval.dirs = []string{*extraSets}
	if *embedURL != "" {
		e, err := newDiskEmbedder(strings.Split(*embedURL, ","), *embedModel, *embedCache)
		if err != nil {
			fmt.Fprintln(os.Stderr, "bench: -embed-cache:", err)
			os.Exit(2)
		}
		o.eval.embedder = e
	}
	if err := o.eval.parse(*half, *sizes, *shapes, *weights, *onlySets, *engines); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(2)
	}
	if *only != "" {
		o.only, o.docs = map[string]bool{}, ""
		for _, s := range strings.Split(*only, ",") {
			if !slices.Contains(sections, s) {
				fmt.Fprintf(os.Stderr, "bench: no section %q (%s)\n", s, strings.Join(sections, ", "))
				os.Exit(2)
			}
			o.only[s] = true
		}
	}
	if err := run(o, os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// results are every figure of one run.
type results struct {
	Machine machine
	Started time.Time
	Elapsed time.Duration
	Quick   bool
	Search  []setResult
	Context []contextRow
	Calls   []callRow
	Through []throughputRow
	Memory  memoryRow
	// MemoryFresh is Memory with snapshots off (each instance initialised
	// from scratch), measured in the same run.
	MemoryFresh memoryRow
	Scale       []scaleRow
	Reload      reloadResult
	EvalPath    string
	Eval        []evalRow
	EvalHalf    evalrun.Half
}

type setResult struct {
	Name    string
	Tools   int
	Queries int
	Rows    []quality // Toolshed first
}

func run(o options, out io.Writer) error {
	r := &results{Started: time.Now(), Quick: o.quick, Machine: describeMachine()}
	logf := func(format string, args ...any) {
		fmt.Fprintf(os.Stderr, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05")}, args...)...)
	}
	moduleDir, err := os.Getwd()
	if err != nil {
		return err
	}
	tmp, err := os.MkdirTemp("", "toolshed-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(tmp)

	// The data sets: all three for search; Seal-Tools for the rest.
	sets := []struct {
		name, dir string
		zh        bool
	}{
		{"Seal-Tools", filepath.Join(o.evalDir, "seal-tools"), false},
		{"MetaTool", filepath.Join(o.evalDir, "metatool"), false},
		{"Chinese set", o.zhDir, true},
	}
	var data []*dataset
	for _, s := range sets {
		if !o.runs("search") && (s.name != "Seal-Tools" || !(o.runs("context") || o.runs("calls") || o.runs("scale"))) {
			continue
		}
		d, err := readDataset(s.name, s.dir, s.zh)
		if err != nil {
			return fmt.Errorf("%s: %w (set -eval DIR)", s.name, err)
		}
		data = append(data, d)
	}
	var seal *dataset
	if len(data) > 0 {
		seal = data[0]
	}

	// 1. Search quality and speed.
	if o.runs("search") {
		for _, d := range data {
			qs := evalrun.Split(d.Queries, evalrun.Test) // figures are reported on test halves (docs/SEARCH.md)
			if o.quick {
				qs = sample(qs, 100)
			}
			sr := setResult{Name: d.Name, Tools: len(d.Tools), Queries: len(qs)}
			for _, e := range []engineSpec{toolshedEngine(), bleveEngine(false), bleveEngine(true), baselineEngine()} {
				logf("search: %s, %s", d.Name, e.name)
				q, err := measure(e, d.Tools, qs, d.Chinese)
				if err != nil {
					return err
				}
				sr.Rows = append(sr.Rows, q)
			}
			r.Search = append(r.Search, sr)
		}
		printSearch(out, r.Search)
	}

	// 2. Context saved.
	if o.runs("context") {
		logf("context: tool-definition tokens")
		sizes := []int{10, 50, 200, len(seal.Tools)}
		for _, builtIns := range []bool{true, false} {
			rows, err := contextSaved(seal, sizes, builtIns)
			if err != nil {
				return fmt.Errorf("context: %w", err)
			}
			r.Context = append(r.Context, rows...)
		}
		printContext(out, r.Context)
	}

	// 3. Plugin call cost.
	var echo *echoPlugin
	if o.runs("calls") || o.runs("scale") {
		logf("calls: building the echo tool")
		if echo, err = buildEcho(moduleDir, tmp); err != nil {
			return err
		}
	}
	if o.runs("calls") {
		n := 400
		if o.quick {
			n = 40
		}
		logf("calls: %d calls each way", n)
		if r.Calls, err = callCost(echo, tmp, n); err != nil {
			return fmt.Errorf("calls: %w", err)
		}
		printCalls(out, r.Calls)
	}

	// 4. Scale.
	if o.runs("scale") {
		d := 10 * time.Second
		if o.quick {
			d = time.Second
		}
		// Rows 0 and 1 as before; row 2 is row 1 with snapshots off.
		for _, c := range []struct{ call, fresh bool }{{false, false}, {true, false}, {true, true}} {
			logf("scale: sessions for %s (plugin call: %v, fresh instances: %v)", d, c.call, c.fresh)
			row, err := sessions(echo, tmp, seal, 2*runtime.GOMAXPROCS(0), d, c.call, c.fresh)
			if err != nil {
				return fmt.Errorf("sessions: %w", err)
			}
			r.Through = append(r.Through, row)
		}
		logf("scale: memory per session")
		if r.Memory, err = sessionMemory(echo, tmp, 50, false); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		if r.MemoryFresh, err = sessionMemory(echo, tmp, 50, true); err != nil {
			return fmt.Errorf("memory: %w", err)
		}
		scaleSizes := []int{100, 1_000, len(seal.Tools), 10_000, 30_000, 100_000}
		scaleQueries := 400
		if o.quick {
			scaleSizes, scaleQueries = []int{100, len(seal.Tools), 10_000}, 50
		}
		var ss []int
		for _, s := range scaleSizes {
			if s <= o.scaleMax {
				ss = append(ss, s)
			}
		}
		engines := []engineSpec{toolshedEngine(), bleveEngine(false), baselineEngine()}
		natural, err := naturalSet(append([]string{o.evalDir}, o.eval.dirs...))
		if err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		if r.Scale, err = scaleSearch(seal, natural, ss, scaleQueries, engines, func(s string) { logf("%s", s) }); err != nil {
			return fmt.Errorf("scale: %w", err)
		}
		printScale(out, r.Through, []memoryRow{r.Memory, r.MemoryFresh}, r.Scale)
	}

	// 5. Hot reload.
	if o.runs("reload") {
		logf("reload: go test ./host/catalog")
		r.Reload = reloadLatency(filepath.Dir(moduleDir), 100)
		printReload(out, r.Reload)
	}
	// 6. The evaluation table.
	if o.runs("eval") {
		eo := o.eval
		eo.dirs, eo.zhDir = append([]string{o.evalDir}, eo.dirs...), o.zhDir
		if o.quick {
			eo.native, eo.padded, eo.sizes = 100, 50, []int{10_000}
		}
		rows, err := evalTable(eo, func(s string) { logf("%s", s) })
		if err != nil {
			return fmt.Errorf("eval: %w", err)
		}
		r.Eval, r.EvalHalf = rows, eo.half
		var jw io.Writer
		if o.evalJSON != "" {
			f, err := os.Create(o.evalJSON)
			if err != nil {
				return err
			}
			defer f.Close()
			jw = f
		}
		printEval(out, rows, eo.half, jw)
	}
	r.Elapsed = time.Since(r.Started)
	if o.docs == "" {
		return nil
	}
	return writeReport(o.docs, r)
}
